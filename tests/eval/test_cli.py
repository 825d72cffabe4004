"""The ragen-eval command line, end to end: evaluate, resume, show, compare, shard+merge, ls, --local-server."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragen_envs.splits import split_seeds
from ragen_eval.cli import main
from ragen_eval.jsonl_store import read_jsonl


def _eval(tmp_path, *extra):
    return main(["--model", "oracle", "--env", "bandit,sokoban", "--episodes", "6", "--out", str(tmp_path),
                 "--no-progress", *extra])


def test_evaluate_prints_the_table_and_resume_does_no_work(tmp_path, capsys):
    assert _eval(tmp_path) == 0
    out, err = capsys.readouterr()
    assert "| bandit " in out and "| overall" in out and "oracle (builtin), split=test, 12/12 episodes" in out
    assert "this invocation: 12 episodes" in err
    assert _eval(tmp_path) == 0
    out2, err2 = capsys.readouterr()
    assert out2 == out and "this invocation" not in err2
    assert len(read_jsonl(tmp_path / "oracle__builtin__test" / "episodes.jsonl")) == 12


def test_changed_config_is_refused_with_a_clear_message(tmp_path, capsys):
    assert _eval(tmp_path) == 0
    capsys.readouterr()
    assert _eval(tmp_path, "--temperature", "0.9") == 2
    err = capsys.readouterr().err
    assert "different configuration" in err and "sampling.temperature: 0.5 -> 0.9" in err


def test_bad_arguments_are_reported_not_raised(tmp_path, capsys):
    assert main(["--model", "oracle", "--env", "chess", "--out", str(tmp_path)]) == 2
    assert "unknown environment 'chess'" in capsys.readouterr().err
    assert _eval(tmp_path, "--protocol", "bogus=1") == 2
    assert "unknown ProtocolConfig fields" in capsys.readouterr().err
    assert _eval(tmp_path, "--shard", "3/2") == 2
    assert "shard" in capsys.readouterr().err
    assert main(["--model", "gpt-4o", "--out", str(tmp_path)]) == 2
    assert "--base-url" in capsys.readouterr().err


def test_protocol_and_env_config_overrides_reach_the_episodes(tmp_path):
    assert main(["--model", "random", "--env", "sokoban", "--episodes", "2", "--out", str(tmp_path), "--no-progress",
                 "--protocol", "observation_format=coords", "--protocol", "max_turns=2",
                 "--env-config", "sokoban:num_boxes=2"]) == 0
    records = read_jsonl(tmp_path / "random__builtin__test" / "episodes.jsonl")
    assert all(r["protocol"]["observation_format"] == "coords" and r["num_turns"] <= 2 for r in records)
    assert all(len(r["turns"][0]["state_before"]["boxes"]) == 2 for r in records)


def test_show_summary_and_transcript(tmp_path, capsys):
    _eval(tmp_path)
    run = tmp_path / "oracle__builtin__test"
    capsys.readouterr()
    assert main(["show", str(run)]) == 0
    assert "| sokoban " in capsys.readouterr().out
    seed = split_seeds("test", 2, env="sokoban")[1]
    assert main(["show", str(run), "--episode", f"sokoban:{seed}"]) == 0
    transcript = capsys.readouterr().out
    assert f"# sokoban seed {seed}: success=True" in transcript and "<answer>" in transcript
    assert main(["show", str(run), "--episode", "sokoban:1"]) == 2


def test_compare_runs_on_the_same_levels(tmp_path, capsys):
    _eval(tmp_path)
    main(["--model", "random", "--env", "bandit,sokoban", "--episodes", "6", "--out", str(tmp_path), "--no-progress"])
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "oracle__builtin__test"), str(tmp_path / "random__builtin__test"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    oracle = json.loads((tmp_path / "oracle__builtin__test" / "summary.json").read_text())
    assert result["overall"]["pairs"] == 12
    assert result["overall"]["success_a"] == oracle["overall"]["success_rate"] > result["overall"]["success_b"]
    assert result["bandit"]["pairs"] == 6
    assert 0.0 < result["overall"]["mcnemar"]["p_value"] <= 1.0


def test_compare_refuses_runs_whose_env_configs_make_other_levels(tmp_path, capsys):
    """Seed i of a frozen lake at 6x6 is not seed i at 4x4: such runs once paired level i with level i."""
    for size, model in ((4, "oracle"), (6, "random")):
        sized = ["--env-config", f"frozenlake:height={size}", "--env-config", f"frozenlake:width={size}"]
        out = ["--out", str(tmp_path / str(size)), "--no-progress"]
        assert main(["--model", model, "--env", "frozenlake", "--episodes", "4", *sized, *out]) == 0
    capsys.readouterr()
    runs = [next((tmp_path / size).iterdir()) for size in ("4", "6")]
    assert main(["compare", *map(str, runs)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "frozenlake: env config {'height': 4, 'width': 4} against {'height': 6, 'width': 6}" in err


@pytest.fixture(scope="module")
def played_run(tmp_path_factory) -> Path:
    """A finished oracle run of two Bandit levels, to be copied and damaged."""
    out = tmp_path_factory.mktemp("played")
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(out), "--no-progress"]) == 0
    return out / "oracle__builtin__test"


@pytest.mark.parametrize("content, reason", [
    ("{}", "it holds no 'eval_config' object"),
    ("[1]", "it holds no 'eval_config' object"),
    ('{"eval_config": {"model": "random", "episodes": "x"}}', "EvalConfig.episodes must be an int, got 'x'"),
    ('{"eval_config": {"model": "random", "episodes": -1}}', "--episodes must be >= 1, got -1"),
    ('{"eval_config": {"model": "ra', "Unterminated string"),  # a write cut short
])
@pytest.mark.parametrize("command", ["show", "compare", "leaderboard", "evaluate"])
def test_a_corrupt_config_json_is_one_line_naming_the_file_in_every_command(tmp_path, capsys, played_run, content,
                                                                            reason, command):
    # Before, KeyError and TypeError escaped main() as tracebacks (exit 1).
    run = tmp_path / "oracle__builtin__test"
    shutil.copytree(played_run, run)
    (run / "config.json").write_text(content)
    argv = {"show": ["show", str(run)], "compare": ["compare", str(played_run), str(run)],
            "leaderboard": ["leaderboard", str(played_run), str(run), "--out", str(tmp_path / "board")],
            "evaluate": ["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(tmp_path),
                         "--no-progress"]}[command]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"error: {run / 'config.json'} is not a readable run config (" in lines[0]
    assert reason in lines[0]
    assert not (tmp_path / "board").exists() and (run / "config.json").read_text() == content


def test_shards_merge_to_the_unsharded_result(tmp_path, capsys):
    _eval(tmp_path / "full")
    for i in range(3):
        assert _eval(tmp_path / "shards", "--shard", f"{i}/3") == 0
    shards = [str(tmp_path / "shards" / f"oracle__builtin__test__shard-{i}-of-3") for i in range(3)]
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    full = json.loads((tmp_path / "full" / "oracle__builtin__test" / "summary.json").read_text())
    assert merged == full
    capsys.readouterr()
    assert main(["merge", *shards[:2], "--out", str(tmp_path / "m2")]) == 2
    assert "missing" in capsys.readouterr().err


def test_ls_lists_presets_and_splits(capsys):
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert "ragen/SimpleSokoban-v0" in out and "bandit_reversed" in out and "test (seeds from 200000000)" in out


def test_local_server_matches_in_process_oracle_and_never_writes_the_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGEN_TEST_KEY", "sk-never-write-me-123")
    common = ["--env", "sokoban,frozenlake_det,bandit", "--episodes", "8", "--no-progress"]
    assert main(["--model", "oracle", *common, "--out", str(tmp_path / "a")]) == 0
    assert main(["--model", "oracle", "--local-server", "--api-key-env", "RAGEN_TEST_KEY", *common,
                 "--out", str(tmp_path / "b")]) == 0
    local = read_jsonl(tmp_path / "b" / "oracle__openai__test" / "episodes.jsonl")
    builtin = read_jsonl(tmp_path / "a" / "oracle__builtin__test" / "episodes.jsonl")
    by_key = {(r["env"], r["seed"]): r["success"] for r in builtin}
    assert len(local) == 24 and all(by_key[(r["env"], r["seed"])] == r["success"] for r in local)
    assert all(t["completion"]["completion_tokens"] for r in local for t in r["turns"])
    for path in (tmp_path / "b").rglob("*"):
        if path.is_file():
            assert b"sk-never-write-me-123" not in path.read_bytes(), path


@pytest.mark.slow
def test_hf_backend_on_a_tiny_checkpoint_is_scored_end_to_end(tmp_path, tiny_model_dir, capsys):
    args = ["--backend", "hf", "--model", str(tiny_model_dir), "--env", "bandit,sokoban", "--episodes", "2",
            "--max-tokens", "16", "--concurrency", "4", "--out", str(tmp_path), "--no-progress", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["backend"] == "hf" and summary["complete"] and summary["episodes_done"] == 4
    records = read_jsonl(tmp_path / f"{tiny_model_dir.name}__hf__test" / "episodes.jsonl")
    # A random tiny model writes garbage: it must be scored (format errors, truncation), never crash.
    turns = [t for r in records for t in r["turns"]]
    assert turns and all(t["completion"]["completion_tokens"] is not None for t in turns)
    assert summary["overall"]["format_error_rate"] == sum(not t["format_ok"] for t in turns) / len(turns)
    with pytest.raises(SystemExit):
        main(["--backend", "hf", "--model", str(tiny_model_dir), "--model-args"])  # argparse: value missing


@pytest.mark.vllm
def test_vllm_backend_on_a_tiny_checkpoint_is_scored_end_to_end(tmp_path, tiny_model_dir, capsys, monkeypatch):
    pytest.importorskip("vllm")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ["--backend", "vllm", "--model", str(tiny_model_dir), "--env", "bandit,sokoban", "--episodes", "4",
            "--max-tokens", "32", "--out", str(tmp_path), "--no-progress",
            "--model-args", "dtype=float32", "--model-args", "max_model_len=2048",
            "--model-args", "enforce_eager=true", "--model-args", "gpu_memory_utilization=0.2"]
    assert main(args) == 0
    run = tmp_path / f"{tiny_model_dir.name}__vllm__test"
    summary = json.loads((run / "summary.json").read_text())  # vLLM logs to stdout too
    assert summary["backend"] == "vllm" and summary["complete"] and summary["episodes_done"] == 8
    records = read_jsonl(run / "episodes.jsonl")
    assert all(t["completion"]["completion_tokens"] for r in records for t in r["turns"])


def test_several_base_urls_share_the_load_and_faults_do_not_change_results(tmp_path, capsys):
    import httpx

    from ragen_eval.serve import ServeConfig, serve_in_thread

    common = ["--model", "oracle", "--env", "sokoban,bandit", "--episodes", "8", "--no-progress",
              "--max-retries", "8", "--timeout", "5"]
    clean = ServeConfig(agent="oracle", port=0)
    faulty = ServeConfig(agent="oracle", port=0, failure_rate=0.2, rate_limit_rate=0.1, retry_after=0.05,
                         malformed_rate=0.05, empty_choices_rate=0.05, fault_seed=1)
    with serve_in_thread(clean) as url_a, serve_in_thread(faulty) as url_b:
        assert main([*common, "--base-url", url_a, "--base-url", url_b, "--out", str(tmp_path / "two")]) == 0
        served = [httpx.get(url.removesuffix("/v1") + "/v1/stats").json() for url in (url_a, url_b)]
    assert all(sum(v for v in counts.values() if isinstance(v, int)) > 0 for counts in served)
    assert main([*common[:-4], "--out", str(tmp_path / "builtin")]) == 0
    via_http = json.loads((tmp_path / "two" / "oracle__openai__test" / "summary.json").read_text())
    in_process = json.loads((tmp_path / "builtin" / "oracle__builtin__test" / "summary.json").read_text())
    assert via_http["overall"]["errors"] == 0
    for env in ("sokoban", "bandit"):
        assert via_http["per_env"][env]["successes"] == in_process["per_env"][env]["successes"]


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; PR_SET_PDEATHSIG is Linux-only")
def test_killing_the_harness_also_stops_its_local_server(tmp_path):
    args = [sys.executable, "-m", "ragen_eval.cli", "--model", "random", "--local-server", "--env", "bandit",
            "--episodes", "100000", "--server-arg=--latency=0.05", "--out", str(tmp_path), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    episodes = tmp_path / "random__openai__test" / "episodes.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (episodes.exists() and episodes.stat().st_size):
        time.sleep(0.05)
    servers = _children(proc.pid)
    assert servers, "the local server was not started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def alive() -> list[int]:
        return [pid for pid in servers
                if Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and alive():
        time.sleep(0.05)
    orphans = alive()
    for pid in orphans:  # do not leave a server behind if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not orphans


def _parsers():
    """``ragen-eval`` and each of its subcommands' parsers, by the name their help shows."""
    from ragen_eval.cli import build_parser

    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"ragen-eval": parser, **{f"ragen-eval {name}": p for name, p in subcommands.choices.items()}}


def test_every_option_has_help_with_its_default_and_no_markup():
    from ragen_envs.help_format import HelpFormatter

    for prog, parser in _parsers().items():
        text = parser.format_help()
        assert "`" not in text and ":class:" not in text and ":func:" not in text, prog
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{prog} {action.option_strings[0]} has no help line"
            shown = HelpFormatter(prog)._get_help_string(action)
            if action.nargs != 0 and action.default not in (None, []):
                assert "default" in shown.lower(), f"{prog} {action.option_strings[0]} hides its default"
    evaluate = _parsers()["ragen-eval evaluate"].format_help()
    for flag, default in (("--temperature", 0.5), ("--top-p", 1.0), ("--max-tokens", 400), ("--concurrency", 32),
                          ("--split", "test")):
        line = evaluate[evaluate.index("\n  " + flag + " ") + 3:].split("\n  -")[0]
        assert f"(default: {default})" in " ".join(line.split()), flag


#: Shown examples that need a model server, a checkpoint or a judge: parsed, not run.
_NOT_RUN = ("--base-url", "vllm", "judge", "serve", "gpt-4o-mini", "path/to")


def test_every_shown_example_parses_and_the_cheap_ones_run(tmp_path, monkeypatch, capsys):
    import shlex

    from ragen_envs.help_format import shown_examples
    from ragen_eval.cli import SUBCOMMANDS, build_parser

    helps = {prog: parser.format_help() for prog, parser in _parsers().items()}
    assert all("examples:" in text for text in helps.values())
    # in subcommand order: evaluate makes the runs that show, compare and leaderboard read
    commands = list(dict.fromkeys(c for prog in [f"ragen-eval {s}" for s in SUBCOMMANDS] + ["ragen-eval"]
                                  for c in shown_examples(helps[prog], "ragen-eval")))
    assert len(commands) >= 15
    monkeypatch.chdir(tmp_path)
    ran = []
    for command in commands:
        argv = shlex.split(command)[1:]
        build_parser().parse_args(argv if argv[0] in SUBCOMMANDS else ["evaluate", *argv])
        if not any(marker in command for marker in _NOT_RUN):
            assert main([*argv, "--no-progress"] if "--model" in argv and "--print-config" not in argv
                        else argv) == 0, command
            ran.append(argv[0])
    capsys.readouterr()
    assert {"--model", "--help-config", "show", "compare", "merge", "leaderboard", "ls"} <= set(ran)
    assert (tmp_path / "runs" / "oracle-merged" / "summary.json").is_file()


def test_a_transcripts_turn_rewards_add_up_to_the_episode_reward():
    # A malformed reply earns the format penalty; `ragen-eval show --episode` printed +0.000 for it.
    import re

    from ragen_envs.text import TextEpisode
    from ragen_eval.transcripts import transcript

    episode = TextEpisode("bandit", seed=3)
    episode.step("no tags at all")
    record = episode.record()
    shown = [float(x) for x in re.findall(r"^executed .*? reward ([-+]\d+\.\d+)", transcript(record), re.M)]
    assert shown and sum(shown) == pytest.approx(record["total_reward"]) and shown[0] < 0
