"""The thinking model's selection on val and its four gates on test, by the rules of plan.md beside this file.

    python experiments/thinking_model/analyze.py runs/thinking_model/eval --export experiments/thinking_model/data
    python experiments/thinking_model/analyze.py experiments/thinking_model/data

Writes summary.json and thinking.png beside this file. ``--export`` first copies every finished evaluation of
evaluate.sh (``NAME-PRESET-SPLIT``) into DIR/<evaluation>.csv (per level: seed, level key, success) and
DIR/<evaluation>.json (the model, the seed start, and ragen-eval's figures for the preset: format errors, think
words, thought-state consistency, and the turns with a non-empty thought). NAME ``v13`` is the shipped model,
``random`` the random agent, ``tK`` the end of stage TK, ``p`` the end of plan3.md's stage P, ``q2`` the end of
plan4.md's stage Q2, ``s`` the end of plan5.md's stage S, ``s6`` the end of plan6.md's stage S6 and ``s7`` the end
of plan7.md's stage S7 (the candidates, in that order) and ``stepN`` a chunk copy (the val curve). Once v13 and
random have played val, each finished candidate and curve point is reported against both; the pick is made among the
candidates; once the pick, v13 and random have played test, the four gates are judged one by one.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import ALPHA, export_test, mcnemar_levels, read_test, study_main  # noqa: E402

from ragen_eval.jsonl_store import read_jsonl  # noqa: E402
from ragen_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
#: The plan's 13 built-in presets by game; ``sokoban`` (RAGEN's name for simple_sokoban's levels) is one of them.
GAMES = {"sokoban": ("simple_sokoban", "sokoban", "simple_sokoban_hard", "larger_sokoban", "larger_sokoban_hard",
                     "boxoban", "boxoban_hard"),
         "frozenlake": ("frozenlake", "frozenlake_8x8", "frozenlake_det"),
         "bandit": ("bandit", "bandit_heldout", "bandit_reversed")}
PRESETS = tuple(p for presets in GAMES.values() for p in presets)
#: Gate 3: where the model must be above random (McNemar p < ALPHA, one test a preset, no correction).
ABOVE_RANDOM = ("simple_sokoban", "simple_sokoban_hard", "larger_sokoban", "larger_sokoban_hard", "frozenlake",
                "frozenlake_8x8", "bandit", "bandit_heldout", "bandit_reversed")
#: Gate 4: the default games, where the model must not trail v13 significantly.
DEFAULT_GAMES = ("sokoban", "frozenlake", "bandit")
THOUGHT_SHARE = 0.99  # gate 1: turns with a non-empty thought, pooled over a game's presets
CLAIM_ACCURACY = 0.95  # gate 1, and the plan's stop check at the end of T1
FORMAT_ERRORS = 0.02  # gate 2: format errors below this share of turns, on every preset
BASELINES = {"v13": "default", "random": "random"}  # NAME: the model its evaluations must have played
#: Candidates' names: plan.md's stages ``tK``, plan3.md's ``p``, plan4.md's ``q2``, plan5.md's ``s``, then plan6.md's
#: ``s6`` and plan7.md's ``s7``; ``_stage`` orders them.
CANDIDATE = re.compile(r"t\d+|p|q2|s|s6|s7")
#: Candidates whose plan stops them on val where any of these gates fails there (plan5.md's S, plan6.md's S6 and
#: plan7.md's S7: gates 1 and 2), in place of T1's claim and v13 check.
STOP_ON_VAL_GATES = {name: ("1_thoughts_and_claims", "2_format_errors") for name in ("s", "s6", "s7")}
EVALUATION = re.compile(rf"(?P<name>[A-Za-z0-9_]+)-(?P<preset>{'|'.join(PRESETS)})-(?P<split>val|test)")
CONSISTENCY = ("n_turns", "n_claims", "n_true", "claims_per_turn", "claim_accuracy", "hallucination_rate",
               "plan_answer_agreement")


def figures(evaluation: Path, preset: str) -> dict[str, Any]:
    """The compact figures of one finished evaluation: the model and seed start it ran with, ragen-eval's format-error
    rate, think words per turn and consistency counts and ratios for ``preset``, and the turns it played with and
    without a non-empty thought (read from its episodes)."""
    config = json.loads((evaluation / "config.json").read_text())["eval_config"]
    group = json.loads((evaluation / "summary.json").read_text())["per_env"][preset]
    turns = [turn for record in read_jsonl(evaluation / "episodes.jsonl") for turn in record.get("turns") or []]
    return {"model": config["model"], "split": config["split"], "seed_start": config["seed_start"],
            "format_error_rate": group["format_error_rate"], "think_words_per_turn": group["think_words_per_turn"],
            "turns": len(turns), "thought_turns": sum(bool((turn.get("think") or "").strip()) for turn in turns),
            "consistency": {key: group["consistency"][key] for key in CONSISTENCY}}


def export(root: Path, out: Path) -> None:
    """Compact copies of every finished evaluation (its summary.json written) of a runs folder: DIR/<evaluation>.csv
    (seed, level_key, success) and DIR/<evaluation>.json (:func:`figures`)."""
    from ragen_envs.splits import LevelSplitter

    out.mkdir(parents=True, exist_ok=True)
    levels: dict[str, LevelSplitter] = {}
    for folder in sorted(root.iterdir()):
        match = EVALUATION.fullmatch(folder.name)
        if match is None or not (folder / "summary.json").is_file():
            continue
        preset = match["preset"]
        splitter = levels.setdefault(preset, LevelSplitter(preset))
        export_test(folder, out / f"{folder.name}.csv", splitter)
        (out / f"{folder.name}.json").write_text(json.dumps(figures(folder, preset), indent=1) + "\n")


def load(root: Path) -> tuple[dict[str, dict], dict[str, dict[int, dict]]]:
    """Every evaluation's figures and its rows by level seed, keyed by its name (those with both files)."""
    names = sorted(path.stem for path in root.glob("*.csv") if EVALUATION.fullmatch(path.stem)
                   and (root / f"{path.stem}.json").is_file())
    return ({name: json.loads((root / f"{name}.json").read_text()) for name in names},
            {name: read_test(root / f"{name}.csv") for name in names})


def outcome(figure: dict[str, Any], rows: dict[int, dict]) -> dict[str, Any]:
    """One evaluation on one preset, as the plan's "Selection on val" lists it."""
    wins = sum(row["success"] for row in rows.values())
    consistency = figure["consistency"]
    return {"levels": len(rows), "distinct_levels": len({row["level_key"] for row in rows.values()}), "wins": wins,
            "success": wins / len(rows), "wilson95": list(wilson_interval(wins, len(rows))),
            "format_error_rate": figure["format_error_rate"],
            "turns_with_thought": figure["thought_turns"] / figure["turns"] if figure["turns"] else None,
            "think_words_per_turn": figure["think_words_per_turn"],
            **{key: consistency[key] for key in CONSISTENCY[3:]}}


def report(name: str, split: str, figures_: dict[str, dict], rows: dict[str, dict[int, dict]],
           presets: tuple[str, ...] = PRESETS) -> dict[str, dict]:
    """Per preset of ``presets``: NAME's outcome on ``split`` and, unless NAME is a baseline, its McNemar test against
    random and against v13 on the same levels."""
    out = {}
    for preset in presets:
        key = f"{name}-{preset}-{split}"
        out[preset] = outcome(figures_[key], rows[key])
        if name not in BASELINES:
            for baseline in BASELINES:
                out[preset][f"vs_{baseline}"] = mcnemar_levels(rows[key], rows[f"{baseline}-{preset}-{split}"],
                                                               f"{key} did not play the same levels")
    return out


def _pooled(figures_: dict[str, dict], keys: list[str], numerator: str, denominator: str,
            part: str | None = None) -> float | None:
    """The ratio of two counts summed over evaluations (``part``: inside that sub-dict), None over zero."""
    def count(key: str, field: str) -> int:
        return (figures_[key][part] if part else figures_[key])[field]
    total = sum(count(key, denominator) for key in keys)
    return sum(count(key, numerator) for key in keys) / total if total else None


def _significant(test: dict[str, Any], sign: int) -> bool:
    """Whether a :func:`mcnemar_levels` test found the model ahead (``sign`` 1) or behind (-1) with p < ALPHA."""
    return test["mcnemar_p"] < ALPHA and np.sign(test["difference"]) == sign


def gates(name: str, split: str, figures_: dict[str, dict], presets: dict[str, dict]) -> dict[str, Any]:
    """The plan's four gates for NAME on ``split`` (``presets``: :func:`report`'s), one by one, each with the figures
    behind it, and whether all four hold."""
    first = {}
    for game, members in GAMES.items():
        keys = [f"{name}-{preset}-{split}" for preset in members]
        thought = _pooled(figures_, keys, "thought_turns", "turns")
        accuracy = _pooled(figures_, keys, "n_true", "n_claims", "consistency")
        first[game] = {"turns_with_thought": thought, "claim_accuracy": accuracy,
                       "pass": thought is not None and thought >= THOUGHT_SHARE
                       and accuracy is not None and accuracy >= CLAIM_ACCURACY}
    errors = {p: presets[p]["format_error_rate"] for p in PRESETS}
    failing_format = [p for p, rate in errors.items() if rate is None or rate >= FORMAT_ERRORS]
    below = [p for p in PRESETS if _significant(presets[p]["vs_random"], -1)]
    not_above = [p for p in ABOVE_RANDOM if not _significant(presets[p]["vs_random"], 1)]
    behind = [p for p in DEFAULT_GAMES if _significant(presets[p]["vs_v13"], -1)]
    out = {
        "1_thoughts_and_claims": {"per_game": first, "pass": all(g["pass"] for g in first.values())},
        "2_format_errors": {"per_preset": errors, "failing": failing_format, "pass": not failing_format},
        "3_against_random": {"per_preset": {p: presets[p]["vs_random"] for p in PRESETS},
                             "significantly_below": below, "not_significantly_above": not_above,
                             "pass": not below and not not_above},
        "4_against_v13": {"per_preset": {p: presets[p]["vs_v13"] for p in DEFAULT_GAMES},
                          "significantly_below": behind, "pass": not behind},
    }
    out["passed"] = sum(gate["pass"] for gate in out.values())
    out["all_pass"] = out["passed"] == 4
    return out


def stop_check(name: str, figures_: dict[str, dict], presets: dict[str, dict],
               gates_: dict[str, Any]) -> dict[str, Any]:
    """The plan's check at the end of T1: claim accuracy on the model's own val play (pooled over every preset) below
    CLAIM_ACCURACY, or a Sokoban preset significantly below v13 on val, means stop and report; a candidate in
    STOP_ON_VAL_GATES stops instead where one of its gates fails on val (``val_gates_failed``)."""
    accuracy = _pooled(figures_, [f"{name}-{p}-val" for p in PRESETS], "n_true", "n_claims", "consistency")
    behind = [p for p in GAMES["sokoban"] if _significant(presets[p]["vs_v13"], -1)]
    if name in STOP_ON_VAL_GATES:
        failed = [gate[0] for gate in STOP_ON_VAL_GATES[name] if not gates_[gate]["pass"]]
        return {"claim_accuracy": accuracy, "sokoban_below_v13": behind, "val_gates_failed": failed,
                "stop": bool(failed)}
    return {"claim_accuracy": accuracy, "sokoban_below_v13": behind,
            "stop": accuracy is None or accuracy < CLAIM_ACCURACY or bool(behind)}


def _complete(name: str, split: str, figures_: dict[str, dict]) -> bool:
    return all(f"{name}-{preset}-{split}" in figures_ for preset in PRESETS)


def _check_evaluations(figures_: dict[str, dict]) -> None:
    """SystemExit where a baseline's evaluation played another model, or any played a split other than its name's."""
    for key, figure in figures_.items():
        match = EVALUATION.fullmatch(key)
        if match["name"] in BASELINES and figure["model"] != BASELINES[match["name"]]:
            raise SystemExit(f"{key} played {figure['model']}, not {BASELINES[match['name']]}")
        if figure["split"] != match["split"]:
            raise SystemExit(f"{key} played the {figure['split']} split")


def select(figures_: dict[str, dict], rows: dict[str, dict[int, dict]]) -> dict[str, Any]:
    """Val: the baselines, each complete candidate (``tK`` or ``p``: every preset against random and v13, the gates
    judged on val, the stop check), each curve point (``stepN``: the presets it played, and per game its success and
    claim accuracy pooled over them), and the pick: the candidate passing the most gates on val, then the highest mean
    val success over the presets, then the earlier stage (the plan names the candidates but no rule among several)."""
    names = sorted({EVALUATION.fullmatch(key)["name"] for key in figures_ if key.endswith("-val")})
    candidates = sorted((n for n in names if CANDIDATE.fullmatch(n) and _complete(n, "val", figures_)), key=_stage)
    out: dict[str, Any] = {"baselines": {b: report(b, "val", figures_, rows) for b in BASELINES}, "candidates": {}}
    for name in candidates:
        presets = report(name, "val", figures_, rows)
        judged = gates(name, "val", figures_, presets)
        out["candidates"][name] = {"presets": presets, "gates": judged,
                                   "stop_check": stop_check(name, figures_, presets, judged),
                                   "mean_success": float(np.mean([presets[p]["success"] for p in PRESETS]))}
    curve = {}
    for name in sorted((n for n in names if re.fullmatch(r"step\d+", n)), key=lambda n: int(n[4:])):
        played = tuple(p for p in PRESETS if f"{name}-{p}-val" in figures_)
        presets = report(name, "val", figures_, rows, played)
        games = {}
        for game, members in GAMES.items():
            keys = [p for p in members if p in presets]
            if keys:
                wins, levels = (sum(presets[p][field] for p in keys) for field in ("wins", "levels"))
                games[game] = {"presets": len(keys), "success": wins / levels,
                               "claim_accuracy": _pooled(figures_, [f"{name}-{p}-val" for p in keys], "n_true",
                                                         "n_claims", "consistency")}
        curve[name] = {"step": int(name[4:]), "presets": presets, "games": games}
    out["curve"] = curve
    scored = out["candidates"]
    out["pick"] = (max(candidates, key=lambda n: (scored[n]["gates"]["passed"], scored[n]["mean_success"],
                                                  -_stage(n))) if candidates else None)
    return out


def _stage(name: str) -> int:
    """A candidate's place in training order: ``tK`` is K; plan3.md's ``p`` comes after every ``tK``, plan4.md's
    ``q2`` after ``p``, plan5.md's ``s`` after ``q2``, plan6.md's ``s6`` after ``s``, plan7.md's ``s7`` after ``s6``."""
    return {"p": 10**6, "q2": 2 * 10**6, "s": 3 * 10**6, "s6": 4 * 10**6, "s7": 5 * 10**6}.get(name) or int(name[1:])


def confirm(pick: str, figures_: dict[str, dict], rows: dict[str, dict[int, dict]]) -> dict[str, Any]:
    """Test: the pick, v13 and random per preset (the pick against both on the same levels) and the four gates."""
    presets = report(pick, "test", figures_, rows)
    judged = gates(pick, "test", figures_, presets)
    failed = [gate for gate, result in judged.items() if isinstance(result, dict) and not result["pass"]]
    return {"pick": pick, "baselines": {b: report(b, "test", figures_, rows) for b in BASELINES},
            "presets": presets, "gates": judged, "failed": failed}


def analyse(figures_: dict[str, dict], rows: dict[str, dict[int, dict]]) -> dict[str, Any]:
    """Val once v13 and random have played it; test once the pick, v13 and random have. SystemExit where a test
    evaluation comes before val's pick or is not the pick's or a baseline's."""
    _check_evaluations(figures_)
    tests = sorted(key for key in figures_ if key.endswith("-test"))
    baselines_done = sum(f"{b}-{p}-val" in figures_ for b in BASELINES for p in PRESETS)
    if baselines_done < len(BASELINES) * len(PRESETS):
        if tests:
            raise SystemExit(f"test evaluations before val finished: {', '.join(tests)}")
        return {"state": f"in progress: {baselines_done} of {len(BASELINES) * len(PRESETS)} val evaluations of v13 "
                         "and random"}
    out: dict[str, Any] = {"val": select(figures_, rows)}
    pick = out["val"]["pick"]
    if pick is None:
        if tests:
            raise SystemExit(f"test evaluations before val picked a candidate: {', '.join(tests)}")
        out["state"] = "in progress: no candidate (tK or p) has played every preset of val"
        return out
    stray = sorted(key for key in tests if EVALUATION.fullmatch(key)["name"] not in (pick, *BASELINES))
    if stray:
        raise SystemExit(f"test evaluations of other than val's pick ({pick}) and the baselines: {', '.join(stray)}")
    wanted = len(PRESETS) * (1 + len(BASELINES))
    if out["val"]["candidates"][pick]["stop_check"]["stop"]:
        if tests:
            raise SystemExit(f"test evaluations after val's pick ({pick}) stopped at its check: {', '.join(tests)}")
        out["state"] = f"stopped: val picked {pick}, whose stop check says stop; no test look"
        return out
    if len(tests) < wanted:
        out["state"] = f"in progress: val picked {pick}, {len(tests)} of {wanted} test evaluations"
        return out
    test = out["test"] = confirm(pick, figures_, rows)
    out["state"] = "complete"
    out["verdict"] = "ship" if not test["failed"] else f"do not ship: gate {', '.join(test['failed'])} failed"
    return out


def _by_preset(axis, results: dict[str, dict[str, dict]], title: str) -> None:
    """Success per preset with Wilson 95% bars, one colour per model."""
    colours = {"random": "grey", "v13": "black"}
    width = 0.8 / len(results)
    for i, (name, presets) in enumerate(results.items()):
        x = np.arange(len(PRESETS)) + (i - (len(results) - 1) / 2) * width
        success = np.array([presets[p]["success"] for p in PRESETS])
        bounds = np.array([presets[p]["wilson95"] for p in PRESETS])
        axis.errorbar(x, success, yerr=[success - bounds[:, 0], bounds[:, 1] - success], fmt="o", ms=3, capsize=1.5,
                      color=colours.get(name, f"C{i}"), label=name)
    axis.set_xticks(range(len(PRESETS)), PRESETS, rotation=60, ha="right", fontsize=7)
    axis.set_ylim(-0.03, 1.03)
    axis.set_ylabel("success")
    axis.set_title(title, fontsize=9)
    axis.legend(fontsize=7)


def plot(figures_: dict[str, dict], summary: dict[str, Any], out: Path) -> None:
    """Val success per preset (baselines and candidates), the val curve of the chunk copies per game (success, and
    claim accuracy dotted, pooled over the game's presets) with v13 as a line, and test success per preset of the
    pick, v13 and random with the verdict."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [part for part in ("val", "curve", "test") if part in summary or (part == "curve" and "val" in summary
                                                                                 and summary["val"]["curve"])]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(5.5 * max(len(panels), 1), 4), squeeze=False)
    if not panels:
        axes[0][0].text(0.5, 0.5, summary["state"], ha="center", fontsize=9)
        axes[0][0].set_axis_off()
    if "val" in panels:
        val = summary["val"]
        _by_preset(axes[0][panels.index("val")], {**val["baselines"], **{n: c["presets"]
                                                                          for n, c in val["candidates"].items()}},
                   f"val: pick {val['pick']}" + (" (stop check: stop)" if val["pick"] and
                                                 val["candidates"][val["pick"]]["stop_check"]["stop"] else ""))
    if "curve" in panels:
        axis = axes[0][panels.index("curve")]
        curve = summary["val"]["curve"]
        for i, (game, members) in enumerate(GAMES.items()):
            points = [(point["step"], point["games"][game]) for point in curve.values() if game in point["games"]]
            steps = [step for step, _ in points]
            axis.plot(steps, [g["success"] for _, g in points], "o-", color=f"C{i}", ms=3, label=f"{game} success")
            axis.plot(steps, [np.nan if g["claim_accuracy"] is None else g["claim_accuracy"] for _, g in points], "o:",
                      color=f"C{i}", ms=2, label=f"{game} claim accuracy")
            v13 = [summary["val"]["baselines"]["v13"][p] for p in members]
            axis.axhline(sum(r["wins"] for r in v13) / sum(r["levels"] for r in v13), color=f"C{i}", ls="--", lw=0.8)
        axis.set_xlabel("SFT step (chunk copy)")
        axis.set_ylim(-0.03, 1.03)
        axis.set_title("val curve per game (dashed: v13's success)", fontsize=9)
        axis.legend(fontsize=6)
    if "test" in panels:
        test = summary["test"]
        _by_preset(axes[0][panels.index("test")], {**test["baselines"], test["pick"]: test["presets"]},
                   f"test: {summary['verdict']}")
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    return study_main(argv, __doc__.split("\n\n")[0], export, load, analyse, plot, HERE / "summary.json",
                      HERE / "thinking.png")


if __name__ == "__main__":
    sys.exit(main())
