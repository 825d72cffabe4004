"""`EvalConfig`: everything that defines an evaluation run, and which parts of it fix the results.

A run directory stores the config. Fields that change *what is measured* (model, backend,
sampling, envs, protocol, seeds, shard) form the run's identity: resuming a directory with a
different identity is refused. Fields that only change *how fast* or *where from* (concurrency,
endpoints, timeouts, retries, rate limit) may differ between the first attempt and a resume.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ragen_envs.config_dicts import coerce_config, config_from_dict, non_default_fields
from ragen_envs.registration import PRESETS, get_preset, level_set_digest
from ragen_envs.splits import SPLIT_OFFSETS, SPLIT_SIZE, split_seeds
from ragen_envs.text import ProtocolConfig, make_env, render_intro

from ragen_eval.agents.base import SamplingParams
from ragen_eval.embedded_model import DEFAULT_MODEL
from ragen_eval.redaction import check_base_url, redact_args, redact_mapping, redact_url

#: The three games as RAGEN plays them; what ``--env default`` (and no ``--env``) means.
DEFAULT_ENVS: tuple[str, ...] = ("sokoban", "frozenlake", "bandit")
#: Names that expand to several presets on the command line.
# The visual presets show pictures, which a text-only model cannot read: they have a group of their own,
# so `all` and the per-game groups stay playable by any model.
_TEXT_PRESETS = tuple(p for p in PRESETS if not p.visual)
ENV_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "default": DEFAULT_ENVS,
    "all": tuple(p.name for p in _TEXT_PRESETS),
    "sokoban_all": tuple(p.name for p in _TEXT_PRESETS if p.entry_point.endswith("SokobanEnv")),
    "frozenlake_all": tuple(p.name for p in _TEXT_PRESETS if p.entry_point.endswith("FrozenLakeEnv")),
    "bandit_all": tuple(p.name for p in _TEXT_PRESETS if p.entry_point.endswith("BanditEnv")),
    "visual": tuple(p.name for p in PRESETS if p.visual),
})
#: Backends ``make_agent`` knows; ``builtin`` serves ``--model random|oracle``, ``hf`` the embedded ``default``.
BACKENDS: tuple[str, ...] = ("builtin", "openai", "vllm", "hf")
BUILTIN_MODELS: tuple[str, ...] = ("random", "oracle")

#: The preset a level set (``--levels``) is played with; the set replaces its generator.
LEVELS_PRESET = "sokoban"
# ``levels`` (the path) is left out: the set's content hash, ``levels_sha256``, is what decides results,
# so shards run from different checkouts still merge and a moved file still resumes.
_IDENTITY_EXCLUDED = ("levels", "base_urls", "api_key_env", "concurrency", "timeout", "max_retries",
                      "requests_per_second", "local_server", "server_args")


def check_request_limits(timeout: float, requests_per_second: float | None) -> None:
    """Raise ``ValueError`` unless the per-request timeout and the optional rate limit are finite and positive.

    Each bound is checked as "inside the range", never as "outside it", so ``nan`` (which fails every
    comparison) is refused like ``inf`` and ``0``, before anything is written.
    """
    if not 0.0 < timeout < math.inf:
        raise ValueError(f"--timeout must be a finite number of seconds > 0, got {timeout}")
    if requests_per_second is not None and not 0.0 < requests_per_second < math.inf:
        raise ValueError(f"--rps must be a finite number > 0, got {requests_per_second}")


def expand_envs(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """Turn ``"sokoban,frozenlake"`` or group names (``default``, ``all``) into preset names.

    Order is kept and duplicates are dropped; an unknown name raises ``ValueError`` listing the
    known presets and groups.
    """
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    names: list[str] = []
    for raw in parts:
        name = raw.strip()
        if not name:
            continue
        group = ENV_GROUPS.get(name.lower())
        expanded = group if group is not None else (_preset_name(name),)
        names.extend(n for n in expanded if n not in names)
    if not names:
        raise ValueError(f"no environment given in {spec!r}")
    return names


def _preset_name(name: str) -> str:
    try:
        return get_preset(name).name
    except ValueError as err:
        raise ValueError(f"{err}; groups: {', '.join(ENV_GROUPS)}") from None


def levels_env_name(levels: str) -> str:
    """The env name of a level set in records and tables: ``levels:<file or directory name>``."""
    return f"levels:{Path(levels).expanduser().resolve().name}"


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """Parse ``--shard i/n`` (0-based ``i``): ``"1/4"`` is the second of four shards."""
    if spec is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(spec))
    if not match:
        raise ValueError(f"--shard takes 'i/n' with 0 <= i < n (e.g. 0/4), got {spec!r}")
    i, n = int(match.group(1)), int(match.group(2))
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"--shard {spec!r}: need n >= 1 and 0 <= i < n (shards are numbered from 0)")
    return (i, n)


def model_slug(model: str) -> str:
    """A file-system-safe short name for a model: the last path component, unsafe characters as ``-``."""
    base = model.rstrip("/").split("/")[-1] if Path(model).exists() else model
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base.replace("/", "--")).strip("-.")
    if not slug:
        raise ValueError(f"cannot make a directory name from model {model!r}")
    return slug


def looks_like_local_path(model: str) -> bool:
    """Whether ``model`` names a local directory rather than a hub id (``ORG/NAME`` or ``NAME``).

    Absolute, ``./``/``../``/``~`` and deeper paths are local, and so is ``DIR/NAME`` when ``DIR``
    exists here: such a name can only be meant as a path, and a hub lookup would just retry for a minute.
    """
    if model.startswith(("/", ".", "~")) or model.strip("/").count("/") > 1:
        return True
    head, sep, _ = model.partition("/")
    return bool(sep) and Path(head).is_dir()


@dataclass
class EvalConfig:
    """One evaluation run: which model plays which levels, how it is sampled, how it is reached."""

    model: str = DEFAULT_MODEL
    """Model name sent to the endpoint, a checkpoint path (vllm/hf), ``random``/``oracle``, or
    ``default`` (the checkpoint embedded in the package, :mod:`ragen_eval.embedded_model`)."""
    backend: str | None = None
    """builtin | openai | vllm | hf; None picks builtin for random/oracle, hf for ``default``, openai
    with a base URL or ``local_server``."""
    base_urls: list[str] = field(default_factory=list)
    """OpenAI-compatible endpoints; several spread the load round-robin."""
    model_args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for a local backend (vllm: engine arguments such as dtype; hf: device, dtype); ``config.json``
    stores them with secrets (``hf_token=...``, key-shaped values) as ``***``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key; the key itself is never stored."""
    envs: list[str] = field(default_factory=lambda: list(DEFAULT_ENVS))
    """Preset names, in order."""
    episodes: int = 256
    """Episodes (levels) per environment."""
    split: str = "test"
    """Named seed split (train, val, test); every model plays the same levels."""
    seed_start: int = 0
    """Index within the split's seed range where the walk for its levels starts (see ``seeds``)."""
    sampling: SamplingParams = field(default_factory=SamplingParams)
    """Temperature 0.5 and 400 new tokens follow RAGEN's evaluation settings."""
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    """The text protocol, the same for every env (budgets left None come from each game); ``config.json``
    stores the fields that differ from the defaults."""
    env_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-preset overrides of the game config (on top of the preset's own)."""
    levels: str | None = None
    """A level file or directory (Boxoban, XSB/.sok, standard notation) played instead of ``envs``: one env,
    ``levels:<name>``, whose seed ``i`` is level ``i`` of the set (files in name order)."""
    levels_limit: int | None = None
    """Read and certify only the first N levels of ``levels`` (the budget fits the longest of those)."""
    levels_sha256: str | None = None
    """Content hash of ``levels``, filled in from the files when None; a run refuses to resume on another."""
    shard: tuple[int, int] | None = None
    """(i, n): play only every n-th episode starting at i."""
    samples: int = 1
    """Episodes per level. ragen-eval plays each level once; a ``ragen-train`` run's saved rollouts
    (``save_rollouts``) hold ``group_size`` per level, the members of a group, told apart by ``sample``."""
    agent_seed: int = 0
    """Seed of the built-in random agent."""
    concurrency: int = 32
    """Episodes in flight at once (and requests, for HTTP backends)."""
    timeout: float = 60.0
    """Per-request timeout in seconds (HTTP backends)."""
    max_retries: int = 5
    """Retries per request on 429/5xx/timeouts before the episode is ended with an error."""
    requests_per_second: float | None = None
    """Optional client-side rate limit."""
    local_server: bool = False
    """Serve ``model`` with ``ragen-eval serve`` on loopback and evaluate through HTTP."""
    server_args: list[str] = field(default_factory=list)
    """Extra arguments for the local server (e.g. ``--latency 0.2``), checked before the run directory is
    made; ``config.json`` stores them with key-like values as ``***``."""

    def __post_init__(self) -> None:
        for name, cls in (("sampling", SamplingParams), ("protocol", ProtocolConfig)):
            try:  # a dict of the fields (a stored config.json, a keyword argument) is read the one way
                setattr(self, name, coerce_config(cls, getattr(self, name)))
            except (ValueError, TypeError) as err:
                raise type(err)(f"{name}: {err}") from None
        if isinstance(self.shard, list):
            self.shard = (int(self.shard[0]), int(self.shard[1]))
        if self.levels is not None:
            self.levels = str(Path(self.levels).expanduser().resolve())
            self.envs = [levels_env_name(self.levels)]  # the level set replaces the presets
            if self.levels_sha256 is None:
                self.levels_sha256 = level_set_digest(self.levels)
        else:
            self.envs = expand_envs(self.envs)
        self._seeds_memo: dict[tuple[Any, ...], list[int]] = {}
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistent field."""
        if not self.model:
            raise ValueError("--model is required")
        if self.backend is not None and self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose one of {', '.join(BACKENDS)}")
        if self.split not in SPLIT_OFFSETS:
            raise ValueError(f"unknown split {self.split!r}; choose one of {', '.join(SPLIT_OFFSETS)}")
        if self.seed_start < 0:
            raise ValueError(f"--seed-start must be >= 0, got {self.seed_start}")
        if self.episodes < 1:
            raise ValueError(f"--episodes must be >= 1, got {self.episodes}")
        if self.seed_start + self.episodes > SPLIT_SIZE:
            raise ValueError(f"seeds {self.seed_start}..{self.seed_start + self.episodes - 1} fall outside "
                             f"the split (0..{SPLIT_SIZE - 1})")
        if self.concurrency < 1:
            raise ValueError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        if self.agent_seed < 0:  # numpy seeds are >= 0: a negative one failed every episode of the run
            raise ValueError(f"--agent-seed must be >= 0, got {self.agent_seed}")
        check_request_limits(self.timeout, self.requests_per_second)
        if self.max_retries < 0:
            raise ValueError(f"--max-retries must be >= 0, got {self.max_retries}")
        for url in self.base_urls:
            check_base_url(url)
        # Written as "not (in range)" so that nan, which fails every comparison, is refused too.
        if not 0.0 <= self.sampling.temperature < math.inf:
            raise ValueError(f"--temperature must be a finite number >= 0, got {self.sampling.temperature}")
        if not 0.0 < self.sampling.top_p <= 1.0:
            raise ValueError(f"--top-p must be in (0, 1], got {self.sampling.top_p}")
        if self.sampling.max_tokens < 1:
            raise ValueError(f"--max-tokens must be >= 1, got {self.sampling.max_tokens}")
        if self.shard is not None:
            parse_shard(f"{self.shard[0]}/{self.shard[1]}")
        if self.levels is None and self.levels_limit is not None:
            raise ValueError("--levels-limit needs --levels")
        if self.levels is None and self.levels_sha256 is not None:
            raise ValueError("levels_sha256 is the hash of a level set; it needs levels")
        if self.levels_limit is not None and self.levels_limit < 1:
            raise ValueError(f"--levels-limit must be >= 1, got {self.levels_limit}")
        if self.levels is not None and self.env_configs:
            raise ValueError("--env-config does not apply to --levels (a level set fixes the levels)")
        unknown = set(self.env_configs) - set(self.envs)
        if unknown:
            raise ValueError(f"env_configs given for envs not in the run: {sorted(unknown)}")
        backend = self.resolved_backend()
        if self.model_args and backend not in ("vllm", "hf"):
            raise ValueError(f"--model-args is for the vllm and hf backends, not {backend}")
        if backend in ("vllm", "hf") and self.model in BUILTIN_MODELS and not Path(self.model).exists():
            raise ValueError(f"--model {self.model} is a built-in agent: drop --backend {backend} (it loads a "
                             "checkpoint; built-ins play on the builtin backend)")
        if backend == "builtin" and self.model not in BUILTIN_MODELS:
            raise ValueError(f"the builtin backend plays {'/'.join(BUILTIN_MODELS)}, not {self.model!r}")
        if backend == "openai" and not self.base_urls and not self.local_server:
            raise ValueError("the openai backend needs --base-url (or --local-server)")
        if self.local_server and self.base_urls:
            raise ValueError("--local-server starts its own endpoint; drop --base-url")
        if self.server_args and not self.local_server:
            raise ValueError("--server-arg passes options to the server --local-server starts; it needs --local-server")

    def check_runnable(self) -> None:
        """Raise ``ValueError`` for settings that only fail once played: a game config that does not
        build, a protocol a game refuses (symbols it does not draw), a local checkpoint that does not exist.

        Run before a run directory is made. It is not part of :meth:`validate` because a stored
        config must stay readable after, say, its checkpoint was deleted.
        """
        if self.samples != 1:
            raise ValueError(f"samples={self.samples}: ragen-eval plays each level once; only ragen-train's saved "
                             "rollouts hold several episodes per level")
        backend = self.resolved_backend()
        if backend in ("vllm", "hf") and self.model != DEFAULT_MODEL and looks_like_local_path(self.model) \
                and not Path(self.model).expanduser().exists():
            raise ValueError(f"--model {self.model}: no such local checkpoint directory (the {backend} backend "
                             "reads a path, or a hub id of the form ORG/NAME)")
        for env in self.envs:
            self._check_game(env)
            self.seeds(env)  # a split too small for --episodes fails here, naming the env

    def _check_game(self, env: str) -> None:
        """Build ``env``'s game and render its intro with the run's protocol, as the first turn of each episode
        does, so a game config, level file or protocol the game refuses fails here, naming its option; a level
        set is also read and certified, and must hold the levels asked for. Generates no level."""
        preset, overrides = self.game_of(env)
        option = f"--levels {self.levels}" if self.levels is not None else f"--env-config {env}"
        try:
            game = make_env(preset, overrides)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{option}: {err}") from None
        with closing(game):
            if self.levels is not None:
                self._check_level_set_size(len(game.unwrapped.level_set))
            try:
                render_intro(game.unwrapped, self.protocol)
            except (ValueError, TypeError, KeyError) as err:
                raise ValueError(f"--protocol: {env} cannot be played with it: {err}") from None

    def _check_level_set_size(self, size: int) -> None:
        """Refuse a level set that holds fewer levels than ``seed_start + episodes``."""
        if self.seed_start + self.episodes > size:
            raise ValueError(f"--levels {self.levels}: levels {self.seed_start}..{self.seed_start + self.episodes - 1} "
                             f"were asked for, but the set holds {size} (0..{size - 1})"
                             + (f" after --levels-limit {self.levels_limit}" if self.levels_limit else "")
                             + "; lower --episodes or --seed-start")

    def levels_summary(self) -> dict[str, Any]:
        """What ``config.json`` states about the level set: path, hash, size, longest optimum and budget."""
        preset, overrides = self.game_of(self.envs[0])
        game = make_env(preset, overrides).unwrapped
        level_set = game.level_set
        return {"path": self.levels, "sha256": self.levels_sha256, "levels": len(level_set),
                "files": len({e.file for e in level_set.entries}), "longest_optimum": level_set.longest_optimum,
                "budget": dict(game.text_defaults)}

    def game_of(self, env: str) -> tuple[str, dict[str, Any]]:
        """The preset and game-config overrides that play ``env`` (a level set: Sokoban on its levels)."""
        if self.levels is not None and env == self.envs[0]:
            # No preset budget: the set's own (its longest certified optimum, at least 10 actions) applies.
            overrides: dict[str, Any] = {"levels": self.levels, "max_actions_per_episode": None}
            if self.levels_limit is not None:
                overrides["levels_limit"] = self.levels_limit
            return LEVELS_PRESET, overrides
        return env, dict(self.env_configs.get(env, {}))

    def resolved_backend(self) -> str:
        """The backend this run uses once defaults are applied."""
        if self.backend is not None:
            return self.backend
        if self.base_urls or self.local_server:
            return "openai"
        if self.model in BUILTIN_MODELS:
            return "builtin"
        if self.model == DEFAULT_MODEL:
            return "hf"
        raise ValueError(f"cannot tell how to reach model {self.model!r}: give --base-url URL, "
                         "--local-server, or --backend vllm|hf for a local checkpoint")

    def seeds(self, env: str) -> list[int]:
        """The seeds this run plays in ``env`` (before sharding): the first ``episodes`` seeds of the split
        from index ``seed_start`` whose levels belong to the split (``ragen_envs.split_seeds``), so they
        differ between envs."""
        if self.levels is not None:
            return list(range(self.seed_start, self.seed_start + self.episodes))  # level i of the set
        overrides = self.env_configs.get(env, {})
        key = (env, self.split, self.episodes, self.seed_start, repr(sorted(overrides.items())))
        # work_items() is asked for by every resume check and record listing, and finding a split's
        # seeds generates about ten levels per seed, so each env's list is found once per config.
        if key not in self._seeds_memo:
            self._seeds_memo[key] = split_seeds(self.split, self.episodes, self.seed_start, env=env,
                                                env_config=overrides)
        return list(self._seeds_memo[key])

    def work_items(self) -> list[tuple[str, int]]:
        """(env, seed) pairs this run (this shard) must finish, in a fixed order."""
        items = [(env, seed) for env in self.envs for seed in self.seeds(env)]
        if self.shard is None:
            return items
        i, n = self.shard
        return items[i::n]

    def run_name(self) -> str:
        """Default run directory name: ``<model>__<backend>__<split>`` (plus ``__shard-i-of-n``)."""
        where = self.split if self.levels is None else model_slug(self.envs[0].replace(":", "-"))
        name = f"{model_slug(self.model)}__{self.resolved_backend()}__{where}"
        if self.shard is not None:
            name += f"__shard-{self.shard[0]}-of-{self.shard[1]}"
        return name

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form without secrets: the key's variable *name*, URLs without credentials or query,
        server arguments with key-like values as ``***`` (:func:`ragen_eval.redaction.redact_args`), model
        arguments with secrets as ``***`` (:func:`ragen_eval.redaction.redact_mapping`).

        :meth:`identity` is taken from this form, so a secret never decides whether a run resumes: the same
        run with the same or another token resumes, and a config read back from ``config.json`` matches.
        """
        data = asdict(self)
        data["model_args"] = redact_mapping(self.model_args)
        data["protocol"] = non_default_fields(self.protocol)
        data["backend"] = self.resolved_backend()
        data["base_urls"] = [redact_url(u) for u in self.base_urls]
        data["server_args"] = redact_args(self.server_args)
        data["shard"] = list(self.shard) if self.shard is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalConfig:
        """Inverse of :meth:`to_dict`; unknown keys raise ``ValueError``, values of the wrong type ``TypeError``."""
        return config_from_dict(cls, data)

    def identity(self) -> dict[str, Any]:
        """The fields that decide the results; two runs may share a directory only if these match."""
        data = self.to_dict()
        for key in _IDENTITY_EXCLUDED:
            data.pop(key, None)
        return data
