"""The reasoning study's tests and figure, by the rules of plan.md beside this file.

    python experiments/reasoning_reward/analyze.py runs/reasoning --export experiments/reasoning_reward/data
    python experiments/reasoning_reward/analyze.py experiments/reasoning_reward/data

Writes summary.json and reasoning.png beside this file. ``--export`` first copies, for every run, its training
curves (success, think words per turn, claim accuracy, hallucination rate and format-error rate per step, as the
trainer logged them) and, once evaluated, its per-level test outcomes into DIR/<run>/, and the start model's into
DIR/start/: per episode its seed, level key, success, true and checkable claims of its thoughts (scored by
``ragen_eval.consistency.score_episode``, the harness's own scoring), think words and turns (counted by
``ragen_eval.metrics.episode_metrics``, as the harness counts them) and turns with a format error. While runs or
evaluations are missing, only the training record is summarised (the plan's tests are made on all six runs and
the start model or not at all).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import (  # noqa: E402
    export as export_runs,
    load_runs,
    nan_mean,
    paired_test,
    plot_arms,
    plot_curves,
    read_test,
    study_main,
    tested_levels,
    training_summary,
)

from ragen_eval.consistency import score_episode  # noqa: E402
from ragen_eval.metrics import episode_metrics  # noqa: E402
from ragen_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
GAME = "frozenlake_det"  # plan.md's amendment (the plan first named simple_sokoban)
ARMS = ("O", "C")  # outcome only; with the consistency reward
SEEDS = (0, 1, 2)
STEPS = 60
#: The trainer's ``rollout/`` metrics train.csv keeps. Its hallucination rate is the harness's: the share of turns
#: with a checkable claim that hold a false one (docs/consistency.md).
TRAIN_COLUMNS = ("success_rate", "think_words_per_turn", "claim_accuracy", "hallucination_rate", "format_error_rate")
#: test.csv's extra columns: an episode's true and checkable claims, think words, turns and format-error turns.
EPISODE_COLUMNS = {"true_claims": lambda record: score_episode(record)["n_true"],
                   "checkable_claims": lambda record: score_episode(record)["n_claims"],
                   "think_words": lambda record: episode_metrics(record)["think_words"],
                   "turns": lambda record: episode_metrics(record)["turns"],
                   "format_error_turns": lambda record: episode_metrics(record)["format_error_turns"]}
#: Steps at each end of a training curve that the summary averages (the curves themselves are in the figure).
WINDOW = 10


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/<run>/train.csv (step and TRAIN_COLUMNS), DIR/<run>/test.csv and DIR/start/test.csv
    (seed, level_key, success and EPISODE_COLUMNS) where the evaluation has finished."""
    export_runs(root, out, GAME, f"{GAME}__*__seed*", {"start": "start-test"}, EPISODE_COLUMNS,
                TRAIN_COLUMNS)


def load(root: Path) -> tuple[dict[tuple[str, int], dict], dict[int, dict] | None]:
    """(arm, seed) -> {"train": success per step, "curves": TRAIN_COLUMNS per step, "test": level seed -> its
    test.csv row, or None}; and the start model's test rows (or None)."""
    return load_runs(root, GAME + r"__([OC])__seed(\d+)"), read_test(root / "start" / "test.csv")


def episode_value(row: dict, metric: str) -> float:
    """One episode's ``success``, ``claim_accuracy`` (true / checkable claims; NaN without a checkable claim) or
    ``think_words_per_turn`` (NaN for an episode that played no turn)."""
    if metric == "success":
        return float(row["success"])
    if metric == "claim_accuracy":
        return row["true_claims"] / row["checkable_claims"] if row["checkable_claims"] else float("nan")
    return row["think_words"] / row["turns"] if row["turns"] else float("nan")


def values(test: dict[int, dict], levels: list[int], metric: str) -> np.ndarray:
    """``metric`` of the episode on each of ``levels``."""
    return np.array([episode_value(test[lv], metric) for lv in levels])


def arm_values(runs: dict, arm: str, levels: list[int], metric: str) -> tuple[list[float], np.ndarray]:
    """An arm's test means of ``metric`` per seed (over its episodes that have a value), and each level's value
    averaged over the seeds whose episode has one (NaN where none has)."""
    table = np.array([values(runs[(arm, s)]["test"], levels, metric) for s in SEEDS])
    return [nan_mean(row) for row in table], nan_mean(table, axis=0)


def pooled(tests: list[dict[int, dict]]) -> dict[str, float | None]:
    """Over every episode of ``tests``: the hallucination rate as the plan defines it (false / checkable claims)
    and the format-error rate (turns with a format error / turns)."""
    rows = [row for test in tests for row in test.values()]
    checkable, true = sum(r["checkable_claims"] for r in rows), sum(r["true_claims"] for r in rows)
    turns = sum(r["turns"] for r in rows)
    return {"hallucination_rate": (checkable - true) / checkable if checkable else None,
            "format_error_rate": sum(r["format_error_turns"] for r in rows) / turns if turns else None}


def training_ends(runs: dict) -> dict[str, dict]:
    """Per finished run and training metric: its mean over the first and the last WINDOW steps (NaN steps, where
    no claim was checkable, left out)."""
    out: dict[str, dict] = {}
    for (arm, seed), run in sorted(runs.items()):
        if len(run["train"]) < STEPS:
            continue
        out.setdefault(arm, {})[str(seed)] = {
            name: {"first": _number(nan_mean(np.array(curve[:WINDOW]))),
                   "last": _number(nan_mean(np.array(curve[STEPS - WINDOW:STEPS])))}
            for name, curve in run["curves"].items()}
    return out


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def start_figures(start: dict[int, dict], levels: list[int]) -> dict:
    """The start model's test figures: success and claim accuracy pooled over its claims, each with its Wilson
    95% interval; the mean per-episode claim accuracy and think words per turn (the tests' values); the
    hallucination and format-error rates."""
    wins = sum(start[lv]["success"] for lv in levels)
    true = sum(start[lv]["true_claims"] for lv in levels)
    checkable = sum(start[lv]["checkable_claims"] for lv in levels)
    claim_accuracy = values(start, levels, "claim_accuracy")
    return {"success": wins / len(levels), "wilson95": list(wilson_interval(wins, len(levels))),
            "claims": {"true": true, "checkable": checkable, "accuracy": true / checkable if checkable else None,
                       "wilson95": list(wilson_interval(true, checkable)) if checkable else None},
            "claim_accuracy": _number(nan_mean(claim_accuracy)),
            "episodes_with_claims": int((~np.isnan(claim_accuracy)).sum()),
            "think_words_per_turn": _number(nan_mean(values(start, levels, "think_words_per_turn"))),
            **pooled([start])}


def verdict(tests: dict[str, dict]) -> str:
    """The plan's verdict of test 1 from O against START on claim accuracy and think words per turn."""
    if any(t["call"] == "worse" for t in tests.values()):
        return "reproduced"
    if not any(t["significant"] and t["mean_difference"] is not None and t["mean_difference"] < 0
               for t in tests.values()):
        return "not reproduced"
    return "unclear"


def analyse(runs: dict, start: dict | None) -> dict:
    """The training record, and, once every run and the start model are evaluated, the plan's two tests and what
    it reports beside them."""
    out = training_summary(runs, ARMS, SEEDS, STEPS)
    out["training_ends"] = {"window": WINDOW, "runs": training_ends(runs)}
    levels = tested_levels(out, runs, ARMS, SEEDS, [start])
    if levels is None:
        return out
    metrics = ("success", "claim_accuracy", "think_words_per_turn")
    arm = {(a, m): arm_values(runs, a, levels, m) for a in ARMS for m in metrics}
    start_model = start_figures(start, levels)
    out.update(state="complete", levels=len(levels), distinct_levels=len({start[lv]["level_key"] for lv in levels}),
               start_model=start_model)
    for m in metrics:
        out[m] = {a: {"mean": _number(nan_mean(arm[(a, m)][1])), "per_seed": [_number(v) for v in arm[(a, m)][0]]}
                  for a in ARMS}
    out["pooled"] = {a: {**pooled([runs[(a, s)]["test"] for s in SEEDS]),
                         "per_seed": [pooled([runs[(a, s)]["test"]]) for s in SEEDS]} for a in ARMS}

    def against_start(a: str, m: str) -> dict:
        per_seed, per_level = arm[(a, m)]
        start_values = values(start, levels, m)
        return paired_test(per_level, start_values, per_seed, [nan_mean(start_values)])

    one = {m: against_start("O", m) for m in ("claim_accuracy", "think_words_per_turn")}
    out["test1"] = {**one, "reproduced_through": [m for m, t in one.items() if t["call"] == "worse"],
                    "verdict": verdict(one)}
    truer = paired_test(arm[("C", "claim_accuracy")][1], arm[("O", "claim_accuracy")][1],
                        arm[("C", "claim_accuracy")][0], arm[("O", "claim_accuracy")][0])
    truer["call"] = "keeps the reasoning truer" if truer["call"] == "better" else "not shown"
    cost = paired_test(arm[("C", "success")][1], arm[("O", "success")][1], arm[("C", "success")][0],
                       arm[("O", "success")][0])
    held = against_start("C", "claim_accuracy")
    held["holds_start_level"] = not (held["significant"] and (held["mean_difference"] or 0.0) < 0)
    out["test2"] = {"claim_accuracy_C_vs_O": truer,
                    "success_C_vs_O": {**cost, "per_seed": {a: arm[(a, "success")][0] for a in ARMS}},
                    "claim_accuracy_C_vs_start": held}
    out["verdict"] = out["test1"]["verdict"]
    out["second_line"] = truer["call"]
    return out


def plot(runs: dict, summary: dict, out: Path) -> None:
    """Training think words, claim accuracy and success per step (thin: each run; thick: the mean over an arm's
    finished seeds) and, once complete, the test claim accuracy, think words and success per arm (a bar for the
    mean over seeds, a dot for each seed) with the start model as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    complete = summary["state"] == "complete"
    colours = {"O": "tab:blue", "C": "tab:green"}
    label = {"O": "O (outcome only)", "C": "C (consistency)"}.get
    panels = (("think_words_per_turn", "think words per turn"), ("claim_accuracy", "claim accuracy"),
              ("success_rate", "training success (64 episodes)"))
    fig, axes = plt.subplots(2 if complete else 1, 3, figsize=(13, 7 if complete else 3.6), squeeze=False)
    for axis, (name, title) in zip(axes[0], panels):
        plot_curves(axis, runs, ARMS, SEEDS, STEPS, colours, label, lambda run, name=name: run["curves"][name])
        axis.set_ylabel(title)
    axes[0][0].set_title(f"StarPO-S on {GAME} from the thinking model", fontsize=9)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=8)
    if complete:
        start = summary["start_model"]
        for axis, (name, title) in zip(axes[1], (("claim_accuracy", "test claim accuracy"),
                                                 ("think_words_per_turn", "test think words per turn"),
                                                 ("success", "test success"))):
            plot_arms(axis, summary[name], ARMS, colours, lambda a: a)
            if start[name] is not None:
                axis.axhline(start[name], color="grey", ls="--", label="start model")
            axis.set_ylabel(f"{title} ({summary['levels']} levels)")
        axes[1][0].set_title("bars: mean over seeds; dots: each seed", fontsize=9)
        axes[1][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    return study_main(argv, __doc__.split("\n\n")[0], export, load, analyse, plot, HERE / "summary.json",
                      HERE / "reasoning.png")


if __name__ == "__main__":
    sys.exit(main())
