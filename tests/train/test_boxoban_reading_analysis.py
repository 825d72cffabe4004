"""experiments/boxoban_reading/analyze.py: the export's claim counts on a hand-written thought, checked against the
level's own state, and the plan's decision rule on hand-made figures."""

from __future__ import annotations

import json

import pytest

from ragen_train.demos import DemoConfig, level_seeds, play_demo
from tests.script_modules import load_script

analyze = load_script("experiments/boxoban_reading/analyze.py")


def _cell(cell) -> str:
    return f"({cell[0]}, {cell[1]})"


def test_export_counts_first_turn_position_claims_by_object_as_the_state_says(tmp_path):
    config = DemoConfig(env="boxoban", mode="oracle", num_episodes=2, seed=5, thought="grounded",
                        protocol={"max_turns": 1})
    records = [play_demo(config, i, seed).record for i, seed in enumerate(level_seeds(config))]
    for record in records:  # the true player, a true box and a wall cell, two true targets and a wall cell
        state = record["turns"][0]["state_before"]
        assert [0, 0] in state["walls"] and [0, 1] in state["walls"]  # the border holds no box and no target
        record["turns"][0]["think"] = (
            f"I am at {_cell(state['player'])}. The boxes are at {_cell(state['boxes'][0])}, (0, 1). The targets "
            f"are at {_cell(state['targets'][0])}, {_cell(state['targets'][1])}, (0, 0). I will go Up.")
    run = tmp_path / "eval" / "S-step1000"
    run.mkdir(parents=True)
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "summary.json").write_text(json.dumps(
        {"per_env": {"boxoban": {"episodes": 2, "success_rate": 0.5, "format_error_rate": 0.25}}}))
    (tmp_path / "eval" / "S-step2000").mkdir()  # unfinished: no summary.json, left out
    assert analyze.export(tmp_path / "eval", tmp_path / "data") == ["S-step1000"]
    figures = json.loads((tmp_path / "data" / "S-step1000.json").read_text())
    assert figures["position_by_object"] == {
        "box": {"n_claims": 4, "claim_accuracy": 0.5}, "player": {"n_claims": 2, "claim_accuracy": 1.0},
        "target": {"n_claims": 6, "claim_accuracy": pytest.approx(4 / 6)}}
    assert figures["position"] == {"n_claims": 12, "claim_accuracy": pytest.approx(8 / 12)}
    assert (figures["episodes"], figures["success_rate"], figures["format_error_rate"]) == (2, 0.5, 0.25)


def _figures(positions: float, targets: float) -> dict:
    by_object = {"player": {"n_claims": 10, "claim_accuracy": 1.0}, "target": {"n_claims": 40, "claim_accuracy": targets}}
    return {"episodes": 128, "success_rate": 0.1, "format_error_rate": 0.0,
            "position": {"n_claims": 90, "claim_accuracy": positions},
            "relation": {"n_claims": 10, "claim_accuracy": 0.5}, "position_by_object": by_object}


@pytest.mark.parametrize("at_6000, final, verdict", [
    ((0.96, 0.90), (0.97, 0.96), "reads"),
    ((0.85, 0.50), (0.86, 0.55), "levels off"),  # below 0.90 and 0.01 gained
    ((0.80, 0.50), (0.86, 0.55), "neither"),  # below 0.90 but still rising
    ((0.96, 0.90), (0.97, 0.94), "neither"),  # positions read, targets not
])
def test_the_plans_decision_on_the_final_copy(at_6000, final, verdict):
    data = {"random": _figures(0.0, 0.0), "S-step1000": _figures(0.2, 0.1), "S-step6000": _figures(*at_6000),
            "S-step8000": _figures(*final), "B-step1000": _figures(0.99, 0.99)}  # B is reported, never judged
    summary = analyze.summarize(data)
    assert summary["decision"]["verdict"] == verdict
    assert summary["decision"]["gain_since_step_6000"] == pytest.approx(final[0] - at_6000[0])
    assert list(summary["models"]["S"]) == ["1000", "6000", "8000"] and list(summary["models"]["B"]) == ["1000"]
    assert summary["models"]["S"]["8000"]["demonstrations"] == 128_000
    if verdict == "reads":
        assert (summary["decision"]["first_step_positions_0.95"], summary["decision"]["first_step_targets_0.95"]) == (
            6000, 8000)
    assert analyze.summarize({"S-step1000": _figures(0.2, 0.1)})["decision"] is None  # not judged before 8,000


def test_main_writes_the_summary_and_figure_and_refuses_an_empty_source(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "S-step1000.json").write_text(json.dumps(_figures(0.3, 0.1)))
    (data / "B-step2000.json").write_text(json.dumps(_figures(0.6, 0.4)))
    assert analyze.main([str(data)]) == 0
    models = json.loads((tmp_path / "summary.json").read_text())["models"]
    assert (models["S"]["1000"]["demonstrations"], models["B"]["2000"]["demonstrations"]) == (16_000, 32_000)
    assert (tmp_path / "reading.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "S step  1000 (16,000 demos): positions 0.300" in out and "B step  2000 (32,000 demos): positions 0.600" in out
    with pytest.raises(SystemExit) as exit_:
        analyze.main([str(tmp_path / "empty")])
    assert exit_.value.code == 2
