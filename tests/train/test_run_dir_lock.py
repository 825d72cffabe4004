"""Run directories of ragen-train: one writer at a time, reruns resume, a changed config is refused,
and a torn metrics line does not stop a resume."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import yaml

from ragen_eval.jsonl_store import read_jsonl
from ragen_train.cli import main
from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.run_dir import RunDirError, config_differences, default_run_name, open_run_dir, run_dir_path
from ragen_train.run_log import MetricsLog, read_metrics

pytest.importorskip("transformers")

TINY_RUN = ["env=bandit", "env_groups=2", "group_size=2", "max_new_tokens=8", "micro_batch_size=2",
            "actor_lr=1e-3", "critic_lr=1e-3", "plot_every=0", "save_every=1"]


def _hold_lock(overrides: list[str]) -> subprocess.Popen:
    """Another process that opens the run directory and keeps it open until its stdin closes."""
    script = textwrap.dedent(f"""
        import sys
        from ragen_train.config import load_config
        from ragen_train.distributed import DistInfo
        from ragen_train.run_dir import open_run_dir
        with open_run_dir(load_config(None, {overrides!r}), DistInfo()):
            print("locked", flush=True)
            sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_run_on_a_locked_directory_stops_at_once(tmp_path, capsys):
    args = [f"output_dir={tmp_path}", *TINY_RUN, "total_steps=1"]
    holder = _hold_lock(args)
    try:
        assert main(["--out", str(tmp_path), *args[1:]]) == 2
        err = capsys.readouterr().err.strip()
        assert "in use by another ragen-train process" in err and len(err.splitlines()) == 1
        run = run_dir_path(load_config(None, args))
        assert not (run / "metrics.jsonl").exists() and not (run / "checkpoints").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # the holder is gone (the OS dropped its lock): the directory opens again
    with open_run_dir(load_config(None, args), DistInfo()) as run:
        assert run == run_dir_path(load_config(None, args))


def test_the_default_run_name_is_stable_and_uses_the_preset_name(tmp_path):
    config = load_config(None, ["env=ragen/SimpleSokoban-v0", "preset=starpo", "seed=3", f"output_dir={tmp_path}"])
    assert default_run_name(config) == "simple_sokoban__starpo__3"
    assert run_dir_path(config) == tmp_path / "simple_sokoban__starpo__3"
    assert run_dir_path(load_config(None, ["env=bandit", "run_name=fresh", f"output_dir={tmp_path}"])) == tmp_path / "fresh"


def test_a_changed_config_is_refused_and_config_yaml_kept(tmp_path, capsys):
    first = [f"output_dir={tmp_path}", *TINY_RUN, "total_steps=1"]
    with open_run_dir(load_config(None, first), DistInfo()) as run:
        pass
    written = (run / "config.yaml").read_text()
    assert main(["--out", str(tmp_path), *first[1:], "actor_lr=2e-3", "group_size=4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "actor_lr: 0.001 -> 0.002" in err and "group_size: 2 -> 4" in err and "allow_config_change=true" in err
    assert (run / "config.yaml").read_text() == written
    assert not (run / "metrics.jsonl").exists()
    # fields that do not change what is learned may differ on a rerun
    assert config_differences(yaml.safe_load(written), load_config(None, [*first, "total_steps=9", "log_every=3"])) == []


def test_allow_config_change_keeps_the_old_config_beside_the_new(tmp_path, capsys):
    first = [f"output_dir={tmp_path}", *TINY_RUN, "total_steps=1"]
    with open_run_dir(load_config(None, first), DistInfo()) as run:
        pass
    old = (run / "config.yaml").read_text()
    for n, lr in enumerate(["2e-3", "3e-3"]):
        with open_run_dir(load_config(None, [*first, f"actor_lr={lr}", "allow_config_change=true"]), DistInfo()):
            pass
        assert yaml.safe_load((run / "config.yaml").read_text())["actor_lr"] == float(lr)
    assert "config changed on resume (actor_lr: 0.001 -> 0.002)" in capsys.readouterr().out
    assert (run / "config.until_step_000000.yaml").read_text() == old
    assert yaml.safe_load((run / "config.until_step_000000.2.yaml").read_text())["actor_lr"] == 0.002


def test_a_torn_last_metrics_line_is_dropped_and_gaps_reported(tmp_path, capsys):
    rows = [{"step": 1, "rollout/success_rate": 0.5}, {"step": 2, "rollout/success_rate": 0.25}]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 3, "succ')
    assert read_metrics(path) == rows
    log = MetricsLog(tmp_path, start_step=2)
    assert log.rows == rows and log.missing_steps == []
    assert read_metrics(path) == rows and path.read_text().endswith("\n")
    log.log({"step": 3, "rollout/success_rate": 1.0})
    assert [r["step"] for r in read_metrics(path)] == [1, 2, 3]
    assert capsys.readouterr().err == ""

    path.write_text(json.dumps(rows[0]) + "\n")  # the row of step 2 was lost
    assert MetricsLog(tmp_path, start_step=3).missing_steps == [2, 3]
    err = capsys.readouterr().err
    assert "no rows for steps 2-3 of the 3 already trained" in err


def test_a_damaged_middle_line_is_the_one_line_exit_2_of_ragen_eval(tmp_path, capsys):
    args = [f"output_dir={tmp_path}", *TINY_RUN, "total_steps=1"]
    with open_run_dir(load_config(None, args), DistInfo()) as run:  # a run directory as a first run leaves it
        path = run / "metrics.jsonl"
    path.write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    message = f"{path}, line 2: not a JSON record; only a torn last line is repaired"
    with pytest.raises(ValueError) as raised:
        read_metrics(path)
    assert str(raised.value) == message
    with pytest.raises(ValueError) as raised:  # what ragen-eval says of a damaged episodes.jsonl
        read_jsonl(path)
    assert str(raised.value) == message
    # refused when the directory is opened, before any model is loaded
    assert main(["--out", str(tmp_path), *args[1:]]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"ragen-train: error: {message}"]
    assert sorted(p.name for p in run.iterdir()) == [".lock", "config.yaml", "metrics.jsonl"]


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/elsewhere", "a/b", ".", ".."])
def test_run_name_is_a_name_not_a_path(tmp_path, capsys, name):
    out = tmp_path / "deep" / "runs"
    assert main(["--out", str(out), f"run_name={name}", *TINY_RUN, "total_steps=1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ragen-train: error: run_name takes a directory name, not a path: {name!r} (use output_dir to choose the "
        "parent directory)"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_rerunning_the_same_command_resumes(tiny_model_dir, tmp_path, capsys):
    args = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", *TINY_RUN]
    assert main([*args, "total_steps=1"]) == 0
    assert main([*args, "total_steps=2"]) == 0
    out = capsys.readouterr().out
    run = tmp_path / "bandit__starpo-s__0"
    assert [p.name for p in tmp_path.iterdir()] == [run.name]
    assert "resumed from" in out and "step_000001 at step 1" in out
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [1, 2]


def test_the_lock_binds_within_one_process_and_is_released_on_exit(tmp_path):
    args = [f"output_dir={tmp_path}", *TINY_RUN, "total_steps=1"]
    with open_run_dir(load_config(None, args), DistInfo()):
        with pytest.raises(RunDirError, match="in use"):
            with open_run_dir(load_config(None, args), DistInfo()):
                pass
    with open_run_dir(load_config(None, args), DistInfo()):
        pass
