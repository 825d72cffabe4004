"""Judge mode end to end: a model and a judge, both behind ``ragen-eval serve`` on loopback HTTP.

The played model is an in-process agent that always writes the same three position claims (one
that depends on the level, one always true, one always false); the
judge is an in-process agent that always answers the same claim JSON. Both are served through
``ragen_eval.serve`` and reached through the OpenAI client that ``--model``/``--judge-model``
build, so the whole path runs: play, judge, ``judge.jsonl``, summary, table, leaderboard, show.
Expected figures are recomputed here from the recorded states, independently of the scorer.
"""

from __future__ import annotations

import csv
import json
import shutil
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_eval.agents.base import Agent, Completion, SamplingParams
from ragen_eval.cli import evaluate, judge, main
from ragen_eval.config import EvalConfig
from ragen_eval.consistency.judge import judge_metrics
from ragen_eval.run_dir import JUDGE_FILE, current_judgements, episode_digest
from ragen_eval.judging import JudgeConfig
from ragen_eval.jsonl_store import read_jsonl
from ragen_eval.serve import ServeConfig, serve_in_thread

THOUGHT = "I am at (4, 2). A wall is at (0, 0). The box is at (0, 0). I will go up."
JUDGE_REPLY = json.dumps({"claims": [  # the judge calls all three true, so it is wrong about the box
    {"text": "I am at (4, 2)", "claim": "at(player,4,2)", "verdict": True},
    {"text": "A wall is at (0, 0)", "claim": "at(wall, 0, 0)", "verdict": True},
    {"text": "The box is at (0, 0)", "claim": "at(box,0,0)", "verdict": True},
    {"text": "I will go up", "claim": "all_placed", "verdict": False},  # the judge's own (wrong) reading
    {"text": "nonsense", "claim": "teleport(me)", "verdict": True},  # outside the grammar: dropped
]})
EPISODES = 3


class ClaimingPlayer:
    """Always the same thought (three position claims, a plan) and the answer Up."""

    name = "claimer"

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None):
        return [Completion(text=f"<think>{THOUGHT}</think><answer>Up</answer>", finish_reason="stop")] * n

    async def aclose(self) -> None:
        return None


class FixedJudge:
    """Answers every judge request with :data:`JUDGE_REPLY`; counts the requests and what they said."""

    name = "fixed-judge"

    def __init__(self) -> None:
        self.requests: list[list[dict[str, str]]] = []
        self._lock = threading.Lock()

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None):
        with self._lock:
            self.requests.append(messages)
        return [Completion(text=JUDGE_REPLY, finish_reason="stop")] * n

    async def aclose(self) -> None:
        return None


@pytest.fixture()
def servers():
    """(player URL, judge URL, the judge agent): two loopback ``ragen-eval serve`` servers."""
    judge = FixedJudge()
    assert isinstance(judge, Agent) and isinstance(ClaimingPlayer(), Agent)
    with serve_in_thread(ServeConfig(port=0, model_name="claimer"), ClaimingPlayer()) as player_url, \
            serve_in_thread(ServeConfig(port=0, model_name="fixed-judge"), judge) as judge_url:
        yield player_url, judge_url, judge


def _evaluate(tmp_path, player_url, *extra):
    return main(["--model", "claimer", "--base-url", player_url, "--env", "sokoban", "--episodes", str(EPISODES),
                 "--out", str(tmp_path), "--no-progress", "--max-retries", "1", "--timeout", "20", *extra])


def _expected(records):
    """Rule verdicts recomputed from the states, per turn: (player, wall at (0, 0), box at (0, 0))."""
    facts = [(t["state_before"]["player"] == [4, 2], [0, 0] in t["state_before"]["walls"],
              [0, 0] in t["state_before"]["boxes"]) for r in records for t in r["turns"]]
    n = len(facts)
    return facts, {
        "claims_per_turn": 3.0, "turns_with_claims": 1.0, "claim_accuracy": sum(map(sum, facts)) / (3 * n),
        "hallucination_rate": sum(not all(f) for f in facts) / n, "plan_answer_agreement": 1.0,
    }


def test_evaluate_with_judge_over_http_stores_verdicts_and_agreement(tmp_path, servers, capsys):
    player_url, judge_url, judge = servers
    assert _evaluate(tmp_path, player_url, "--judge-model", "fixed-judge", "--judge-base-url", judge_url) == 0
    out, err = capsys.readouterr()
    run = tmp_path / "claimer__openai__test"
    records = read_jsonl(run / "episodes.jsonl")
    facts, expected = _expected(records)
    n_turns = len(facts)
    assert len(records) == EPISODES and n_turns == sum(len(r["turns"]) for r in records) >= EPISODES
    assert {v for f in facts for v in f} == {True, False}  # some claims are right, some wrong

    # One judge request per turn with a thought, holding the state and the thought.
    assert len(judge.requests) == n_turns
    assert all(THOUGHT in m[-1]["content"] and "player: (" in m[-1]["content"] for m in judge.requests)
    entries = read_jsonl(run / JUDGE_FILE)
    assert sorted((e["env"], e["seed"]) for e in entries) == sorted((r["env"], r["seed"]) for r in records)
    assert all(e["judge"]["model"] == "fixed-judge" and e["judge"]["backend"] == "openai" for e in entries)
    assert all(t["dropped"] == 1 and t["error"] is None and len(t["claims"]) == 4 for e in entries for t in e["turns"])

    summary = json.loads((run / "summary.json").read_text())
    for block in (summary["per_env"]["sokoban"], summary["overall"]):
        consistency = block["consistency"]
        for key, value in expected.items():
            assert consistency[key] == pytest.approx(value), key
        agree = block["judge_agreement"]
        # The judge calls the three positions true and adds all_placed, which the rules never extract.
        assert (agree["claims_both"], agree["claims_rule_only"], agree["claims_judge_only"]) == (
            3 * n_turns, 0, n_turns)
        assert agree["claim_overlap"] == pytest.approx(3 / 4)
        assert agree["verdicts_compared"] == 3 * n_turns
        assert agree["verdict_agreement"] == pytest.approx(expected["claim_accuracy"])
        assert agree["cohen_kappa"] == pytest.approx(0.0)  # a judge that always says true agrees only by chance
        assert agree["judge_claim_accuracy"] == pytest.approx(3 / 4) and agree["judge_errors"] == 0
        assert agree["judge_claims_per_turn"] == pytest.approx(4.0)
    assert summary["judge"]["episodes_judged"] == EPISODES and summary["judge"]["complete"]

    # The end-of-run table: a column per consistency metric and per agreement figure.
    for header in ("claims_per_turn", "claim_accuracy", "hallucination_rate", "turns_with_claims",
                   "plan_answer_agreement", "judge_agreement", "judge_kappa"):
        assert f" {header} " in out
    assert "judge fixed-judge (openai)" in out
    assert f"{expected['claim_accuracy']:.3f}" in out
    assert f"judge: {EPISODES} episodes, {n_turns} turns" in err

    # Rerunning plays and judges nothing, and duplicates no line.
    assert _evaluate(tmp_path, player_url, "--judge-model", "fixed-judge", "--judge-base-url", judge_url) == 0
    assert len(judge.requests) == n_turns and len(read_jsonl(run / JUDGE_FILE)) == EPISODES
    assert json.loads((run / "summary.json").read_text()) == summary

    # A run judged by one model refuses verdicts from another, through either command.
    assert main(["judge", str(run), "--judge-model", "other", "--judge-base-url", judge_url, "--no-progress"]) == 2
    assert "verdicts of another judge" in capsys.readouterr().err
    assert _evaluate(tmp_path, player_url, "--judge-model", "fixed-judge", "--judge-base-url", judge_url,
                     "--judge-max-tokens", "99") == 2
    assert "verdicts of another judge" in capsys.readouterr().err
    assert len(judge.requests) == n_turns


def test_judge_an_existing_run_resumes_after_a_torn_line(tmp_path, servers, capsys):
    player_url, judge_url, judge = servers
    assert _evaluate(tmp_path, player_url) == 0
    run = tmp_path / "claimer__openai__test"
    plain = json.loads((run / "summary.json").read_text())
    assert "judge_agreement" not in plain["overall"] and "judge" not in plain and judge.requests == []
    args = ["judge", str(run), "--judge-model", "fixed-judge", "--judge-base-url", judge_url, "--no-progress"]
    assert main(args) == 0
    n_turns = len(judge.requests)
    judged = json.loads((run / "summary.json").read_text())
    assert judged["overall"]["judge_agreement"]["verdicts_compared"] == 3 * n_turns
    # Everything the plain summary had is unchanged; judging only adds.
    assert {k: v for k, v in judged["overall"].items() if k != "judge_agreement"} == plain["overall"]

    # A judge killed mid-write leaves half a line: that episode (only) is judged again.
    path = run / JUDGE_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    last_turns = len(json.loads(lines[-1])["turns"])
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    assert main(args) == 0
    assert len(judge.requests) == n_turns + last_turns
    assert len(read_jsonl(path)) == EPISODES
    assert json.loads((run / "summary.json").read_text()) == judged
    capsys.readouterr()

    # show: the summary with judge columns, and a transcript with every claim marked and its cell.
    assert main(["show", str(run)]) == 0
    assert "judge_agreement" in capsys.readouterr().out
    record = read_jsonl(run / "episodes.jsonl")[0]
    assert main(["show", str(run), "--episode", f"sokoban:{record['seed']}"]) == 0
    shown = capsys.readouterr().out
    facts, _ = _expected([record])
    for player, wall, box in facts:
        mark = {True: "TRUE", False: "FALSE"}
        assert (f"I am at (4, 2) [{mark[player]} at(player,4,2) cell (4,2)]. "
                f"A wall is at (0, 0) [{mark[wall]} at(wall,0,0) cell (0,0)]. "
                f"The box is at (0, 0) [{mark[box]} at(box,0,0) cell (0,0)]. I will go up.") in shown
    assert shown.count("judge: 4 claims, 1 outside the grammar") == len(facts)
    assert "plan ['up'] agrees with the answer ['up']" in shown
    assert "[FALSE all_placed] 'I will go up' (rules: not extracted)" in shown
    assert "[TRUE at(box,0,0)] 'The box is at (0, 0)' (rules: FALSE)" in shown


def test_failed_verdicts_cost_turns_not_the_run_and_retry_errors_redoes_them(tmp_path, servers, capsys):
    player_url, _, _ = servers
    assert _evaluate(tmp_path, player_url) == 0
    run = tmp_path / "claimer__openai__test"
    flaky_judge, clean_judge = FixedJudge(), FixedJudge()
    faulty = ServeConfig(port=0, model_name="fixed-judge", failure_rate=0.5, fault_seed=1)
    with serve_in_thread(faulty, flaky_judge) as flaky_url, \
            serve_in_thread(ServeConfig(port=0, model_name="fixed-judge"), clean_judge) as clean_url:
        args = ["judge", str(run), "--judge-model", "fixed-judge", "--no-progress", "--max-retries", "0"]
        assert main([*args, "--judge-base-url", flaky_url]) == 0
        out, err = capsys.readouterr()
        first = read_jsonl(run / JUDGE_FILE)
        failed = [t for e in first for t in e["turns"] if t["error"]]
        n_turns = sum(len(e["turns"]) for e in first)
        # Turns with a thought in the episodes that had a failure: what --retry-errors must resend.
        to_redo = sum(len(e["turns"]) for e in first if any(t["error"] for t in e["turns"]))
        assert 0 < len(failed) < n_turns and all(t["claims"] == [] for t in failed)
        summary = json.loads((run / "summary.json").read_text())
        agree = summary["overall"]["judge_agreement"]
        # Failed turns are counted, and only the answered ones are paired.
        assert agree["judge_errors"] == len(failed) and agree["n_turns"] == n_turns - len(failed)
        assert agree["claims_rule_only"] == 0 and agree["claims_both"] == 3 * (n_turns - len(failed))
        assert f"{len(failed)} turns without verdicts" in out and f"{len(failed)} turns without verdicts" in err
        # Without --retry-errors a rerun keeps them; with it, only the episodes with a failure are re-judged.
        assert main([*args, "--judge-base-url", clean_url]) == 0 and clean_judge.requests == []
        assert main([*args, "--judge-base-url", clean_url, "--retry-errors"]) == 0
    entries = read_jsonl(run / JUDGE_FILE)
    assert len(entries) == EPISODES and not any(t["error"] for e in entries for t in e["turns"])
    assert len(clean_judge.requests) == to_redo
    assert json.loads((run / "summary.json").read_text())["overall"]["judge_agreement"]["judge_errors"] == 0


def test_a_judge_that_gives_no_verdict_at_all_fails_the_command(tmp_path, servers, capsys):
    # Before, `judge` and `evaluate --judge-model` exited 0 when every judge request failed.
    _, judge_url, _ = servers
    with socket.socket() as sock:  # a loopback port that was free a moment ago: connecting is refused
        sock.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    played = ["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(tmp_path), "--no-progress"]
    judged = ["--judge-model", "fixed-judge", "--max-retries", "0", "--timeout", "5"]
    assert main([*played, *judged, "--judge-base-url", down]) == 1
    run = tmp_path / "oracle__builtin__test"
    turns = sum(len(e["turns"]) for e in read_jsonl(run / JUDGE_FILE))
    err = capsys.readouterr().err
    assert (f"ragen-eval evaluate: error: every turn sent to the judge ({turns} of {turns}) got no verdict, so the "
            f"judge figures measure nothing; most common ({turns}): connection refused by ") in err
    assert len(read_jsonl(run / "episodes.jsonl")) == 2  # the episodes themselves are kept
    # The verdict is about the run: a rerun that judges nothing new fails again, as does re-judging to no avail.
    again = ["judge", str(run), *judged, "--no-progress"]
    assert main([*again, "--judge-base-url", down]) == 1
    assert main([*again, "--judge-base-url", down, "--retry-errors"]) == 1
    assert f"ragen-eval judge: error: every turn sent to the judge ({turns} of {turns})" in capsys.readouterr().err
    # A judge that answers clears it.
    assert main([*again, "--judge-base-url", judge_url, "--retry-errors"]) == 0
    assert "got no verdict" not in capsys.readouterr().err


def test_a_secret_in_judge_model_args_is_never_stored_and_the_same_judge_resumes(tmp_path):
    # Before, every judge.jsonl line and summary.json held the judge's model args as given.
    token = "hf_0123456789abcdefSECRET"
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    run = tmp_path / "oracle__builtin__test"
    agent = FixedJudge()
    for key in (token, "hf_another0123456789token"):  # a new token is the same judge
        config = JudgeConfig(model="judge", backend="hf", model_args={"hf_token": key, "dtype": "float32"})
        summary, _ = judge(run, config, agent=agent, progress=False)
        assert summary["judge"]["model_args"] == {"hf_token": "***", "dtype": "float32"}
    assert len(agent.requests) == sum(len(r["turns"]) for r in read_jsonl(run / "episodes.jsonl"))  # judged once
    assert all(token not in path.read_text() for path in run.iterdir() if path.is_file())


def test_leaderboard_has_consistency_and_judge_columns(tmp_path, servers, capsys):
    player_url, judge_url, _ = servers
    assert _evaluate(tmp_path, player_url, "--judge-model", "fixed-judge", "--judge-base-url", judge_url) == 0
    run = tmp_path / "claimer__openai__test"
    summary = json.loads((run / "summary.json").read_text())
    capsys.readouterr()
    assert main(["baselines", str(run), "--out", str(tmp_path / "baselines"), "--no-progress"]) == 0
    baselines = capsys.readouterr().out.split()
    assert main(["leaderboard", str(run), *baselines, "--out", str(tmp_path / "lb")]) == 0
    rows = list(csv.DictReader((tmp_path / "lb" / "leaderboard.csv").open()))
    mine = next(r for r in rows if r["model"] == "claimer")
    consistency, agree = summary["overall"]["consistency"], summary["overall"]["judge_agreement"]
    assert mine["claims_per_turn"] == f"{consistency['claims_per_turn']:.2f}"
    for key in ("claim_accuracy", "hallucination_rate", "turns_with_claims", "plan_answer_agreement"):
        assert mine[key] == f"{consistency[key]:.3f}", key
    assert mine["judge"] == "fixed-judge" and mine["judge_agreement"] == f"{agree['verdict_agreement']:.3f}"
    # The baselines were not judged: their judge cells are empty, not zero.
    assert {r["judge"] for r in rows if r["model"] != "claimer"} == {"-"}
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    for header in ("claims_per_turn", "turns_with_claims", "judge_agreement", "judge_kappa"):
        assert f"<th>{header}</th>" in html
    # the headline's consistency column is the claim accuracy of the full table
    headline = (tmp_path / "lb" / "leaderboard.md").read_text()
    claimer = next(line for line in headline.splitlines() if line.startswith("| claimer "))
    assert claimer.rstrip(" |").split("|")[-1].strip() == mine["claim_accuracy"]


def test_merge_keeps_the_verdicts_of_judged_shards(tmp_path, servers, capsys):
    _, judge_url, judge = servers
    shards = []
    for i in range(2):
        assert main(["--model", "oracle", "--env", "bandit,sokoban", "--episodes", "2", "--shard", f"{i}/2",
                     "--out", str(tmp_path), "--no-progress"]) == 0
        shards.append(str(tmp_path / f"oracle__builtin__test__shard-{i}-of-2"))
        assert main(["judge", shards[-1], "--judge-model", "fixed-judge", "--judge-base-url", judge_url,
                     "--no-progress"]) == 0
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    merged = tmp_path / "merged"
    assert len(read_jsonl(merged / JUDGE_FILE)) == 4
    summary = json.loads((merged / "summary.json").read_text())
    turns = sum(len(r["turns"]) for r in read_jsonl(merged / "episodes.jsonl"))
    assert summary["judge"]["complete"] and len(judge.requests) == turns
    # The oracle's thoughts make no claim the rules extract, so every judge claim is judge-only.
    agree = summary["overall"]["judge_agreement"]
    assert (agree["claims_both"], agree["claims_judge_only"], agree["verdict_agreement"]) == (0, 4 * turns, None)


def test_judge_options_are_checked_before_anything_runs(tmp_path, capsys):
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "1", "--out", str(tmp_path),
                 "--judge-model", "j"]) == 2
    assert "--judge-base-url" in capsys.readouterr().err
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "1", "--out", str(tmp_path),
                 "--judge-base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "needs --judge-model" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing was played
    with pytest.raises(ValueError, match="cannot judge"):
        JudgeConfig(model="oracle", backend="builtin")
    with pytest.raises(ValueError, match="only for|not openai"):
        JudgeConfig(model="m", base_urls=["http://x/v1"], model_args={"dtype": "float32"})


def test_stale_verdicts_are_ignored_and_failed_turns_are_not_paired():
    record = {"env": "sokoban", "seed": 1, "turns": [{"think": "a"}]}
    entry = {"env": "sokoban", "seed": 1, "episode_digest": episode_digest(record), "turns": []}
    assert current_judgements([record], [entry]) == {("sokoban", 1): entry}
    replayed = {**record, "turns": [{"think": "b"}]}
    assert current_judgements([replayed], [entry]) == {}

    rule = [{"claims": [{"canonical": "at(box,1,1)", "verdict": True}]}] * 2
    ok = {"claims": [{"canonical": "at(box,1,1)", "verdict": False}], "error": None}
    failed = {"claims": [], "error": "HTTP 500"}
    stats = judge_metrics(rule, [ok, failed])
    # The failed turn is counted but not read as "the judge found no claims".
    assert stats["judge_errors"] == 1 and stats["n_turns"] == 1 and stats["claims_rule_only"] == 0
    assert stats["verdict_agreement"] == 0.0 and stats["judge_claim_accuracy"] == 0.0
    with pytest.raises(ValueError, match="judged turns"):
        judge_metrics(rule, [ok])


def test_a_local_hf_checkpoint_can_judge_and_its_garbage_costs_only_verdicts(tmp_path, tiny_model_dir, capsys):
    """``--judge-backend hf`` goes through ``make_agent`` like ``--backend hf``; a random tiny model
    answers no claim JSON, so every judged turn is recorded with an error, the run's episodes are unharmed,
    and the command exits 1: not one turn got a verdict."""
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    run = tmp_path / "oracle__builtin__test"
    before = json.loads((run / "summary.json").read_text())
    assert main(["judge", str(run), "--judge-backend", "hf", "--judge-model", str(tiny_model_dir),
                 "--judge-max-tokens", "8", "--no-progress"]) == 1
    entries = read_jsonl(run / JUDGE_FILE)
    assert len(entries) == 2 and all(e["judge"]["backend"] == "hf" for e in entries)
    assert all(t["error"] and t["claims"] == [] for e in entries for t in e["turns"])
    after = json.loads((run / "summary.json").read_text())
    assert after["overall"]["judge_agreement"]["judge_errors"] == sum(len(e["turns"]) for e in entries)
    assert after["overall"]["success_rate"] == before["overall"]["success_rate"] == 1.0
    assert "turns without verdicts" in capsys.readouterr().err


UNUSED_URL = "http://127.0.0.1:9/v1"  # the agents below are passed in-process; nothing is sent here
FIXED_JUDGE = JudgeConfig(model="fixed-judge", base_urls=[UNUSED_URL])


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A played and fully judged run (in-process agents), to be copied and torn by the test below."""
    path = tmp_path_factory.mktemp("judged") / "run"
    config = EvalConfig(model="claimer", base_urls=[UNUSED_URL], envs=["sokoban", "bandit"], episodes=3)
    evaluate(config, path, agent=ClaimingPlayer(), progress=False, judge=FIXED_JUDGE, judge_agent=FixedJudge())
    return path


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(min_value=0.0, max_value=1.0))
def test_a_judge_file_torn_anywhere_resumes_to_the_same_verdicts(judged_run, tmp_path_factory, cut):
    work = tmp_path_factory.mktemp("torn") / "run"
    shutil.copytree(judged_run, work)
    data = (work / JUDGE_FILE).read_bytes()
    (work / JUDGE_FILE).write_bytes(data[: int(cut * len(data))])
    kept = read_jsonl(work / JUDGE_FILE)
    agent = FixedJudge()
    summary, stats = judge(work, FIXED_JUDGE, agent=agent, progress=False)
    complete = read_jsonl(judged_run / JUDGE_FILE)
    # Exactly the episodes lost are judged again, one request per turn, and nothing twice.
    assert stats.episodes == len(complete) - len(kept)
    assert len(agent.requests) == sum(len(e["turns"]) for e in complete) - sum(len(e["turns"]) for e in kept)
    assert sorted(read_jsonl(work / JUDGE_FILE), key=lambda e: (e["env"], e["seed"])) == sorted(
        complete, key=lambda e: (e["env"], e["seed"]))
    assert summary == json.loads((judged_run / "summary.json").read_text())
