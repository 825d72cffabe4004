"""Level sets: Sokoban levels read from files (Boxoban, XSB/``.sok`` collections, standard notation).

A level set is a file, or a directory of such files (``*.txt``, ``*.xsb``, ``*.sok``, in name order),
read as one list of levels. Every level leaves here with a certificate, exactly as a generated one:
levels are solved on load, with a progress line on stderr (levels solved, rate, time left).

Reading is lazy: files are read a line at a time and only up to the levels asked for (``limit``), so
memory follows the levels loaded, not the size of the file. A set whose levels would take more
than :data:`MAX_SET_BYTES` in memory is refused before any level is parsed or solved, naming the
``levels_limit`` that fits.

Certificates are cached in a JSON file keyed by the level file's SHA-256, written next to the file
(``000.txt.certificates.json``, with the level file's permission bits) or, where that directory is
read-only, in the user's cache directory; where neither can be written there is simply no cache (a
caller that must not write beside the files, such as a server, names its own ``cache_dir``). A
cache records the solver's version and a digest of its own content: a cache that was edited, or
written by another solver version or format, is ignored and its levels are solved again. A cached
certificate is also replayed before it is trusted, so a cache cannot hand out a non-solution.

Reading a file: a line holding a ``#`` is a row of a level (standard notation: ``#`` wall, ``@``
player, ``+`` player on goal, ``$`` box, ``*`` box on goal, ``.`` goal, space, ``-`` or ``_`` floor);
any other line (a blank line, a ``;`` comment such as Boxoban's ``; 17`` header, a ``Title:`` line,
even one holding a ``#``) ends the level being read; a UTF-8 byte-order mark is skipped. So Boxoban files,
most XSB collections and files written by :func:`~ragen_envs.sokoban.format_boxoban` read alike. Levels are
numbered from 0 in file order; an error names the file, the level number and the line where that level starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragen_envs.progress import Progress
from ragen_envs.sokoban.level import SokobanCertificate, SokobanLevel
from ragen_envs.sokoban.notation import parse_level
from ragen_envs.sokoban.room import action_offsets
from ragen_envs.sokoban.solver import SOLVER_VERSION, SolveStatus, solve

#: File name endings read from a level directory.
LEVEL_FILE_SUFFIXES: tuple[str, ...] = (".txt", ".xsb", ".sok")
#: Appended to a level file's name to name its certificate file.
CERTIFICATES_SUFFIX = ".certificates.json"
#: States the solver may expand per level before the level is refused as too hard to certify.
SOLVER_MAX_NODES = 2_000_000
#: Memory the solver may take on one level: on a large grid each state is larger, so fewer are expanded
#: (:func:`solver_budget`; grids up to about 25 x 25 keep all of :data:`SOLVER_MAX_NODES`), and a small file
#: of a huge open room cannot take many gigabytes.
SOLVER_MAX_BYTES = 5 * 2**28
#: Memory a loaded level set may take (by :meth:`_Block.estimated_bytes`); a larger one is refused,
#: naming the ``levels_limit`` that fits.
MAX_SET_BYTES = 256 * 2**20
# A loaded, certified level takes about this much memory, plus this much per cell of its grid
# (tracemalloc over generated levels: 5.0 KB at 7x7, 9.6 KB at 10x10, 21.6 KB at 16x16).
_LEVEL_BYTES = 1_500
_CELL_BYTES = 80
#: Longest line read from a level file; no line is read whole, and a longer one is refused.
MAX_LINE_CHARS = 65_536
_CACHE_FORMAT = "ragen-sokoban-certificates-v2"
# Keys of a cache file that are not an export's ``about``.
_CACHE_KEYS = ("format", "file_sha256", "solver", "levels", "digest")
# While a long load solves, a file's cache is written at least this often, so an interrupted load
# keeps most of its work.
_SAVE_EVERY_S = 60.0
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
class _Block:
    """The rows of one level as they stand in its file, not parsed yet."""

    number: int  # 0-based position in its file
    line: int  # 1-based line of its first row
    rows: tuple[str, ...]

    def estimated_bytes(self) -> int:
        """Memory the level will take once parsed and certified (see ``_CELL_BYTES``)."""
        return _LEVEL_BYTES + _CELL_BYTES * len(self.rows) * max(len(row) for row in self.rows)

    def parse(self, name: str) -> _ParsedLevel:
        """The level these rows draw; LevelFileError naming ``name``, the level and its line if malformed."""
        try:
            level = parse_level("\n".join(self.rows))
        except ValueError as err:
            raise LevelFileError(f"{name}: level {self.number} (line {self.line}): {err}") from None
        return _ParsedLevel(level, self.number, self.line)


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
    return hashlib.sha256(listing.encode()).hexdigest()


def _file_sha256(file: Path) -> str:
    # Every env of an evaluation checks its set's hash, and a Boxoban folder is 90 MB: a file is hashed
    # again only when its size or modification time changed, and always in chunks, never read whole.
    key = (str(file.resolve()), *_stamp(file))
    with _digest_lock:
        if key not in _digests:
            with file.open("rb") as fh:
                _digests[key] = hashlib.file_digest(fh, "sha256").hexdigest()
        return _digests[key]


def _stamp(file: Path) -> tuple[int, int]:
    stat_result = file.stat()
    return stat_result.st_size, stat_result.st_mtime_ns


def count_levels(path: str | os.PathLike[str], limit: int | None = None) -> int:
    """How many levels a file or directory holds (at most ``limit``), read lazily without parsing any."""
    return sum(1 for _ in _set_blocks(level_files(path), limit))


def parse_level_file(text: str, name: str = "<text>") -> list[SokobanLevel]:
    """Every level of a level file's text, in order, without certificates (see the module docstring)."""
    levels = [block.parse(name).level for block in _blocks(text.splitlines())]
    if not levels:
        raise LevelFileError(_no_levels(name))
    return levels


def load_level_set(path: str | os.PathLike[str], limit: int | None = None, *, cache: bool = True,
                   cache_dir: str | os.PathLike[str] | None = None, progress: bool = True) -> LevelSet:
    """Read and certify the first ``limit`` levels (None: all) of a file or directory.

    Raises :class:`LevelFileError` naming the file and level for a malformed level, one without a
    solution, or one the solver could not finish, and, before reading any level, for a set over
    :data:`MAX_SET_BYTES` (naming the ``limit`` that fits). ``cache_dir``: where certificate caches
    are read and written (``<sha256>.json`` by each file's content hash) instead of beside the level
    file or in the user cache; a server passes its own directory so that it never writes next to the
    files it serves. ``progress``: report solving on stderr. Loaded sets are kept for the life of the
    process (keyed by path, content hash and limit), so the many envs of an evaluation read a set once.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise LevelFileError(f"levels_limit must be a positive int or None, got {limit!r}")
    files = level_files(path)
    stamps = {file: _stamp(file) for file in files}
    digest = level_set_digest(path)
    key = (str(Path(path).expanduser().resolve()), digest, limit)
    with _load_lock:  # the envs of one run are built from many threads; certify each set once
        if key not in _loaded:
            _loaded[key] = _load(key[0], digest, stamps, limit, cache=cache, progress=progress,
                                 cache_dir=None if cache_dir is None else Path(cache_dir).expanduser())
            while len(_loaded) > MAX_SETS_KEPT:
                _loaded.pop(next(iter(_loaded)))
        return _loaded[key]


def _load(path: str, digest: str, stamps: dict[Path, tuple[int, int]], limit: int | None, *, cache: bool,
          progress: bool, cache_dir: Path | None) -> LevelSet:
    files = list(stamps)
    _check_size(path, files, limit)
    parsed: dict[Path, list[_ParsedLevel]] = {}
    for file, block in _set_blocks(files, limit):
        parsed.setdefault(file, []).append(block.parse(str(file)))
    for file in parsed:
        # The set was hashed before it was read: a change in between would record and cache it wrongly.
        if _stamp(file) != stamps[file]:
            raise LevelFileError(f"{file}: changed while it was being read; load the set again")
    certificates = _certify(parsed, Path(path).name, cache=cache, cache_dir=cache_dir, progress=progress)
    entries = tuple(LevelEntry(p.level.with_certificate(certificates[file][p.number]), file.name, p.number, p.line)
                    for file, levels in parsed.items() for p in levels)
    return LevelSet(path, digest, entries)


def _check_size(path: str, files: Sequence[Path], limit: int | None) -> None:
    """Refuse a set whose levels would take more than MAX_SET_BYTES, before any level is parsed."""
    total = count = 0
    for _, block in _set_blocks(files, limit):
        total += block.estimated_bytes()
        if total > MAX_SET_BYTES:
            asked = "levels" if limit is None else f"first {limit:,} levels (levels_limit)"
            raise LevelFileError(
                f"level set {path}: its {asked} would take more than the {MAX_SET_BYTES / 2**20:,.0f} MiB of "
                f"memory a level set may take; only the first {count:,} fit: pass levels_limit={count} "
                f"(ragen-eval --levels-limit {count})")
        count += 1


def _set_blocks(files: Sequence[Path], limit: int | None) -> Iterator[tuple[Path, _Block]]:
    """The first ``limit`` levels (None: all) of the files in order, read lazily; a file without levels
    is an error."""
    taken = 0
    for file in files:
        if limit is not None and taken >= limit:
            return
        empty = True
        for block in _blocks(_file_lines(file)):
            empty = False
            yield file, block
            taken += 1
            if limit is not None and taken >= limit:
                return
        if empty:
            raise LevelFileError(_no_levels(str(file)))


def _no_levels(name: str) -> str:
    return f"{name}: no levels found (a level is a block of rows in # @ + $ * . notation)"


def _file_lines(file: Path) -> Iterator[str]:
    """A level file's lines, read one at a time (never the whole file, never a whole overlong line)."""
    try:
        with file.open(encoding="utf-8-sig") as fh:  # skips a byte-order mark, as Windows editors write
            lineno = 0
            while line := fh.readline(MAX_LINE_CHARS + 2):
                lineno += 1
                if len(line.rstrip("\n")) > MAX_LINE_CHARS:
                    raise LevelFileError(f"{file}: line {lineno} is longer than {MAX_LINE_CHARS:,} characters, "
                                         "which no level row is: not a level file")
                yield line
    except UnicodeDecodeError as err:
        raise LevelFileError(f"{file}: not UTF-8 text ({err})") from None
    except OSError as err:
        raise LevelFileError(f"{file}: cannot be read ({err.strerror or err})") from None


def _blocks(lines: Iterable[str]) -> Iterator[_Block]:
    """Split lines into levels: a run of lines holding a ``#`` (and not a ``;`` comment or a ``Key: value`` line
    such as XSB's ``Title: Level #1``: no row holds a colon) is one level."""
    rows: list[str] = []
    start = number = 0
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if "#" in line and ":" not in line and not line.lstrip().startswith(";"):
            if not rows:
                start = lineno
            rows.append(line)
        elif rows:
            yield _Block(number, start, tuple(rows))
            number += 1
            rows = []
    if rows:
        yield _Block(number, start, tuple(rows))


def _certify(parsed: dict[Path, list[_ParsedLevel]], name: str, *, cache: bool, cache_dir: Path | None,
             progress: bool) -> dict[Path, dict[int, SokobanCertificate]]:
    """Certificates of each file's levels (by level number): from the file's cache where it is intact
    and replays, else from the solver, with a progress line while solving."""
    hashes = {file: _file_sha256(file) for file in parsed}
    known: dict[Path, dict[int, SokobanCertificate]] = {}
    about: dict[Path, dict[str, Any]] = {}
    unsolved: list[tuple[Path, _ParsedLevel]] = []
    for file, levels in parsed.items():
        known[file], about[file] = _read_cache(file, hashes[file], cache_dir) if cache else ({}, {})
        for p in levels:
            certificate = known[file].get(p.number)
            if certificate is None or not _replays_to_solution(p.level, certificate):
                known[file].pop(p.number, None)
                unsolved.append((file, p))
    if not unsolved:
        return known
    bar = Progress(f"certifying {name}", len(unsolved), "levels") if progress else None
    try:
        saved = time.monotonic()
        for i, (file, p) in enumerate(unsolved):
            known[file][p.number] = _solve(p, file)
            if bar is not None:
                bar.advance()
            file_done = i + 1 == len(unsolved) or unsolved[i + 1][0] != file
            if cache and (file_done or time.monotonic() - saved >= _SAVE_EVERY_S):
                write_certificates(file, hashes[file], known[file], about[file], cache_dir=cache_dir)
                saved = time.monotonic()
    finally:
        if bar is not None:
            bar.close()
    return known


def solver_budget(level: SokobanLevel) -> int:
    """States the solver may expand on ``level``: :data:`SOLVER_MAX_NODES`, fewer where the grid is so large that
    they would take more than :data:`SOLVER_MAX_BYTES`."""
    # A search state of the solver measured 0.57 KB on a 20x20 grid and 2.7 KB on a 120x120 one (ru_maxrss over
    # 10^5 states); this bound lies above both.
    state_bytes = 512 + level.height * level.width // 4
    return min(SOLVER_MAX_NODES, SOLVER_MAX_BYTES // state_bytes)


def _solve(p: _ParsedLevel, file: Path) -> SokobanCertificate:
    budget = solver_budget(p.level)
    result = solve(p.level, max_nodes=budget)
    if result.status is SolveStatus.UNSOLVABLE:
        raise LevelFileError(f"{file}: level {p.number} (line {p.line}) has no solution")
    if result.status is SolveStatus.LIMIT or result.certificate is None:
        raise LevelFileError(f"{file}: level {p.number} (line {p.line}) was not solved within "
                             f"{budget:,} search states, so it cannot be certified")
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
    of :func:`cache_paths` that can be written, with the level file's permission bits; None when none
    could. ``about`` (e.g. the preset and seeds an export came from) is stored alongside. The file
    records :data:`~ragen_envs.sokoban.solver.SOLVER_VERSION` and a digest of its content."""
    about = {k: v for k, v in (about or {}).items() if k not in _CACHE_KEYS}
    payload: dict[str, Any] = {"format": _CACHE_FORMAT, "file_sha256": sha256, "solver": SOLVER_VERSION, **about,
                               "levels": {str(n): c.to_dict() for n, c in sorted(certificates.items())}}
    payload["digest"] = _cache_digest(payload)
    text = json.dumps(payload, indent=1) + "\n"
    mode = _cache_mode(Path(file))
    for target in cache_paths(file, sha256, cache_dir):
        tmp = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # Written to a temporary file and renamed, so a reader never sees half a cache.
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp, mode)  # mkstemp makes 0600: whoever may read the levels may read their solutions
            os.replace(tmp, target)
            return target
        except OSError:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
    return None


def _cache_mode(file: Path) -> int:
    """The level file's read and write bits (never execute), always readable and writable by the owner."""
    try:
        return stat.S_IMODE(file.stat().st_mode) & 0o666 | 0o600
    except OSError:
        return 0o600


def _cache_digest(payload: dict[str, Any]) -> str:
    """SHA-256 of a cache's content (format, file hash, solver version, about, levels), digest left out."""
    content = {k: v for k, v in payload.items() if k != "digest"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _read_cache(file: Path, sha256: str, cache_dir: Path | None = None
                ) -> tuple[dict[int, SokobanCertificate], dict[str, Any]]:
    """Cached certificates for this exact file content, with the cache's ``about``. A cache for other
    content, of another format or solver version, or whose digest does not match its content (it
    was edited) is ignored."""
    for source in cache_paths(file, sha256, cache_dir):
        try:
            payload: Any = json.loads(source.read_text(encoding="utf-8"))
            if payload.get("format") != _CACHE_FORMAT or payload.get("file_sha256") != sha256 \
                    or payload.get("solver") != SOLVER_VERSION or payload.get("digest") != _cache_digest(payload):
                continue
            levels = {int(n): SokobanCertificate.from_dict(c) for n, c in payload["levels"].items()}
            return levels, {k: v for k, v in payload.items() if k not in _CACHE_KEYS}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return {}, {}
