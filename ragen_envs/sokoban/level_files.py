"""Level sets: Sokoban levels read from files (Boxoban, XSB/``.sok`` collections, standard notation).

A level set is a file, or a directory of such files (``*.txt``, ``*.xsb``, ``*.sok``, in name order),
read as one list of levels. Every level leaves here with a certificate, exactly as a generated one:
levels are solved on load, and the certificates are cached in a JSON file keyed by the level file's
SHA-256, written next to the file (``000.txt.certificates.json``) or, where that directory is
read-only, in the user's cache directory; where neither can be written there is simply no cache (a
caller that must not write beside the files, such as a server, names its own ``cache_dir``). A
cached certificate is replayed before it is trusted, so a stale or edited cache cannot hand out a
wrong solution.

Reading a file: a line holding a ``#`` is a row of a level (standard notation: ``#`` wall, ``@``
player, ``+`` player on goal, ``$`` box, ``*`` box on goal, ``.`` goal, space, ``-`` or ``_`` floor);
any other line (a blank line, a ``;`` comment such as Boxoban's ``; 17`` header, a ``Title:`` line)
ends the level being read. So Boxoban files, most XSB collections and files written by
:func:`~ragen_envs.sokoban.format_boxoban` read alike. Levels are numbered from 0 in file order; an
error names the file, the level number and the line where that level starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragen_envs.sokoban.level import SokobanCertificate, SokobanLevel
from ragen_envs.sokoban.notation import parse_level
from ragen_envs.sokoban.room import action_offsets
from ragen_envs.sokoban.solver import SolveStatus, solve

#: File name endings read from a level directory.
LEVEL_FILE_SUFFIXES: tuple[str, ...] = (".txt", ".xsb", ".sok")
#: Appended to a level file's name to name its certificate file.
CERTIFICATES_SUFFIX = ".certificates.json"
#: States the solver may expand per level before the level is refused as too hard to certify.
SOLVER_MAX_NODES = 2_000_000
_CACHE_FORMAT = "ragen-sokoban-certificates-v1"
#: Level sets kept in memory per process (the most recently loaded ones).
MAX_SETS_KEPT = 8
_load_lock = threading.Lock()
_digest_lock = threading.Lock()
_digests: dict[tuple[str, int, int], str] = {}
_loaded: dict[tuple[str, str, int | None], LevelSet] = {}


class LevelFileError(ValueError):
    """A level file (or one level in it) cannot be read or certified; the message names file and level."""


@dataclass(frozen=True)
class LevelEntry:
    """One level of a set and where it came from."""

    level: SokobanLevel  # with its certificate
    file: str  # the file's name (relative to the set's directory)
    number: int  # 0-based position in its file
    line: int  # 1-based line of the file where the level's first row stands


@dataclass(frozen=True)
class LevelSet:
    """Certified levels read from a file or directory, in order; ``entries[i]`` is ``reset(seed=i)``."""

    path: str
    sha256: str  # of the file, or of the directory's file names and hashes
    entries: tuple[LevelEntry, ...]

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def height(self) -> int:
        """Rows of the tallest level (the grid every level of the set is shown in)."""
        return max(e.level.height for e in self.entries)

    @property
    def width(self) -> int:
        """Columns of the widest level."""
        return max(e.level.width for e in self.entries)

    @property
    def longest_optimum(self) -> int:
        """Moves of the longest certified optimal solution in the set: the budget that lets optimal play win all."""
        return max(e.level.certificate.moves for e in self.entries)

    def entry(self, index: int) -> LevelEntry:
        """Level ``index`` (0-based over the whole set); ValueError outside the set."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.entries):
            raise ValueError(f"level index {index!r} is outside the level set {self.path} "
                             f"({len(self.entries)} levels, indices 0..{len(self.entries) - 1})")
        return self.entries[index]


@dataclass(frozen=True)
class _ParsedLevel:
    level: SokobanLevel
    number: int
    line: int


def level_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files a level set reads: ``path`` itself, or a directory's level files in name order."""
    p = Path(path).expanduser()
    if p.is_file():
        return [p]
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in LEVEL_FILE_SUFFIXES)
        if not files:
            raise LevelFileError(f"level directory {p} holds no level files ({', '.join(LEVEL_FILE_SUFFIXES)})")
        return files
    raise LevelFileError(f"level set {p}: no such file or directory")


def level_set_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a level file, or of a directory's file names with their hashes (what a run records)."""
    files = level_files(path)
    if len(files) == 1 and Path(path).expanduser().is_file():
        return _file_sha256(files[0])
    listing = "".join(f"{f.name}\t{_file_sha256(f)}\n" for f in files)
    return _sha256(listing.encode())


def _file_sha256(file: Path) -> str:
    # Every env of an evaluation checks its set's hash, and a Boxoban folder is 90 MB: a file is hashed
    # again only when its size or modification time changed.
    stat = file.stat()
    key = (str(file.resolve()), stat.st_size, stat.st_mtime_ns)
    with _digest_lock:
        if key not in _digests:
            _digests[key] = _sha256(file.read_bytes())
        return _digests[key]


def count_levels(path: str | os.PathLike[str], limit: int | None = None) -> int:
    """How many levels a file or directory holds (at most ``limit``), read without solving any."""
    total = 0
    for file in level_files(path):
        if limit is not None and total >= limit:
            break
        total += len(_parse(file.read_text(encoding="utf-8", errors="replace"), str(file)))
    return total if limit is None else min(total, limit)


def parse_level_file(text: str, name: str = "<text>") -> list[SokobanLevel]:
    """Every level of a level file's text, in order, without certificates (see the module docstring)."""
    return [p.level for p in _parse(text, name)]


def load_level_set(path: str | os.PathLike[str], limit: int | None = None, *, cache: bool = True,
                   cache_dir: str | os.PathLike[str] | None = None) -> LevelSet:
    """Read and certify the first ``limit`` levels (None: all) of a file or directory.

    ``cache_dir``: where certificate caches are read and written (``<sha256>.json`` by each file's
    content hash) instead of beside the level file or in the user cache; a server passes its own
    directory so that it never writes next to the files it serves.

    Raises :class:`LevelFileError` naming the file and level for a malformed level, one without a
    solution, or one the solver could not finish. Loaded sets are kept for the life of the process
    (keyed by path, content hash and limit), so the many envs of an evaluation read a set once.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise LevelFileError(f"levels_limit must be a positive int or None, got {limit!r}")
    files = level_files(path)
    digest = level_set_digest(path)
    key = (str(Path(path).expanduser().resolve()), digest, limit)
    with _load_lock:  # the envs of one run are built from many threads; certify each set once
        if key not in _loaded:
            _loaded[key] = _load(key[0], digest, files, limit, cache,
                                 None if cache_dir is None else Path(cache_dir).expanduser())
            while len(_loaded) > MAX_SETS_KEPT:
                _loaded.pop(next(iter(_loaded)))
        return _loaded[key]


def _load(path: str, digest: str, files: list[Path], limit: int | None, cache: bool,
          cache_dir: Path | None) -> LevelSet:
    entries: list[LevelEntry] = []
    for file in files:
        if limit is not None and len(entries) >= limit:
            break
        data = file.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise LevelFileError(f"{file}: not UTF-8 text ({err})") from None
        parsed = _parse(text, str(file))
        if limit is not None:
            parsed = parsed[: limit - len(entries)]
        certificates = _certify(parsed, file, _sha256(data), cache=cache, cache_dir=cache_dir)
        entries.extend(LevelEntry(p.level.with_certificate(c), file.name, p.number, p.line)
                       for p, c in zip(parsed, certificates))
    if not entries:
        raise LevelFileError(f"level set {path} holds no levels")
    return LevelSet(path, digest, tuple(entries))


def _parse(text: str, name: str) -> list[_ParsedLevel]:
    out: list[_ParsedLevel] = []
    rows: list[str] = []
    start = 0

    def flush() -> None:
        if not rows:
            return
        number = len(out)
        try:
            level = parse_level("\n".join(rows))
        except ValueError as err:
            raise LevelFileError(f"{name}: level {number} (line {start}): {err}") from None
        out.append(_ParsedLevel(level, number, start))
        rows.clear()

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if "#" in line and not line.lstrip().startswith(";"):
            if not rows:
                start = lineno
            rows.append(line)
        else:
            flush()
    flush()
    if not out:
        raise LevelFileError(f"{name}: no levels found (a level is a block of rows in # @ + $ * . notation)")
    return out


def _certify(parsed: Sequence[_ParsedLevel], file: Path, sha256: str, *, cache: bool = True,
             cache_dir: Path | None = None) -> list[SokobanCertificate]:
    """Certificates of a file's levels: from its certificate cache where valid, else from the solver."""
    cached = _read_cache(file, sha256, cache_dir) if cache else {}
    out: list[SokobanCertificate] = []
    solved_now = False
    for p in parsed:
        certificate = cached.get(p.number)
        if certificate is None or not _replays_to_solution(p.level, certificate):
            certificate = _solve(p, file)
            cached[p.number] = certificate
            solved_now = True
        out.append(certificate)
    if cache and solved_now:
        write_certificates(file, sha256, cached, cache_dir=cache_dir)
    return out


def _solve(p: _ParsedLevel, file: Path) -> SokobanCertificate:
    result = solve(p.level, max_nodes=SOLVER_MAX_NODES)
    if result.status is SolveStatus.UNSOLVABLE:
        raise LevelFileError(f"{file}: level {p.number} (line {p.line}) has no solution")
    if result.status is SolveStatus.LIMIT or result.certificate is None:
        raise LevelFileError(f"{file}: level {p.number} (line {p.line}) was not solved within "
                             f"{SOLVER_MAX_NODES:,} search states, so it cannot be certified")
    return result.certificate


def _replays_to_solution(level: SokobanLevel, certificate: SokobanCertificate) -> bool:
    """Whether playing ``certificate`` from ``level`` puts every box on a target (illegal pushes fail)."""
    w = level.width
    offsets = action_offsets(w)
    walls = {r * w + c for r, c in level.walls}
    boxes = {r * w + c for r, c in level.boxes}
    player = level.player[0] * w + level.player[1]
    for action in certificate.solution:
        if not 0 <= action < 4:
            return False
        step = player + offsets[action]
        if step in walls:
            continue
        if step in boxes:
            dest = step + offsets[action]
            if dest in walls or dest in boxes:
                continue
            boxes = (boxes - {step}) | {dest}
        player = step
    return boxes == {r * w + c for r, c in level.targets}


def certificates_path(file: str | os.PathLike[str]) -> Path:
    """Where a level file's certificates are kept next to it: ``<file>.certificates.json``."""
    file = Path(file)
    return file.with_name(file.name + CERTIFICATES_SUFFIX)


def user_cache_path(sha256: str) -> Path:
    """The fallback cache file for a level file with this hash, under ``$XDG_CACHE_HOME`` (or ``~/.cache``)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "ragen_envs" / "sokoban_certificates" / f"{sha256}.json"


def cache_paths(file: str | os.PathLike[str], sha256: str, cache_dir: str | os.PathLike[str] | None = None
                ) -> tuple[Path, ...]:
    """Where the certificates of a level file with hash ``sha256`` are looked for and written, in order:
    ``<cache_dir>/<sha256>.json`` alone where a cache directory is given, else next to the file
    (:func:`certificates_path`), then :func:`user_cache_path`."""
    if cache_dir is not None:
        return (Path(cache_dir).expanduser() / f"{sha256}.json",)
    return (certificates_path(file), user_cache_path(sha256))


def write_certificates(file: str | os.PathLike[str], sha256: str, certificates: dict[int, SokobanCertificate],
                       about: dict[str, Any] | None = None, *, cache_dir: str | os.PathLike[str] | None = None
                       ) -> Path | None:
    """Store certificates (level number -> certificate) for the file with hash ``sha256`` in the first
    of :func:`cache_paths` that can be written; None when none could. ``about`` (e.g. the preset and
    seeds an export came from) is stored alongside."""
    payload = {"format": _CACHE_FORMAT, "file_sha256": sha256, **(about or {}),
               "levels": {str(n): c.to_dict() for n, c in sorted(certificates.items())}}
    text = json.dumps(payload, indent=1) + "\n"
    for target in cache_paths(file, sha256, cache_dir):
        tmp = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # Written to a temporary file and renamed, so a reader never sees half a cache.
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
            return target
        except OSError:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
    return None


def _read_cache(file: Path, sha256: str, cache_dir: Path | None = None) -> dict[int, SokobanCertificate]:
    """Cached certificates for this exact file content (a cache for other content is ignored)."""
    for source in cache_paths(file, sha256, cache_dir):
        try:
            payload: Any = json.loads(source.read_text(encoding="utf-8"))
            if payload.get("format") != _CACHE_FORMAT or payload.get("file_sha256") != sha256:
                continue
            return {int(n): SokobanCertificate.from_dict(c) for n, c in payload["levels"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return {}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
