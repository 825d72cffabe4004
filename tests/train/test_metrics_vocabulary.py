"""One metrics vocabulary: training rollouts are measured as ragen-eval measures a run, under grouped
names (``rollout/``, ``losses/``, ``time/``, ``eval/``); a step's rollouts can be opened with
``ragen-eval show``; run directories written with the old flat names still resume, plot and summarise."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragen_eval import summary as harness_summary
from ragen_eval.metrics import CONSISTENCY_KEYS, HEADLINE_KEYS
from ragen_train.run_log import PLOT_PANELS, MetricsLog, plot_metrics, read_metrics

from tests.script_modules import load_script

REPO = Path(__file__).resolve().parents[2]

#: Every key HEAD's trainer (before metric groups) could write in a row, and its grouped name.
OLD_TO_NEW = {
    "success": "rollout/success_rate", "reward_mean": "rollout/mean_reward", "reward_std": "rollout/reward_std",
    "in_group_std": "rollout/in_group_std", "format_error_rate": "rollout/format_error_rate",
    "think_words": "rollout/think_words_per_turn", "response_tokens": "rollout/completion_tokens_per_turn",
    "turns": "rollout/mean_turns", "overflowed": "rollout/overflowed", "claim_accuracy": "rollout/claim_accuracy",
    "hallucination_rate": "rollout/hallucination_rate", "plan_answer_agreement": "rollout/plan_answer_agreement",
    "hard_states_rescued": "rollout/hard_states_rescued", "kept_fraction": "rollout/kept_fraction",
    "policy_loss": "losses/policy_loss", "value_loss": "losses/value_loss", "entropy": "losses/entropy",
    "clip_fraction": "losses/clip_fraction", "clip_fraction_high": "losses/clip_fraction_high",
    "approx_kl": "losses/approx_kl", "kl_ref": "losses/kl_ref", "grad_norm_actor": "losses/grad_norm_actor",
    "grad_norm_critic": "losses/grad_norm_critic", "optimizer_steps": "losses/optimizer_steps",
    "weight_sync_s": "time/weight_sync_s", "rollout_s": "time/rollout_s", "update_s": "time/update_s",
    "step_cpu_s": "time/step_cpu_s", "rollout_tokens_per_s": "time/rollout_tokens_per_s",
    "update_tokens_per_s": "time/update_tokens_per_s", "eval/success": "eval/success_rate",
    "eval/reward_mean": "eval/mean_reward", "eval/format_error_rate": "eval/format_error_rate",
}


# --- rollout metrics are the harness's, computed by hand here -------------------------------------------


def _turn(think: str, tokens: int, ok: bool = True, reasoning: str | None = None) -> dict:
    return {"think": think, "reasoning": reasoning, "format_ok": ok, "actions_parsed": ["A"] if ok else [],
            "actions_executed": ["A"] if ok else [], "infos": [], "finish_reason": "stop",
            "completion": {"finish_reason": "stop", "completion_tokens": tokens}}


def test_rollout_metrics_are_the_harness_aggregation(monkeypatch):
    pytest.importorskip("torch")
    from ragen_train.rollout import RolloutBatch, Trajectory
    from ragen_train.trainer import rollout_metrics

    monkeypatch.setattr(harness_summary, "_consistency_functions", lambda: None)  # hand-built turns have no states

    def episode(group, seed, success, reward, turns, overflowed=False):
        record = {"env": "bandit", "seed": seed, "success": success, "total_reward": reward, "turns": turns,
                  "end_reason": "success" if success else "max_turns"}
        return Trajectory(group=group, record=record, overflowed=overflowed)

    batch = RolloutBatch([
        episode(0, 5, True, 1.0, [_turn("a b c", 10)]),
        episode(0, 5, False, -0.1, [_turn("", 4, ok=False), _turn("x y", 6)], overflowed=True),
        # provider reasoning beside <think> counts, as ragen-eval counts it (the trainer's own rule did not)
        episode(1, 7, False, 0.0, [_turn("one", 8, reasoning="r1 r2")]),
        episode(1, 7, True, 1.0, [_turn("p q r s t", 2)]),
    ], num_groups=2, group_size=2)
    row = rollout_metrics(batch)
    rewards = np.array([[1.0, -0.1], [0.0, 1.0]])
    expected = {
        "rollout/episodes": 4, "rollout/success_rate": 0.5, "rollout/mean_reward": 0.475,
        "rollout/format_error_rate": 1 / 5, "rollout/mean_turns": 5 / 4, "rollout/actions_per_turn": 4 / 5,
        "rollout/think_words_per_turn": (3 + 0 + 2 + 3 + 5) / 5, "rollout/completion_tokens_per_turn": 30 / 5,
        "rollout/reward_std": float(rewards.std()), "rollout/in_group_std": (0.55 + 0.5) / 2,
        "rollout/overflowed": 0.25,
    }
    for key, value in expected.items():
        assert row[key] == pytest.approx(value), key
    assert set(row) == {f"rollout/{k}" for k in HEADLINE_KEYS} | {
        "rollout/reward_std", "rollout/in_group_std", "rollout/overflowed"}


# --- an old-format run directory --------------------------------------------------------------------------


def _old_row(step: int, success: float) -> dict:
    """A metrics row as the trainer wrote it before metric groups (every key it could write)."""
    row = {"step": step, **{old: 0.5 for old in OLD_TO_NEW}, "alerts": "reward spread collapsed" if step == 11 else ""}
    row.update({"success": success, "claim_accuracy": None, "eval/success": success if step % 4 == 0 else None})
    return row


def _write_old_run(run: Path, successes: list[float]) -> list[dict]:
    run.mkdir()
    (run / "config.yaml").write_text("preset: starpo\nseed: 3\nenv: bandit\ntotal_steps: 12\n")
    rows = [_old_row(step, s) for step, s in enumerate(successes, 1)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    with (run / "metrics.csv").open("w", newline="") as handle:  # as the old MetricsLog wrote it
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return rows


SUCCESSES = [0.2, 0.9, 0.9, 0.9, 0.9, 0.9, 0.4, 0.1, 0.0, 0.0, 0.1, 0.0]


def test_an_old_run_directory_resumes_under_the_new_names(tmp_path):
    old = _write_old_run(tmp_path / "old", SUCCESSES)
    log = MetricsLog(tmp_path / "old", start_step=10)  # what a resume from checkpoint step 10 opens
    assert [r["step"] for r in log.rows] == list(range(1, 11))
    for before, after in zip(old, log.rows):
        assert set(after) == {"step", "alerts", *OLD_TO_NEW.values()}
        assert all(after[new] == before[old_name] for old_name, new in OLD_TO_NEW.items())
    log.log({"step": 11, "rollout/success_rate": 0.3, "losses/entropy": 1.0, "alerts": ""})
    header = (tmp_path / "old" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "rollout/success_rate" in header and "success" not in header and "eval/success" not in header
    reread = read_metrics(tmp_path / "old" / "metrics.jsonl")
    assert [r["rollout/success_rate"] for r in reread] == [*SUCCESSES[:10], 0.3]
    # every panel of metrics.png with a metric old runs logged finds its curves in the old rows
    old_panels = [keys for _, keys in PLOT_PANELS if set(keys) & set(OLD_TO_NEW.values())]
    assert len(old_panels) == len(PLOT_PANELS) - 1  # all but the reply signals, which are newer
    assert all(any(r.get(k) is not None for r in log.rows for k in keys) for keys in old_panels)
    assert plot_metrics(log.rows, tmp_path / "old" / "metrics.png").stat().st_size > 0


@pytest.fixture(scope="module")
def collapse_summary():
    return load_script(REPO / "experiments" / "baselines" / "collapse_summary.py")


def test_collapse_summary_reads_old_and_new_names_alike(collapse_summary, tmp_path):
    _write_old_run(tmp_path / "old", SUCCESSES)
    new = tmp_path / "new"
    new.mkdir()
    (new / "config.yaml").write_text((tmp_path / "old" / "config.yaml").read_text())
    log = MetricsLog(new)
    for step, s in enumerate(SUCCESSES, 1):
        log.log({"step": step, "rollout/success_rate": s, "eval/success_rate": s if step % 4 == 0 else None,
                 "alerts": "reward spread collapsed" if step == 11 else ""})
    a, b = (collapse_summary.summarize(run, 0.8, 0.5) for run in (tmp_path / "old", new))
    best5 = max(np.mean(SUCCESSES[i:i + 5]) for i in range(len(SUCCESSES) - 4))
    assert a["best_5_step_success"] == pytest.approx(best5) == b["best_5_step_success"]
    assert a["last_10_success"] == pytest.approx(np.mean(SUCCESSES[-10:])) == b["last_10_success"]
    assert a["final_val_success"] == 0.0 == b["final_val_success"]  # step 12's validation
    assert a["first_alert_step"] == 11 == b["first_alert_step"] and a["collapsed"] and b["collapsed"]


# --- a real training run: saved rollouts open in ragen-eval, and the numbers agree ----------------------


@pytest.mark.slow
def test_saved_rollouts_open_in_ragen_eval_with_the_logged_numbers(tiny_model_dir, tmp_path):
    from ragen_train.config import load_config
    from ragen_train.trainer import step_seeds, train

    config = load_config(None, [f"model={tiny_model_dir}", "env=bandit", "env_groups=2", "group_size=3",
                                "max_new_tokens=8", "total_steps=1", f"output_dir={tmp_path}", "run_name=r",
                                "plot_every=0", "ppo_mini_batch_size=6", "micro_batch_size=3", "save_rollouts=true",
                                "eval_every=1", "eval_episodes=2"])
    run = train(config)
    row = read_metrics(run / "metrics.jsonl")[0]
    step_dir = run / "rollouts" / "step_000001"
    records = [json.loads(line) for line in (step_dir / "episodes.jsonl").read_text().splitlines()]
    assert [(r["seed"], r["group"], r["sample"]) for r in records] == [
        (seed, g, k) for g, seed in enumerate(step_seeds(config, 0)) for k in range(3)]

    def ragen_eval(*args):
        return subprocess.run([sys.executable, "-m", "ragen_eval.cli", *args], capture_output=True, text=True,
                              timeout=300)

    shown = ragen_eval("show", str(step_dir))
    assert shown.returncode == 0, shown.stderr
    assert "6/6 episodes" in shown.stdout and "| overall" in shown.stdout
    summary = json.loads(ragen_eval("show", str(step_dir), "--json").stdout)
    assert summary["episodes_done"] == summary["overall"]["episodes"] == 2 * 3 and summary["complete"]
    for key in (*HEADLINE_KEYS, *CONSISTENCY_KEYS):
        got = summary["overall"][key] if key in HEADLINE_KEYS else summary["overall"]["consistency"][key]
        assert row[f"rollout/{key}"] == got, key  # the training curve's number is ragen-eval's
    # the same think-word count an independent reading of the episodes gives
    turns = [t for r in records for t in r["turns"]]
    assert row["rollout/think_words_per_turn"] == pytest.approx(
        sum(len((t["think"] or "").split()) for t in turns) / len(turns))
    first = records[0]
    transcript = ragen_eval("show", str(step_dir), "--episode", f"{first['env']}:{first['seed']}")
    assert transcript.returncode == 0, transcript.stderr
    # validation logs the same vocabulary, and its numbers are the eval run's summary
    eval_summary = json.loads((run / "eval" / "step_000001" / "run" / "summary.json").read_text())
    assert {k for k in row if k.startswith("eval/")} == {f"eval/{k}" for k in (*HEADLINE_KEYS, *CONSISTENCY_KEYS)}
    assert row["eval/success_rate"] == eval_summary["overall"]["success_rate"]
    assert row["eval/episodes"] == 2
