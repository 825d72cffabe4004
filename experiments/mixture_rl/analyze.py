"""The mixture-RL study's checkpoint pick, test and figure, by the rules of plan.md beside this file.

    python experiments/mixture_rl/analyze.py runs/mixture --export experiments/mixture_rl/data
    python experiments/mixture_rl/analyze.py experiments/mixture_rl/data

Writes summary.json and mixture.png beside this file. ``--export`` first copies the training run's success and
format-error rate per step (pooled and per game) into DIR/train.csv and, for every finished evaluation, its per-level
outcomes (seed, level key, success, turns, turns with a format error) into DIR/<evaluation>.csv (start-<game>-val,
step<S>-<game>-val, start-<game>-test, step<S>-<game>-test). Until all fifteen val evaluations exist, only the
training record is summarised; then each checkpoint against the start model on val and the pick; once the pick's
test evaluations exist, the test and the plan's call.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import (  # noqa: E402
    ALPHA,
    export_test,
    export_train,
    mcnemar_levels,
    read_test,
    read_train,
    study_main,
)

from ragen_eval.metrics import episode_metrics  # noqa: E402
from ragen_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
RUN = "mixture__starpo-s__seed0"
GAMES = ("sokoban", "frozenlake", "bandit")
CHECKPOINTS = (50, 100, 150, 200)
STEPS = 200
#: The training record's summary: the mean of the first and of the last WINDOW steps (32 episodes a game a step).
WINDOW = 10
#: train.csv's columns: the pooled and the per-game success and format-error rates (``rollout/`` metrics).
TRAIN_METRICS = tuple(f"{game}{name}" for game in ("", *(f"{g}/" for g in GAMES))
                      for name in ("success_rate", "format_error_rate"))
#: The evaluation CSVs' extra columns: the turns an episode played, and those whose reply broke the format.
EPISODE_COLUMNS = {"turns": lambda record: episode_metrics(record)["turns"],
                   "format_error_turns": lambda record: episode_metrics(record)["format_error_turns"]}
EVALUATION = re.compile(rf"(start|step\d+)-({'|'.join(GAMES)})-(val|test)")
VAL = tuple(f"{model}-{game}-val" for game in GAMES for model in ("start", *(f"step{s}" for s in CHECKPOINTS)))


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/train.csv (step, the pooled and per-game success and format-error rates; a run without
    one of them stops the export) and DIR/<evaluation>.csv (seed, level_key, success, turns, format_error_turns) for
    each finished evaluation."""
    from ragen_envs.splits import LevelSplitter

    out.mkdir(parents=True, exist_ok=True)
    if (root / RUN / "metrics.csv").is_file():
        export_train(root / RUN / "metrics.csv", out, TRAIN_METRICS)
    levels = {game: LevelSplitter(game) for game in GAMES}
    for folder in sorted(root.iterdir()):
        match = EVALUATION.fullmatch(folder.name)
        if match is not None:
            export_test(folder, out / f"{folder.name}.csv", levels[match[2]], EPISODE_COLUMNS)


def load(root: Path) -> tuple[dict[str, list[float]] | None, dict[str, dict[int, dict]]]:
    """train.csv as columns (None when absent), and every evaluation's rows by level seed, keyed by its name."""
    return read_train(root / "train.csv"), {path.stem: read_test(path) for path in sorted(root.glob("*.csv"))
                   if EVALUATION.fullmatch(path.stem)}


def training_record(train: dict[str, list[float]] | None) -> dict[str, Any]:
    """The steps logged, and the mean of each logged rate over the first and the last WINDOW of them."""
    steps = len(train["step"]) if train else 0
    record: dict[str, Any] = {"steps": steps, "steps_planned": STEPS}
    if steps:
        for window, rows in (("first", slice(0, WINDOW)), ("last", slice(-WINDOW, None))):
            record[f"{window}_{WINDOW}_steps"] = {name: float(np.mean(values[rows])) for name, values in train.items()
                                                  if name != "step"}
    return record


def outcome(rows: dict[int, dict]) -> dict[str, Any]:
    """One evaluation's levels, wins, success with its Wilson 95% interval, and the share of turns whose reply
    broke the format."""
    wins = sum(row["success"] for row in rows.values())
    turns = sum(row["turns"] for row in rows.values())
    errors = sum(row["format_error_turns"] for row in rows.values())
    return {"levels": len(rows), "wins": wins, "success": wins / len(rows),
            "wilson95": list(wilson_interval(wins, len(rows))), "format_error_rate": errors / turns if turns else None}


def against_start(model: dict[int, dict], start: dict[int, dict], name: str) -> dict[str, Any]:
    """``model``'s outcome and its exact McNemar test against the start model's on the same levels: the difference
    in success, the levels only one of them won, p, and the call (``higher`` / ``lower`` at p < ALPHA, else
    ``neither``). SystemExit where the two did not play the same levels."""
    test = mcnemar_levels(model, start, f"{name} did not play the start model's levels")
    difference, significant = test["difference"], test["mcnemar_p"] < ALPHA
    call = "higher" if significant and difference > 0 else "lower" if significant and difference < 0 else "neither"
    return {**outcome(model), "difference": difference, "model_only": test["model_only"],
            "start_only": test["other_only"], "mcnemar_p": test["mcnemar_p"], "call": call}


def start_outcome(rows: dict[int, dict]) -> dict[str, Any]:
    """The start model's outcome and how many distinct levels (by level key) its level seeds hold."""
    return {**outcome(rows), "distinct_levels": len({row["level_key"] for row in rows.values()})}


def choose(evaluations: dict[str, dict[int, dict]]) -> dict[str, Any]:
    """The plan's choice on val: every checkpoint against the start model per game, which qualify (some game higher,
    none lower) and the pick (the largest success difference averaged over the games; ties: the earlier step)."""
    start = {game: evaluations[f"start-{game}-val"] for game in GAMES}
    starts = {game: start_outcome(start[game]) for game in GAMES}
    checkpoints, means = {}, {}
    for step in CHECKPOINTS:
        games = {game: against_start(evaluations[f"step{step}-{game}-val"], start[game], f"step{step}-{game}-val")
                 for game in GAMES}
        # in fractions, so that equal averages made up of different games tie as the plan's rule says
        means[step] = sum(Fraction(games[g]["wins"] - starts[g]["wins"], starts[g]["levels"])
                          for g in GAMES) / len(GAMES)
        calls = [games[game]["call"] for game in GAMES]
        checkpoints[str(step)] = {"games": games, "mean_difference": float(means[step]),
                                  "qualifies": "higher" in calls and "lower" not in calls}
    qualifying = [step for step in CHECKPOINTS if checkpoints[str(step)]["qualifies"]]
    pick = max(qualifying, key=lambda step: (means[step], -step)) if qualifying else None
    return {"start": starts, "checkpoints": checkpoints, "qualifying": qualifying, "pick": pick}


def confirm(evaluations: dict[str, dict[int, dict]], val: dict[str, Any]) -> dict[str, Any]:
    """The plan's test of the pick: per game the start model's test outcome (with its distinct levels) and the
    pick's against it; the games higher on val, higher on test, lower on test; and the call."""
    pick = val["pick"]
    start = {game: evaluations[f"start-{game}-test"] for game in GAMES}
    games = {game: against_start(evaluations[f"step{pick}-{game}-test"], start[game], f"step{pick}-{game}-test")
             for game in GAMES}
    on_val = [g for g in GAMES if val["checkpoints"][str(pick)]["games"][g]["call"] == "higher"]
    higher = [g for g in GAMES if games[g]["call"] == "higher"]
    lower = [g for g in GAMES if games[g]["call"] == "lower"]
    confirmed = any(g in higher for g in on_val) and not lower
    return {"step": pick, "start": {game: start_outcome(start[game]) for game in GAMES}, "pick": games,
            "higher_on_val": on_val, "higher_on_test": higher, "lower_on_test": lower,
            "call": "confirmed" if confirmed else "not confirmed"}


def analyse(train: dict[str, list[float]] | None, evaluations: dict[str, dict[int, dict]]) -> dict[str, Any]:
    """The training record; once the fifteen val evaluations exist, the choice on val; once the pick's six test
    evaluations exist, the test and the verdict. SystemExit where a test evaluation is not the plan's."""
    out: dict[str, Any] = {"training": training_record(train)}
    tests = sorted(name for name in evaluations if name.endswith("-test"))
    val_done = sum(name in evaluations for name in VAL)
    if val_done < len(VAL):
        if tests:
            raise SystemExit(f"test evaluations before val finished: {', '.join(tests)}")
        out["state"] = (f"in progress: {out['training']['steps']} of {STEPS} training steps, {val_done} of {len(VAL)} "
                        "val evaluations")
        return out
    val = out["val"] = choose(evaluations)
    pick = val["pick"]
    if pick is None:
        if tests:
            raise SystemExit(f"test evaluations though no checkpoint qualified on val: {', '.join(tests)}")
        out.update(state="complete", verdict="no improvement on val")
        return out
    wanted = [f"{model}-{game}-test" for game in GAMES for model in ("start", f"step{pick}")]
    stray = sorted(set(tests) - set(wanted))
    if stray:
        raise SystemExit(f"test evaluations of other than val's pick (step {pick}): {', '.join(stray)}")
    if len(tests) < len(wanted):
        out["state"] = f"in progress: val picked step {pick}, {len(tests)} of {len(wanted)} test evaluations"
        return out
    out["test"] = confirm(evaluations, val)
    out.update(state="complete", verdict=out["test"]["call"])
    return out


def plot(train: dict[str, list[float]] | None, summary: dict[str, Any], out: Path) -> None:
    """Training success per step per game (thin: each step; thick: the mean of the last WINDOW steps), and once
    there, val success per game per checkpoint with the start model as a line, and test success of start and pick
    (Wilson 95% bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(GAMES, ("tab:orange", "tab:blue", "tab:green")))
    panels = ["train", *(part for part in ("val", "test") if part in summary)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    left = axes[0][0]
    for game, colour in (*colours.items(), ("pooled", "black")):
        column = "success_rate" if game == "pooled" else f"{game}/success_rate"
        if train is None or column not in train or not train[column]:
            continue
        steps, values = np.array(train["step"]), np.array(train[column])
        left.plot(steps, values, color=colour, lw=0.5, alpha=0.35)
        if len(values) >= WINDOW:
            left.plot(steps[WINDOW - 1:], np.convolve(values, np.ones(WINDOW) / WINDOW, "valid"), color=colour, lw=2,
                      label=game)
    left.set_xlabel("RL step")
    left.set_ylabel("training success")
    left.set_title(f"StarPO-S on the mixture (thick: {WINDOW}-step mean)", fontsize=9)
    if left.get_legend_handles_labels()[0]:
        left.legend(fontsize=8)
    if "val" in summary:
        axis = axes[0][panels.index("val")]
        for i, (game, colour) in enumerate(colours.items()):
            rows = [summary["val"]["checkpoints"][str(step)]["games"][game] for step in CHECKPOINTS]
            success, bounds = np.array([r["success"] for r in rows]), np.array([r["wilson95"] for r in rows])
            axis.errorbar(np.array(CHECKPOINTS) + 4 * (i - 1), success, yerr=[success - bounds[:, 0],
                          bounds[:, 1] - success], fmt="o", color=colour, ms=4, capsize=2, label=game)
            axis.axhline(summary["val"]["start"][game]["success"], color=colour, ls="--", lw=1)
        if summary["val"]["pick"] is not None:
            axis.axvline(summary["val"]["pick"], color="grey", lw=0.8, label="pick")
        axis.set_xticks(CHECKPOINTS)
        axis.set_xlabel("checkpoint (RL step)")
        axis.set_ylabel("val success")
        axis.set_title("val: checkpoints (dots, Wilson 95%), start model (dashed)", fontsize=9)
        axis.legend(fontsize=8)
    if "test" in summary:
        axis = axes[0][panels.index("test")]
        test = summary["test"]
        for i, game in enumerate(GAMES):
            for j, (name, row) in enumerate((("start", test["start"][game]), (f"step {test['step']}",
                                                                              test["pick"][game]))):
                low, high = row["wilson95"]
                axis.bar(2.5 * i + j, row["success"], color=colours[game], alpha=0.4 if j == 0 else 0.9,
                         yerr=[[row["success"] - low], [high - row["success"]]], capsize=2)
            axis.text(2.5 * i + 0.5, 1.08, game, ha="center", fontsize=8)
        axis.set_xticks([2.5 * i + j for i in range(len(GAMES)) for j in (0, 1)],
                        ["start", f"step {test['step']}"] * len(GAMES), fontsize=7)
        axis.set_ylim(0, 1.15)
        axis.set_ylabel("test success")
        axis.set_title(f"test: {test['call']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    return study_main(argv, __doc__.split("\n\n")[0], export, load, analyse, plot, HERE / "summary.json",
                      HERE / "mixture.png")


if __name__ == "__main__":
    sys.exit(main())
