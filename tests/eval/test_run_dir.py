"""Run directories: append/resume, partial lines, refusal of a changed config, locking, shards, merge."""

from __future__ import annotations

import json

import pytest

from ragen_eval.config import EvalConfig
from ragen_eval.jsonl_store import read_jsonl
from ragen_eval.run_dir import ConfigMismatchError, RunDir, load_run, merge_runs


def _config(**overrides) -> EvalConfig:
    return EvalConfig(**{"model": "random", "envs": ["bandit", "frozenlake"], "episodes": 3, **overrides})


def _record(env: str, seed: int, **extra) -> dict:
    return {"env": env, "seed": seed, "success": seed % 2 == 0, "total_reward": float(seed % 3), "turns": [],
            **extra}


def test_append_then_resume_skips_finished_episodes(tmp_path):
    config = _config()
    items = config.work_items()
    with RunDir(tmp_path / "run", config) as run:
        assert run.pending() == items
        for env, seed in items[:4]:
            run.append(_record(env, seed))
    with RunDir(tmp_path / "run", config) as run:
        assert run.pending() == items[4:]
        assert [(r["env"], r["seed"]) for r in run.records()] == items[:4]
        with pytest.raises(ValueError, match="already recorded"):
            run.append(_record(*items[0]))
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["eval_config"]["model"] == "random" and "numpy" in stored["versions"]


def test_a_partial_last_line_is_cut_and_replayed(tmp_path):
    config = _config()
    items = config.work_items()
    with RunDir(tmp_path, config) as run:
        run.append(_record(*items[0]))
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(b'{"env": "bandit", "seed": 2000')  # what SIGKILL mid-write leaves
    assert len(read_jsonl(tmp_path / "episodes.jsonl")) == 1
    with RunDir(tmp_path, config) as run:
        assert run.pending() == items[1:]
        run.append(_record(*items[1]))
    lines = (tmp_path / "episodes.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["seed"] for line in lines] == [items[0][1], items[1][1]]


def test_changed_config_is_refused_with_the_difference_named(tmp_path):
    with RunDir(tmp_path, _config()):
        pass
    with pytest.raises(ConfigMismatchError, match=r"sampling\.temperature: 0\.5 -> 0\.9"):
        with RunDir(tmp_path, _config(sampling={"temperature": 0.9})):
            pass
    with pytest.raises(ConfigMismatchError, match="episodes: 3 -> 4"):
        RunDir(tmp_path, _config(episodes=4)).open()
    # Transport settings may change between attempts.
    with RunDir(tmp_path, _config(concurrency=1, timeout=1.0)):
        pass


def test_second_writer_is_locked_out(tmp_path):
    with RunDir(tmp_path, _config()):
        with pytest.raises(RuntimeError, match="in use"):
            RunDir(tmp_path, _config()).open()
    with RunDir(tmp_path, _config()):
        pass  # the lock is released on close


def test_retry_errors_replays_errored_episodes(tmp_path):
    config = _config()
    items = config.work_items()
    with RunDir(tmp_path, config) as run:
        run.append(_record(*items[0], error="HTTP 500 after 6 attempts"))
        run.append(_record(*items[1]))
    with RunDir(tmp_path, config) as run:
        assert run.pending() == items[2:]
    with RunDir(tmp_path, config, retry_errors=True) as run:
        assert run.pending() == [items[0], *items[2:]]
    assert len(read_jsonl(tmp_path / "episodes.jsonl")) == 1


def test_foreign_episode_is_an_error(tmp_path):
    with RunDir(tmp_path, _config()):
        pass
    with (tmp_path / "episodes.jsonl").open("a") as fh:
        fh.write(json.dumps(_record("sokoban", 200_000_000)) + "\n")
    with pytest.raises(ValueError, match="does not play"):
        RunDir(tmp_path, _config()).open()


def _write_shards(tmp_path, n, config=None, skip=None):
    base = config or _config()
    dirs = []
    for i in range(n):
        shard = EvalConfig.from_dict({**base.to_dict(), "shard": [i, n]})
        path = tmp_path / f"shard{i}"
        with RunDir(path, shard) as run:
            for env, seed in shard.work_items():
                if (env, seed) != skip:
                    run.append(_record(env, seed))
        dirs.append(path)
    return dirs


def test_merge_joins_shards_into_the_unsharded_run(tmp_path):
    dirs = _write_shards(tmp_path, 3)
    out = merge_runs(dirs, tmp_path / "merged")
    config, records = load_run(out)
    assert config.shard is None
    assert [(r["env"], r["seed"]) for r in records] == _config().work_items()


def test_merge_refuses_missing_duplicate_incomplete_and_mismatched_shards(tmp_path):
    dirs = _write_shards(tmp_path, 3)
    with pytest.raises(ValueError, match=r"shards \[2\] of 3 are missing"):
        merge_runs(dirs[:2], tmp_path / "m1")
    with pytest.raises(ValueError, match="given twice"):
        merge_runs([dirs[0], dirs[0], dirs[1]], tmp_path / "m2")
    holey = _write_shards(tmp_path / "holey", 2, skip=_config().work_items()[0])
    with pytest.raises(ValueError, match="incomplete"):
        merge_runs(holey, tmp_path / "m3")
    other = _write_shards(tmp_path / "other", 3, config=_config(agent_seed=1))
    with pytest.raises(ConfigMismatchError, match="agent_seed"):
        merge_runs([dirs[0], dirs[1], other[2]], tmp_path / "m4")
    with pytest.raises(FileNotFoundError, match="not a ragen-eval run"):
        merge_runs([tmp_path / "nothing"], tmp_path / "m5")


def test_a_changed_checkpoint_is_refused_on_resume(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"hidden_size": 128}')
    (ckpt / "model.safetensors").write_bytes(b"weights v1")
    config = _config(model=str(ckpt), backend="hf")
    with RunDir(tmp_path / "run", config) as run:
        run.append(_record(*config.work_items()[0]))
    with RunDir(tmp_path / "run", config) as run:  # same files: resumes
        assert len(run.records()) == 1
    (ckpt / "model.safetensors").write_bytes(b"weights v2")  # re-trained in place
    with pytest.raises(ConfigMismatchError, match=r"model_digest: \w+ -> \w+ \(the checkpoint's files changed\)"):
        RunDir(tmp_path / "run", config).open()


def test_checkpoint_digest_sees_retrained_weights_in_a_large_file(tmp_path):
    from ragen_eval.embedded_model import checkpoint_digest

    (tmp_path / "config.json").write_text("{}")
    weights = bytearray(3 << 20)  # larger than the two sampled MiB
    (tmp_path / "model.safetensors").write_bytes(bytes(weights))
    before = checkpoint_digest(str(tmp_path))
    weights[-1] = 1  # a changed last tensor
    (tmp_path / "model.safetensors").write_bytes(bytes(weights))
    assert checkpoint_digest(str(tmp_path)) != before
    assert checkpoint_digest("gpt-4o-mini") is None  # a served model has no local files
