"""The verifiers environment (``ragen_verifiers``), played by verifiers' own ``vf-eval``.

``vf-eval`` runs against ``ragen-eval serve`` on loopback: the served oracle must win every level,
and the served random agent (an answer is a pure function of the chat it is sent) must play every
level exactly as it does under ``ragen-eval --model random`` against the same server, which holds
only if verifiers sends the model the very chat ``TextEpisode`` writes. Every trace is also replayed
in process. Runs where the ``[verifiers]`` extra is installed (the ``verifiers`` profile of
scripts/smoke_profiles.sh); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1")
from pydantic import ValidationError  # noqa: E402  (verifiers brings pydantic)

from ragen_envs import split_seeds  # noqa: E402
from ragen_envs.text import TextEpisode  # noqa: E402
from ragen_eval.serve import ServeConfig, serve_in_thread  # noqa: E402
from ragen_verifiers import GameEnv, load_environment  # noqa: E402

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]


def test_tasks_are_the_split_levels_with_the_opening_chat():
    protocol = {"max_turns": 3, "format_penalty": -0.5}
    env = load_environment("frozenlake", split="val", seed_start=5, protocol=protocol)
    assert isinstance(env, GameEnv)
    tasks = list(env.taskset.take(6))
    seeds = [task.data.seed for task in tasks]
    assert seeds == split_seeds("val", 6, 5, env="frozenlake")
    for task in tasks:
        system, user = TextEpisode("frozenlake", task.data.seed, config=protocol).messages
        assert (task.data.system_prompt, task.data.prompt) == (system["content"], user["content"])
        assert task.data.name == f"frozenlake:{task.data.seed}" and task.data.protocol == protocol


def test_the_python_example_of_the_docs_prints_what_it_shows():
    page = (ROOT / "docs" / "integrations.md").read_text().split("\n## verifiers\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    shown = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == shown


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"env": "nope"}, "unknown environment 'nope'"),
    ({"protocol": {"context": "single"}}, "context must be 'full'"),
    ({"protocol": {"max_turns": 0}}, "max_turns"),
    ({"env_config": {"dim_room": "big"}}, "dim_room"),
    ({"split": "dev"}, "split"),
    # these passed validation (and vf-eval --dry-run), then failed on the first task
    ({"env": "visual_sokoban"}, "shows the model pictures"),
    ({"protocol": {"observation": "image"}}, "shows the model pictures"),
    ({"seed_start": 150_000_000}, "seed_start"),
])
def test_bad_settings_are_refused_before_any_task(kwargs, needle):
    with pytest.raises(ValidationError, match=needle):
        load_environment(**kwargs)


def _vf_eval(url: str, model: str, env: str, n: int, out: Path) -> list[dict]:
    """Run ``vf-eval`` on the first ``n`` test levels of ``env``; its traces, one per episode."""
    argv = [str(BIN / "vf-eval"), "ragen_verifiers", "--env.taskset.env", env, "-n", str(n), "-m", model,
            "--client.base-url", url, "-o", str(out), "--run.dir", "run", "--no-push", "--no-rich"]
    # The harness's chat program is prepared with uv, which the extra installs next to this Python.
    environ = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=environ)
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = [json.loads(line) for line in (out / "run" / "traces.jsonl").read_text().splitlines()]
    assert len(episodes) == n and all(episode["ok"] for episode in episodes), done.stderr[-3000:]
    return [trace for episode in episodes for trace in episode["traces"]]


def _replayed(trace: dict) -> TextEpisode:
    """The trace's replies played again in process; the model must have been sent exactly its chat."""
    data = trace["task"]["data"]
    episode = TextEpisode(data["env"], data["seed"], config=data["protocol"], env_config=data["env_config"])
    chat = [node["message"] for node in trace["nodes"]]
    finish = {call["node"]: call["finish_reason"] for call in trace["calls"]}
    for index, message in enumerate(chat):
        if message["role"] == "assistant":
            episode.step(message["content"], finish_reason=finish[index])
    assert chat == episode.history
    assert trace["info"]["ragen_record"] == json.loads(json.dumps(episode.record()))
    return episode


@pytest.mark.slow
def test_vf_eval_of_the_served_oracle_wins_every_level(tmp_path):
    with serve_in_thread(ServeConfig(port=0, agent="oracle")) as url:
        traces = _vf_eval(url, "oracle", "sokoban", 5, tmp_path)
    assert sorted(t["task"]["data"]["seed"] for t in traces) == split_seeds("test", 5, env="sokoban")
    turns = 0
    for trace in traces:
        episode = _replayed(trace)
        assert episode.success and trace["metrics"]["success"] == 1.0 and trace["metrics"]["format_errors"] == 0
        assert trace["rewards"]["ragen_reward"]["score"] == pytest.approx(episode.total_reward)
        turns += episode.turn
    assert turns > len(traces)  # some levels take more than one turn, so the chat really went back and forth


@pytest.mark.slow
def test_vf_eval_of_the_served_random_agent_plays_as_ragen_eval_does(tmp_path):
    n = 8
    with serve_in_thread(ServeConfig(port=0, agent="random")) as url:
        traces = _vf_eval(url, "random", "frozenlake", n, tmp_path / "vf")
        done = subprocess.run([str(BIN / "ragen-eval"), "--model", "random", "--base-url", url, "--env", "frozenlake",
                               "--episodes", str(n), "--out", str(tmp_path / "ragen"), "--run-name", "run",
                               "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = {r["seed"]: r for r in map(json.loads, (tmp_path / "ragen" / "run" / "episodes.jsonl").open())}
    theirs = {t["task"]["data"]["seed"]: t for t in traces}
    assert sorted(theirs) == sorted(ours)
    for seed, trace in theirs.items():
        episode = _replayed(trace)
        record = ours[seed]
        assert [t["response"] for t in record["turns"]] == [t["response"] for t in episode.record()["turns"]]
        assert (episode.success, episode.total_reward) == (record["success"], record["total_reward"])
        assert trace["metrics"]["success"] == float(record["success"])
    assert sum(t["metrics"]["success"] for t in traces) == sum(r["success"] for r in ours.values())
