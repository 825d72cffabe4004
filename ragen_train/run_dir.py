"""Run directories of ``ragen-train``: the default name, the writer's lock, the config check on rerun.

- The default name ``{env}__{preset}__{seed}`` depends only on the config, so rerunning a command
  finds its directory again and resumes there (``run_name=...`` starts a fresh run elsewhere).
- One process writes a run directory at a time: :func:`open_run_dir` holds an exclusive ``flock``
  on ``<run_dir>/.lock`` for the whole run (:class:`ragen_eval.jsonl_store.ExclusiveLock`, the lock of
  ``ragen-eval`` run directories). The OS drops it when the holder dies, even by SIGKILL, so a
  stale lock never needs clearing by hand.
- A directory that already holds ``config.yaml`` is reopened only with the same config, apart from
  :data:`RERUN_FIELDS`. ``allow_config_change=true`` overrides that; the old config is then kept as
  ``config.until_step_NNNNNN.yaml`` before the new one is written, never overwritten in silence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from ragen_envs import get_preset
from ragen_envs.config_dicts import field_default, non_default_fields
from ragen_eval.jsonl_store import ExclusiveLock, LockBusyError
from ragen_train.checkpoint import latest_checkpoint
from ragen_train.config import TrainConfig, read_yaml_mapping, save_config
from ragen_train.distributed import DistInfo, broadcast_object
from ragen_train.run_log import METRICS_FILE, read_metrics

LOCK_FILE = ".lock"
CONFIG_FILE = "config.yaml"

#: Fields a rerun may change without changing what the run learns: where the directory is, how
#: far to train, how often to log, plot and save, and on which device.
RERUN_FIELDS = frozenset({"run_name", "output_dir", "total_steps", "resume", "allow_config_change", "device",
                          "log_every", "plot_every", "save_every", "keep_checkpoints", "save_rollouts"})


class RunDirError(RuntimeError):
    """The run directory cannot be used: another process writes it, or it holds a different config."""


def default_run_name(config: TrainConfig) -> str:
    """``{env}__{preset}__{seed}`` with the env's preset name (an id like ``ragen/Bandit-v0`` has a slash);
    a mixture's names joined by ``+``."""
    return f"{'+'.join(get_preset(game.name).name for game in config.games())}__{config.preset}__{config.seed}"


def run_dir_path(config: TrainConfig) -> Path:
    """Where ``config``'s run lives: ``output_dir / (run_name or the default name)``."""
    return Path(config.output_dir) / (config.run_name or default_run_name(config))


@contextlib.contextmanager
def open_run_dir(config: TrainConfig, info: DistInfo) -> Iterator[Path]:
    """Create or reopen the run directory, lock it and check or write its ``config.yaml``; yield its path.

    Rank 0 does the work; every rank raises the same :class:`RunDirError` if it fails, so no rank
    waits forever for another under ``torchrun``.
    """
    run_dir = Path(broadcast_object(info, str(run_dir_path(config))))
    lock = ExclusiveLock(run_dir / LOCK_FILE, f"run directory {run_dir} is in use by another ragen-train process; "
                         "wait for it to finish, or give this run another run_name")
    error: str | None = None
    if info.is_main:
        try:
            lock.acquire()
            _check_or_write_config(config, run_dir)
        except (LockBusyError, RunDirError) as exc:
            error = str(exc)
        except OSError as exc:  # output_dir at or under a file, or not writable
            error = f"run directory {run_dir} cannot be used: {exc}"
    error = broadcast_object(info, error)
    try:
        if error is not None:
            raise RunDirError(error)
        yield run_dir
    finally:
        lock.release()


def config_differences(stored: dict[str, Any], config: TrainConfig) -> list[str]:
    """``key: old -> new`` for each field, outside :data:`RERUN_FIELDS`, where ``config`` differs from
    a stored ``config.yaml`` (a field the stored file lacks counts at its default: it is newer than the run)."""
    import yaml

    current = yaml.safe_load(yaml.safe_dump(config.to_dict(), sort_keys=False))
    defaults = yaml.safe_load(yaml.safe_dump(_defaults(), sort_keys=False))
    out = []
    for key in current:
        if key in RERUN_FIELDS:
            continue
        old = stored.get(key, defaults[key])
        if old != current[key]:
            out.append(f"{key}: {old!r} -> {current[key]!r}")
    out.extend(f"{key}: {stored[key]!r} -> <no such field>" for key in stored if key not in current)
    return out


def _check_or_write_config(config: TrainConfig, run_dir: Path) -> None:
    try:  # a damaged metrics file is found now, not after the model has loaded
        read_metrics(run_dir / METRICS_FILE)
    except ValueError as exc:
        raise RunDirError(str(exc)) from None
    path = run_dir / CONFIG_FILE
    if path.exists():
        try:
            stored = read_yaml_mapping(path, "the run's config")
        except ValueError as exc:
            raise RunDirError(f"{exc}, so the run directory is damaged; restore the file or give a new run_name") \
                from None
        changes = config_differences(stored, config)
        if changes and not config.allow_config_change:
            raise RunDirError(
                f"run directory {run_dir} was started with a different config ({'; '.join(changes)}); rerun "
                "with the original settings to resume, give a new run_name for a fresh run, or set "
                "allow_config_change=true to resume with the new values")
        if changes:
            kept = _previous_config_path(run_dir)
            path.rename(kept)
            print(f"config changed on resume ({'; '.join(changes)}); the previous config is kept in {kept}",
                  flush=True)
    save_config(config, run_dir)


def _previous_config_path(run_dir: Path) -> Path:
    ckpt = latest_checkpoint(run_dir)
    step = int(ckpt.name.split("_")[1]) if ckpt is not None else 0
    path = run_dir / f"config.until_step_{step:06d}.yaml"
    n = 2
    while path.exists():  # changed twice without a new checkpoint in between: keep both
        path = run_dir / f"config.until_step_{step:06d}.{n}.yaml"
        n += 1
    return path


def _defaults() -> dict[str, Any]:
    """Each field's default in the form config.yaml stores it (a nested config: its non-default fields)."""
    defaults = {f.name: field_default(f) for f in fields(TrainConfig)}
    return {name: non_default_fields(value) if is_dataclass(value) else value for name, value in defaults.items()}
