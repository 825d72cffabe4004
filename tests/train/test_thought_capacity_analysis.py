"""experiments/thought_capacity/analyze.py and experiments/thinking_model/claims_by_turn.py: the probe's decision
rules on hand-made figures, its export of a real ragen-eval run, and the stated-cell count on hand-written turns."""

from __future__ import annotations

import json

import pytest

from ragen_eval.cli import EXIT_OK, main as ragen_eval
from ragen_eval.jsonl_store import rewrite_jsonl
from tests.script_modules import load_script

analyze = load_script("experiments/thought_capacity/analyze.py")
claims_by_turn = load_script("experiments/thinking_model/claims_by_turn.py")


def _figures(position: float) -> dict:
    kinds = {kind: {"n_claims": 100, "claim_accuracy": position if kind == "position" else 0.5}
             for kind in analyze.KINDS}
    return {"episodes": 128, "success_rate": 0.1, "format_error_rate": 0.0, "think_words_per_turn": 50.0,
            "claim_accuracy": 0.6, "n_claims": 300, "by_kind": kinds}


@pytest.mark.parametrize("small, big, verdict", [
    (0.85, 0.96, "size is what fails: B reads the 8x8 room, S does not"),
    (0.89, 0.89, "neither size reads the room from these demonstrations"),
    (0.95, 0.99, "both read the room: reading is learnable at the default's size"),
    (0.92, 0.96, "no rule of the plan applies"),  # S between the two thresholds
    (0.97, 0.80, "no rule of the plan applies"),  # the small model reads, the big one does not
])
def test_the_plans_decision_at_the_final_step(small, big, verdict):
    data = {"random": _figures(0.0), "S-step500": _figures(0.2), f"S-step{analyze.FINAL_STEP}": _figures(small),
            f"B-step{analyze.FINAL_STEP}": _figures(big)}
    summary = analyze.summarize(data)
    assert summary["decision"] == {"position_accuracy_at_final_step": {"S": small, "B": big}, "verdict": verdict}
    assert list(summary["curves"]["S"]) == ["500", str(analyze.FINAL_STEP)]
    assert list(summary["baselines"]) == ["random"]


def test_no_decision_before_both_models_reach_the_final_step():
    summary = analyze.summarize({f"S-step{analyze.FINAL_STEP}": _figures(0.9), "B-step1500": _figures(0.99)})
    assert "decision" not in summary


def test_export_reads_a_real_run(tmp_path):
    assert ragen_eval(["--model", "oracle", "--env", analyze.PRESET, "--split", "val", "--episodes", "3",
                       "--protocol", "max_turns=1", "--out", str(tmp_path), "--run-name", "oracle",
                       "--no-progress"]) == EXIT_OK
    group = json.loads((tmp_path / "oracle" / "summary.json").read_text())["per_env"][analyze.PRESET]
    figures = analyze.compact(tmp_path / "oracle")
    assert figures["episodes"] == 3 and figures["success_rate"] == group["success_rate"]
    assert set(figures["by_kind"]) == set(analyze.KINDS)


def _room(player: list[int]) -> dict:
    """An 8x8 room with one box at (3, 3), its target at (5, 5), and the player at ``player``."""
    rows = ["########"] + ["#      #"] * 6 + ["########"]
    rows = [row[:1] + "".join("$" if (r, c) == (3, 3) else "." if (r, c) == (5, 5) else "@" if [r, c] == player
                              else row[c] for c in range(1, 7)) + row[7:] for r, row in enumerate(rows)]
    return {"game": "sokoban", "height": 8, "width": 8, "rows": rows, "player": player, "boxes": [[3, 3]],
            "targets": [[5, 5]], "walls": [[r, c] for r, row in enumerate(rows) for c, x in enumerate(row) if x == "#"]}


def test_the_stated_player_cell_is_compared_with_the_true_one(tmp_path):
    def episode(think: str, player: list[int]) -> dict:
        return {"protocol": {"coordinate_base": 0},
                "turns": [{"think": think, "state_before": _room(player), "actions_parsed": ["Up"],
                           "completion": {"prompt_tokens": 300}}]}

    path = tmp_path / "episodes.jsonl"
    rewrite_jsonl(path, [episode("I am at (2, 4). The box is at (3, 3). The target is down and to the right of the "
                                 "box.", [2, 4]),
                         episode("I am at (2, 3).", [2, 4]), episode("I am at (5, 3).", [2, 3]),
                         episode("I am at (6, 6).", [2, 4]), episode("I will go Up.", [1, 1]),
                         episode("I am at (6, 1).", [6, 2])])
    scored = claims_by_turn.score_evaluation(path)
    by_turn, cells, later = scored["by_turn"], scored["player_first_turn"], scored["positions_later_turns_by_object"]
    by_object, by_subject = scored["positions_first_turn_by_object"], scored["relations_first_turn_by_subject"]
    assert cells == {"right": 1, "right row, wrong column": 2, "right column, wrong row": 1, "both wrong": 1,
                     "no claim": 1}
    assert later == {}  # one-turn episodes: nothing from the third turn on
    # the same pass scores the claims: five player cells and one box cell, two of them true
    assert by_turn["first"]["position"] == {"n_claims": 6, "claim_accuracy": 2 / 6}
    assert by_object == {"box": {"n_claims": 1, "claim_accuracy": 1.0}, "player": {"n_claims": 5, "claim_accuracy": 0.2}}
    assert by_subject == {"target": {"n_claims": 1, "claim_accuracy": 1.0}}  # (5, 5) from the box at (3, 3)


def test_claims_by_turn_refuses_a_directory_without_grid_evaluations(tmp_path, capsys):
    (tmp_path / "m-bandit-val").mkdir()  # Bandit thoughts place nothing on a grid, so bandit is not one of its presets
    (tmp_path / "m-bandit-val" / "summary.json").write_text("{}")
    assert claims_by_turn.main([str(tmp_path), "m"]) == 2
    assert "no finished m-PRESET-val evaluation" in capsys.readouterr().err
    assert not (claims_by_turn.HERE / "claims_by_turn-m.json").exists()


def test_claims_by_turn_writes_under_the_label_not_the_run_name(tmp_path, monkeypatch):
    """A lineage run again keeps its runs' name (``q7``); the label names the data so the first check's file stays."""
    assert ragen_eval(["--model", "oracle", "--env", "sokoban", "--split", "val", "--episodes", "2",
                       "--out", str(tmp_path / "eval"), "--run-name", "q7-sokoban-val", "--no-progress"]) == EXIT_OK
    monkeypatch.setattr(claims_by_turn, "HERE", tmp_path)
    (tmp_path / "claims_by_turn-q7.json").write_text("first check\n")
    assert claims_by_turn.main([str(tmp_path / "eval"), "q7", "q7rerun"]) == 0
    assert (tmp_path / "claims_by_turn-q7.json").read_text() == "first check\n"
    written = json.loads((tmp_path / "claims_by_turn-q7rerun.json").read_text())
    assert list(written["by_turn"]) == ["sokoban"]  # the one finished grid preset under the folder
    assert written["by_turn"]["sokoban"] == claims_by_turn.score_evaluation(
        tmp_path / "eval" / "q7-sokoban-val" / "episodes.jsonl")["by_turn"]


def test_positions_from_the_third_turn_on_are_split_by_object(tmp_path):
    """Turns 3 to 5 of one episode: the box placed right then wrong, the player right three times; turns 1 and 2 (a
    wrong player cell) count only in their own groups."""
    def turn(think: str, player: list[int], prompt_tokens: int | None) -> dict:
        return {"think": think, "state_before": _room(player), "actions_parsed": ["Up"],
                "completion": {"prompt_tokens": prompt_tokens}}

    path = tmp_path / "episodes.jsonl"
    rewrite_jsonl(path, [{"protocol": {"coordinate_base": 0},
                          "turns": [turn("I am at (1, 1).", [2, 4], 500), turn("I am at (1, 1).", [2, 4], 1023),
                                    turn("I am at (2, 4). The box is at (3, 3).", [2, 4], 1024),
                                    turn("I am at (1, 4). The box is at (4, 3).", [1, 4], 4500),
                                    turn("I am at (1, 4).", [1, 4], None)]}])
    scored = claims_by_turn.score_evaluation(path)
    by_turn, by_object = scored["by_turn"], scored["positions_first_turn_by_object"]
    later, by_length = scored["positions_later_turns_by_object"], scored["positions_by_prompt_tokens"]
    assert later == {"box": {"n_claims": 2, "claim_accuracy": 0.5}, "player": {"n_claims": 3, "claim_accuracy": 1.0}}
    assert by_object == {"player": {"n_claims": 1, "claim_accuracy": 0.0}}
    assert by_turn["third and later"]["position"] == {"n_claims": 5, "claim_accuracy": 0.8}
    # every turn's positions by prompt length, in bins of 1,024 tokens (empty bins and the uncounted prompt left out)
    assert by_length == {"0-1023": {"n_claims": 2, "claim_accuracy": 0.0},
                         "1024-2047": {"n_claims": 2, "claim_accuracy": 1.0},
                         "4096-5119": {"n_claims": 2, "claim_accuracy": 0.5}}
