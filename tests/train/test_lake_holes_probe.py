"""experiments/thinking_model/lake_holes_probe.py: the lake thought with its holes listed, checked by the harness."""

from __future__ import annotations

import pytest

from ragen_envs.text.episode import TextEpisode
from ragen_eval.consistency.scoring import score_turn
from ragen_train import thoughts
from ragen_train.demos import oracle_actions, render_response
from tests.script_modules import load_script

probe = load_script("experiments/thinking_model/lake_holes_probe.py")


@pytest.mark.parametrize("preset", ["frozenlake", "frozenlake_8x8", "frozenlake_det"])
def test_every_hole_is_listed_and_every_claim_is_true(preset, monkeypatch):
    monkeypatch.setattr(thoughts, "_lake", probe.lake_with_holes)
    for seed in range(25):
        episode = TextEpisode(preset, seed=seed)
        state = episode.game.state_dict()
        think = render_response(episode, oracle_actions(episode), "grounded").split("</think>")[0][len("<think>"):]
        scored = score_turn({"state_before": state, "think": think}, game="frozenlake",
                            coordinate_base=episode.config.coordinate_base)
        claims = scored["claims"]
        assert claims and all(c["verdict"] is True for c in claims), (think, claims)
        listed = {tuple(c["cells"][0]) for c in claims if c["canonical"].startswith("at(hole")}
        assert listed == {tuple(cell) for cell in state["holes"]}, think


def test_the_package_thought_is_the_probe_thought_without_the_list():
    episode = TextEpisode("frozenlake_8x8", seed=3)
    board = thoughts.Board.from_state(episode.game.state_dict())
    at = lambda cell: f"({cell[0]}, {cell[1]})"  # noqa: E731
    package, listed = thoughts._lake(board, at), probe.lake_with_holes(board, at)
    assert listed[0] == package[0] and listed[2:] == package[1:]
    assert listed[1].startswith("The holes are at (")


def test_only_training_is_wrapped(capsys):
    assert probe.main(["eval", "--model", "x"]) == 2
    assert "usage" in capsys.readouterr().err
