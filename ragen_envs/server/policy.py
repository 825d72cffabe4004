"""`ClientPolicy`: what a client of a ragen server may ask, set by the operator, the same on every server.

Every server of the project (``python -m ragen_envs.server`` and the OpenEnv one) opens episodes only
through :meth:`ClientPolicy.open_episode` and takes the same operator flags
(:func:`add_policy_arguments`). Its rules, for clients assumed hostile:

- **Presets by default.** ``env`` is a preset name (``GET /envs``); ``env_config`` overrides are refused
  unless the operator opens them (``--allow-env-config`` opens :data:`DEFAULT_ENV_CONFIG_LIMITS`,
  ``--env-config-limit GAME.FIELD=MAX`` one field). Each open field has a ceiling (a number's largest
  magnitude, a text's or list's longest length), and bounded room sizes and search budgets bound memory.
  ``protocol`` fields are open within :data:`DEFAULT_PROTOCOL_LIMITS`, and a template within
  :data:`MAX_TEMPLATE_PLACEHOLDERS` placeholders.
- **Bounded work.** Building an episode (generating a level, certifying a level file) runs under a
  cooperative deadline (:mod:`ragen_envs.deadline`): past ``generation_timeout_s`` the work stops and
  the client gets a 422. At most ``max_concurrent_generations`` builds run at once; a request that
  finds them all busy waits up to ``generation_timeout_s``, then gets a 503.
- **Level files by name only.** ``levels`` names a file or directory inside one of the operator's
  ``levels_dirs``; absolute paths, ``..`` and links that lead outside are refused, sizes are capped,
  and certificate caches are written only under the server's ``cache_dir``.
- **Access.** Binding beyond loopback needs a bearer token (:func:`check_bind`, :func:`token_matches`);
  ``max_sessions_per_client`` and ``max_connections`` are enforced by each server.

Refusals are :class:`PolicyError` with an HTTP status and a one-line message that names no server path.
"""

from __future__ import annotations

import argparse
import functools
import hmac
import ipaddress
import math
import os
import re
import secrets
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from ragen_envs.deadline import DeadlineExceeded, time_limit
from ragen_envs.registration import PRESETS, Preset, get_preset, make
from ragen_envs.sokoban.level_files import LEVEL_FILE_SUFFIXES, load_level_set
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.episode import TextEpisode
from ragen_envs.text.prompts import TEMPLATE_FIELDS

#: Env-config fields that ``--allow-env-config`` opens, per game (the entry point's class name, lower
#: case, without ``Env``), each with its ceiling: a number's largest magnitude (``-MAX`` to ``MAX``), or for a
#: text or list the longest length (and the longest text inside it); None: any value the game's config
#: accepts. The ceilings keep the memory of one generation to a few MB (its time is bounded by the deadline),
#: and rewards small enough that an episode's total stays a finite number, which JSON can carry.
DEFAULT_ENV_CONFIG_LIMITS: Mapping[str, Mapping[str, float | None]] = {
    "sokoban": {"height": 10, "width": 10, "num_boxes": 4, "min_pushes": 30, "max_pushes": None,
                "max_attempts": 200, "search_budget": 20_000, "start_selection": None, "walk_steps": 100,
                "p_change_direction": None, "step_reward": 1000, "box_on_target_reward": 1000,
                "box_off_target_reward": 1000, "success_reward": 1000, "max_actions_per_episode": 200},
    "frozenlake": {"height": 16, "width": 16, "p_frozen": None, "is_slippery": None, "success_rate": None,
                   "horizon": 100, "certify_unlimited": None, "min_path_length": None, "max_attempts": 10_000},
    "bandit": {"name_set": None, "num_arms": 10, "low_risk_reward": 1000, "high_risk_reward": 1000,
               "high_risk_prob": None, "arm_names": 32, "shuffle_arms": None, "reveal_payoffs": None},
}
#: ``protocol`` fields a client may set, with ceilings as above; the budgets bound what an episode holds.
DEFAULT_PROTOCOL_LIMITS: Mapping[str, float | None] = {
    "max_turns": 50, "max_actions_per_turn": 50, "max_actions_per_episode": 500, "format_penalty": 1000,
    "observation_format": None, "symbols": 16, "coordinate_base": None, "think": None, "context": None,
    "context_k": 50, "max_response_chars": None, "action_separator": 16, "system_prompt": 8192,
    "intro_template": 8192, "turn_template": 8192, "reward_template": 8192, "feedback_template": 8192,
    "format_think": 8192, "format_no_think": 8192,
}
#: Placeholders one client-set template may hold: each one expands to a text of its own (``{rules}`` to the rules,
#: ``{observation}`` to the state), so without a count an 8 KB template of ``{rules}`` rendered about 600 KB per
#: prompt. The protocol's own templates hold at most 8.
MAX_TEMPLATE_PLACEHOLDERS = 32
#: Env-config fields no client may set: level sets are served by name (``levels``), from the operator's directories.
CLIENT_FORBIDDEN_FIELDS = frozenset({"levels", "levels_limit"})
#: The key of protocol ceilings in ``--env-config-limit protocol.FIELD=MAX``.
PROTOCOL_KEY = "protocol"
_MAX_NAME_CHARS = 255
_PROTOCOL_FIELDS = frozenset(f.name for f in fields(ProtocolConfig))
_MAX_SEED = 2**63 - 1
#: Longest ``generation_timeout_s``: waits on locks overflow past ``threading.TIMEOUT_MAX`` (about 292 years on
#: Linux), and no client waits an hour for one reset.
MAX_GENERATION_TIMEOUT_S = 3600.0
# RFC 6750's b64token, what a client can send after "Bearer ": a token outside it (a trailing newline from
# a file, a space, a non-ASCII character) would never match what a client sends, and every request would be a 401.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class PolicyError(Exception):
    """A request the policy refuses: ``status`` is the HTTP status to answer with, the message one line.

    400 malformed, 403 not allowed by the operator, 404 unknown level set, 422 over the work budget
    (or no level for that config), 429 per-client limit, 503 no capacity now.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message.splitlines()[0] if message else "refused")
        self.status = status


def _game(preset: Preset) -> str:
    """The game a preset plays, as limits are keyed: ``ragen_envs.sokoban.env:SokobanEnv`` -> ``sokoban``."""
    name = preset.entry_point.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lower()
    return name.removesuffix("env") or name


@functools.cache
def _config_fields(game: str) -> frozenset[str] | None:
    """The config fields of ``game`` (as limits name games: ``sokoban``), read from its first preset's env;
    None for a name no preset plays."""
    preset = next((p for p in PRESETS if _game(p) == game), None)
    if preset is None:
        return None
    env = make(preset.name)
    try:
        return frozenset(f.name for f in fields(env.unwrapped.config))
    finally:
        env.close()


def _check_ceiling(label: str, value: Any, ceiling: float | None) -> None:
    """Refuse a non-finite number anywhere, and a value over ``ceiling`` (see DEFAULT_ENV_CONFIG_LIMITS)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise PolicyError(400, f"{label} must be a finite number, got {value!r}")
    if ceiling is None or value is None or isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if abs(value) > ceiling:
            side = "over" if value > 0 else "under"
            limit = math.copysign(ceiling, value)
            raise PolicyError(403, f"{label}={value!r} is {side} this server's limit of {limit:g}")
        return
    if isinstance(value, (str, list, tuple, Mapping)):
        if len(value) > ceiling:
            raise PolicyError(403, f"{label} has {len(value)} entries or characters, over this server's limit of "
                                   f"{ceiling:g}")
        inner = list(value.values()) if isinstance(value, Mapping) else [] if isinstance(value, str) else list(value)
        for item in inner:
            if isinstance(item, str) and len(item) > ceiling:
                raise PolicyError(403, f"{label} holds a text of {len(item)} characters, over this server's "
                                       f"limit of {ceiling:g}")


def _check_fields(what: str, values: Mapping[str, Any], limits: Mapping[str, float | None], closed: str) -> None:
    """Every key of ``values`` must be open in ``limits`` and within its ceiling; ``closed`` says why not."""
    for key, value in values.items():
        if not isinstance(key, str) or key not in limits:
            opened = sorted(limits)
            raise PolicyError(403, f"{what} field {key!r} is not open to clients on this server; "
                                   + (f"open: {opened}" if opened else closed))
        _check_ceiling(f"{what}.{key}", value, limits[key])


@dataclass(frozen=True)
class ClientPolicy:
    """The operator's rules for what clients may ask; see the module docstring. Defaults: presets only."""

    levels_dirs: tuple[Path, ...] = ()
    """Directories whose level files (and subdirectories of them) clients may play by name; empty: none."""
    cache_dir: Path | None = None
    """Where certificates of served level files are cached (never beside the files); None:
    ``$XDG_CACHE_HOME/ragen_envs/server_certificates`` (``~/.cache/...``)."""
    env_config_limits: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    """Per game, the env-config fields clients may set and their ceilings; empty: no overrides (presets only). A
    game or field that does not exist is a ValueError."""
    protocol_limits: Mapping[str, float | None] = field(default_factory=lambda: dict(DEFAULT_PROTOCOL_LIMITS))
    """The ``protocol`` fields clients may set and their ceilings."""
    generation_timeout_s: float = 10.0
    """Seconds one episode's build (level generation, level-file certification) may take before it is stopped;
    at most :data:`MAX_GENERATION_TIMEOUT_S`."""
    max_concurrent_generations: int = max(1, os.cpu_count() or 1)
    """Episode builds running at once; more wait up to ``generation_timeout_s``, then get a 503."""
    max_sessions_per_client: int = 256
    """Episodes one client (one address) may hold at once."""
    max_connections: int = 256
    """Open connections served at once; more are answered 503 and closed."""
    max_level_bytes: int = 16 << 20
    """Largest level file (or directory, all files together) served."""
    auth_token: str | None = field(default=None, repr=False)
    """Bearer token every request must carry (``Authorization: Bearer TOKEN``); None: no token."""
    _builds: threading.BoundedSemaphore = field(init=False, repr=False, compare=False)
    _levels_lock: threading.Lock = field(init=False, repr=False, compare=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels_dirs", tuple(Path(d).expanduser() for d in self.levels_dirs))
        for directory in self.levels_dirs:
            if not directory.is_dir():
                raise ValueError(f"levels directory {directory} is not a directory")
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir).expanduser())
        for name in ("max_concurrent_generations", "max_sessions_per_client", "max_connections", "max_level_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        timeout = self.generation_timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
                or not 0 < timeout <= MAX_GENERATION_TIMEOUT_S:
            raise ValueError(f"generation_timeout_s must be a number of seconds in (0, {MAX_GENERATION_TIMEOUT_S:g}], "
                             f"got {timeout!r}")
        unknown = sorted(set(self.protocol_limits) - _PROTOCOL_FIELDS)
        if unknown:
            raise ValueError(f"protocol field(s) {unknown} in the protocol limits are not ProtocolConfig fields; "
                             f"fields: {sorted(_PROTOCOL_FIELDS)}")
        for game, limits in self.env_config_limits.items():
            known = _config_fields(game)
            if known is None:
                games = sorted({_game(p) for p in PRESETS})
                raise ValueError(f"env-config field(s) {sorted(limits)} of {game!r}: no game is called that; "
                                 f"games: {games}")
            if set(limits) - known:
                raise ValueError(f"env-config field(s) {sorted(set(limits) - known)} are not fields of {game}'s "
                                 f"config; fields: {sorted(known)}")
            forbidden = sorted(CLIENT_FORBIDDEN_FIELDS & set(limits))
            if forbidden:
                raise ValueError(f"env-config field(s) {forbidden} of {game} cannot be opened to clients: level "
                                 "sets are served by name from the levels directories")
        if self.auth_token is not None and (not isinstance(self.auth_token, str)
                                            or not _BEARER_TOKEN.fullmatch(self.auth_token)):
            raise ValueError("auth_token must be a bearer token of RFC 6750's characters (ASCII letters, digits, "
                             "-._~+/, then any '='), with no spaces or line breaks around it; None: no token")
        object.__setattr__(self, "_builds", threading.BoundedSemaphore(self.max_concurrent_generations))

    @property
    def certificate_dir(self) -> Path:
        """The directory certificate caches of served level files go to (``cache_dir`` or its default)."""
        if self.cache_dir is not None:
            return self.cache_dir
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return root / "ragen_envs" / "server_certificates"

    def level_names(self) -> list[str]:
        """The level sets clients may name: the level files and subdirectories directly in each levels
        directory (hidden ones and links that lead out of the directory left out)."""
        names: set[str] = set()
        for directory in self.levels_dirs:
            base = directory.resolve()
            for entry in directory.iterdir():
                if entry.name.startswith(".") or not entry.resolve().is_relative_to(base):
                    continue
                if entry.is_dir() or entry.suffix.lower() in LEVEL_FILE_SUFFIXES:
                    names.add(entry.name)
        return sorted(names)

    def describe(self) -> dict[str, Any]:
        """What a client may ask, as JSON (a server's ``GET /policy``)."""
        return {
            "envs": [p.name for p in PRESETS],
            "env_config": {game: dict(limits) for game, limits in self.env_config_limits.items()},
            "protocol": dict(self.protocol_limits),
            "levels": self.level_names(),
            "generation_timeout_s": self.generation_timeout_s,
            "max_sessions_per_client": self.max_sessions_per_client,
            "auth": self.auth_token is not None,
        }

    def resolve_levels(self, name: str) -> Path:
        """The level file or directory a client's ``levels`` name stands for, inside one of ``levels_dirs``.

        400 for anything that is not a plain relative name, 404 for a name no directory holds (the same
        answer whatever exists elsewhere on the machine), 403 for one over ``max_level_bytes``.
        """
        if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME_CHARS or "\x00" in name:
            raise PolicyError(400, f"levels must be a level set's name (GET /policy lists them), got {name!r:.80}")
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or "\\" in name or name.startswith("~"):
            raise PolicyError(400, f"levels is a level set's name (GET /policy lists them), not a path: {name!r:.80}")
        if not self.levels_dirs:
            raise PolicyError(403, "this server serves no level files (the operator lists them with --levels-dir)")
        for directory in self.levels_dirs:
            base = directory.resolve()
            candidate = (base / pure).resolve()
            if candidate == base or not candidate.is_relative_to(base) or any(
                    part.startswith(".") for part in candidate.relative_to(base).parts):
                continue  # a link that leads out of the directory, or a hidden entry, counts as absent
            if candidate.is_file() and candidate.suffix.lower() in LEVEL_FILE_SUFFIXES:
                files = [candidate]
            elif candidate.is_dir():
                files = [f for f in candidate.iterdir() if f.is_file() and f.suffix.lower() in LEVEL_FILE_SUFFIXES]
            else:
                continue
            size = sum(f.stat().st_size for f in files)
            if size > self.max_level_bytes:
                raise PolicyError(403, f"level set {name!r} is {size:,} bytes, over this server's limit of "
                                       f"{self.max_level_bytes:,}")
            return candidate
        raise PolicyError(404, f"no level set {name!r} on this server (GET /policy lists them)")

    def open_episode(self, env: str, seed: int | None = None, protocol: Mapping[str, Any] | None = None,
                     env_config: Mapping[str, Any] | None = None, levels: str | None = None) -> TextEpisode:
        """Check a client's request and build its episode under the work budget; :class:`PolicyError` if refused.

        ``seed=None`` draws one (reported in the episode's ``seed``); on a level set it is a valid level
        index. ``levels`` is a level set's name (:meth:`level_names`).
        """
        if not isinstance(env, str) or not env.strip() or len(env) > _MAX_NAME_CHARS:
            raise PolicyError(400, f"env must be a preset name (GET /envs lists them), got {env!r:.80}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX_SEED):
            raise PolicyError(400, f"seed must be an integer in 0..2**63-1, got {seed!r:.80}")
        for what, value in (("protocol", protocol), ("env_config", env_config)):
            if value is not None and not isinstance(value, Mapping):
                raise PolicyError(400, f"{what} must be an object of fields, got {type(value).__name__}")
        try:
            preset = get_preset(env)
        except ValueError as err:
            raise PolicyError(400, str(err)) from None
        game = _game(preset)
        # A protocol key that is no ProtocolConfig field at all is left to ProtocolConfig's own 400, which names it.
        _check_fields("protocol", {k: v for k, v in (protocol or {}).items() if k in _PROTOCOL_FIELDS},
                      self.protocol_limits, "")
        _check_placeholders(protocol or {})
        env_config = dict(env_config or {})
        forbidden = sorted(CLIENT_FORBIDDEN_FIELDS & set(env_config))
        if forbidden:
            raise PolicyError(403, f"env_config field(s) {forbidden} are not open to clients: a level set is asked "
                                   "for by name, as the levels field of the request (GET /policy lists them)")
        _check_fields("env_config", env_config, self.env_config_limits.get(game, {}),
                      "this server plays its presets as they are (the operator opens fields with "
                      "--allow-env-config or --env-config-limit)")
        path = None
        if levels is not None:
            if game != "sokoban":
                raise PolicyError(400, f"levels are played by the Sokoban presets, not by {preset.name!r}")
            path = self.resolve_levels(levels)
        if not self._builds.acquire(timeout=self.generation_timeout_s):
            raise PolicyError(503, f"all {self.max_concurrent_generations} episode builders stayed busy for "
                                   f"{self.generation_timeout_s:g}s; retry later")
        try:
            with time_limit(self.generation_timeout_s):
                if path is None:
                    return TextEpisode(preset.name, secrets.randbelow(2**31) if seed is None else seed,
                                       protocol, env_config or None)
                return self._open_level_set(preset, seed, protocol, env_config, levels, path)
        except DeadlineExceeded:
            budget = f"{self.generation_timeout_s:g}s"
            raise PolicyError(422, f"building the episode took more than this server's budget of {budget} and "
                                   "was stopped; ask for a smaller config") from None
        except PolicyError:
            raise
        except (ValueError, TypeError) as err:
            message = str(err) if path is None else str(err).replace(str(path), levels or "")
            raise PolicyError(400, message or type(err).__name__) from None
        except RuntimeError as err:  # generation found no level for this config in its attempts
            raise PolicyError(422, str(err) or type(err).__name__) from None
        finally:
            self._builds.release()

    def _open_level_set(self, preset: Preset, seed: int | None, protocol: Mapping[str, Any] | None,
                        env_config: dict[str, Any], name: str | None, path: Path) -> TextEpisode:
        # The env loads its set itself, without a cache directory, and would cache certificates beside the
        # file; loading the set here first, with the server's cache directory, puts it in the process's set
        # memo (keyed by path, content and limit), which the env's own load then returns. The lock keeps
        # another set from pushing this one out of the memo in between.
        if not self._levels_lock.acquire(timeout=self.generation_timeout_s):
            raise PolicyError(503, f"level sets stayed busy for {self.generation_timeout_s:g}s; retry later")
        try:
            level_set = load_level_set(path, cache_dir=self.certificate_dir)
            if seed is None:
                seed = secrets.randbelow(len(level_set))
            elif seed >= len(level_set):
                raise PolicyError(400, f"seed {seed} is not a level of {name!r}, which holds {len(level_set)} "
                                       f"levels (seeds 0..{len(level_set) - 1})")
            episode = TextEpisode(preset.name, seed, protocol, {**env_config, "levels": str(path)})
        finally:
            self._levels_lock.release()
        episode.env_config["levels"] = name  # the client's name for it; the server's path stays private
        return episode


def _check_placeholders(protocol: Mapping[str, Any]) -> None:
    """403 for a client's template holding more than :data:`MAX_TEMPLATE_PLACEHOLDERS` placeholders."""
    for name in sorted(TEMPLATE_FIELDS.keys() & protocol.keys()):
        template = protocol[name]
        if not isinstance(template, str):
            continue  # ProtocolConfig's own check names the type
        try:
            count = sum(field_name is not None for _, field_name, _, _ in string.Formatter().parse(template))
        except ValueError:
            continue  # not a format string: ProtocolConfig's own check names it
        if count > MAX_TEMPLATE_PLACEHOLDERS:
            raise PolicyError(403, f"protocol.{name} holds {count} placeholders; this server renders at most "
                                   f"{MAX_TEMPLATE_PLACEHOLDERS} per template")


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the operator flags every server takes (read back with :func:`policy_from_args`)."""
    group = parser.add_argument_group("client policy (what clients may ask)")
    group.add_argument("--levels-dir", action="append", default=[], type=Path, metavar="DIR",
                       help="serve the level files in DIR by name (repeatable); clients never give a path")
    group.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="certificate caches of served level files "
                            "(default: ~/.cache/ragen_envs/server_certificates)")
    group.add_argument("--auth-token-env", metavar="NAME",
                       help="require 'Authorization: Bearer TOKEN', the token read from environment variable NAME; "
                            "needed to bind beyond loopback")
    group.add_argument("--max-sessions-per-client", type=int, default=256, metavar="N",
                       help="episodes one client address may hold at once (default 256)")
    group.add_argument("--max-connections", type=int, default=256, metavar="N",
                       help="connections served at once; more are answered 503 (default 256)")
    group.add_argument("--generation-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="time one episode's level generation may take before it is stopped with a 422 (default 10, "
                            "at most 3600)")
    group.add_argument("--max-concurrent-generations", type=int, default=max(1, os.cpu_count() or 1), metavar="N",
                       help="episode builds at once (default: the CPU count)")
    group.add_argument("--max-level-bytes", type=int, default=16 << 20, metavar="N",
                       help="largest level file or directory served (default 16 MiB)")
    group.add_argument("--allow-env-config", action="store_true",
                       help="let clients override env-config fields within the built-in limits (default: presets only)")
    group.add_argument("--env-config-limit", action="append", default=[], metavar="GAME.FIELD=MAX",
                       help="open one field to clients with a ceiling (MAX 'none': no ceiling), e.g. "
                            "sokoban.search_budget=50000 or protocol.max_turns=20 (repeatable)")


def policy_from_args(args: argparse.Namespace) -> ClientPolicy:
    """The :class:`ClientPolicy` of parsed :func:`add_policy_arguments` flags; ValueError (one line,
    naming the flag) for a bad value, a missing token variable or a missing directory."""
    env_limits: dict[str, dict[str, float | None]] = (
        {game: dict(limits) for game, limits in DEFAULT_ENV_CONFIG_LIMITS.items()} if args.allow_env_config else {})
    protocol_limits: dict[str, float | None] = dict(DEFAULT_PROTOCOL_LIMITS)
    for spec in args.env_config_limit:
        key, sep, raw = spec.partition("=")
        game, dot, name = key.strip().partition(".")
        if not sep or not dot or not game or not name:
            raise ValueError(f"--env-config-limit wants GAME.FIELD=MAX (e.g. sokoban.height=8), got {spec!r}")
        try:
            ceiling = None if raw.strip().lower() == "none" else float(raw)
        except ValueError:
            raise ValueError(f"--env-config-limit {spec!r}: MAX must be a number or 'none'") from None
        if ceiling is not None and not math.isfinite(ceiling):
            raise ValueError(f"--env-config-limit {spec!r}: MAX must be finite")
        if game.lower() == PROTOCOL_KEY:
            protocol_limits[name] = ceiling
        else:
            env_limits.setdefault(game.lower(), {})[name] = ceiling
    token = None
    if args.auth_token_env is not None:
        token = os.environ.get(args.auth_token_env)
        if not token:
            raise ValueError(f"--auth-token-env {args.auth_token_env}: that environment variable is not set or empty")
    try:
        return ClientPolicy(levels_dirs=tuple(args.levels_dir), cache_dir=args.cache_dir, env_config_limits=env_limits,
                            protocol_limits=protocol_limits, generation_timeout_s=args.generation_timeout,
                            max_concurrent_generations=args.max_concurrent_generations,
                            max_sessions_per_client=args.max_sessions_per_client,
                            max_connections=args.max_connections, max_level_bytes=args.max_level_bytes,
                            auth_token=token)
    except ValueError as err:
        flags = {"levels directory": "--levels-dir", "max_concurrent_generations": "--max-concurrent-generations",
                 "max_sessions_per_client": "--max-sessions-per-client", "max_connections": "--max-connections",
                 "max_level_bytes": "--max-level-bytes", "generation_timeout_s": "--generation-timeout",
                 "env-config field": "--env-config-limit", "protocol field": "--env-config-limit",
                 "auth_token": f"--auth-token-env {args.auth_token_env}"}
        message = str(err)
        for word, flag in flags.items():
            if message.startswith(word):
                message = f"{flag}: {message}"
                break
        raise ValueError(message) from None


def server_policy(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ClientPolicy:
    """The policy a server's command line asks for, checked against the address it binds (``--host``,
    ``--port``): a bad port, policy flag or an exposed bind without a token is a usage error (exit 2)."""
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be in 0..65535, got {args.port}")
    try:
        policy = policy_from_args(args)
        check_bind(args.host, policy.auth_token)
    except ValueError as exc:
        parser.error(str(exc))
    return policy


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server on this machine (127.0.0.0/8, ::1, ``localhost``)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def check_bind(host: str, auth_token: str | None) -> None:
    """ValueError (one line) when ``host`` reaches beyond this machine and no token is set."""
    if not is_loopback(host) and auth_token is None:
        raise ValueError(f"binding {host or 'every interface'} makes the server reachable beyond this machine: "
                         "require a bearer token with --auth-token-env NAME (the token in environment variable NAME)")


def token_matches(expected: str | None, authorization: str | None) -> bool:
    """Whether an ``Authorization`` header carries the bearer token ``expected`` (compared in constant time);
    True when no token is set."""
    if expected is None:
        return True
    if not isinstance(authorization, str):
        return False
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode("utf-8", "surrogateescape"), expected.encode("utf-8"))
