"""scripts/openenv_cards.py: the committed cards (served at the OpenEnv server's /metadata) are current and
say what the committed data says. Needs no OpenEnv: the cards are plain JSON."""

from __future__ import annotations

import csv
import json

import ragen_envs
from tests.script_modules import REPO, load_script

cards_script = load_script("scripts/openenv_cards.py")
CARDS = json.loads((REPO / "ragen_envs" / "openenv_server" / "cards.json").read_text())


def test_the_committed_cards_are_what_the_script_writes():
    assert cards_script.main(["--check"]) == 0
    assert list(CARDS) == [preset.name for preset in ragen_envs.PRESETS]


def test_cards_agree_with_the_leaderboard_csv_and_the_split_guarantee():
    # The leaderboard's CSV is written beside its JSON from the same runs: an independent reading.
    with (REPO / "leaderboards" / "leaderboard.csv").open() as f:
        rows = [row for row in csv.DictReader(f) if row["split"] == "test"]
    for game in ("sokoban", "frozenlake", "bandit", "countdown", "sudoku", "rubiks_2x2"):
        for model in ("oracle", "random"):
            played = [float(row[game]) for row in rows if row["model"] == model and row[game] != "-"]
            assert len(played) == 1 and abs(CARDS[game][f"{model}_test"]["success"] - played[0]) < 1e-3, (game, model)
    # Content-disjoint splits: no test level among the train levels, wherever there is a level to hold out and
    # the level space was sampled (scripts/level_space.py).
    measured = {name: card["split_leak"] for name, card in CARDS.items() if card["level_space"] is not None}
    assert {"sokoban", "frozenlake", "boxoban"} <= set(measured)
    assert {name: leak for name, leak in measured.items() if name != "bandit"} == \
        {name: 0 for name in measured if name != "bandit"}
    assert CARDS["frozenlake"]["level_space"]["exact"]["test"] == 242004
    assert CARDS["sokoban"]["budgets"] == {"max_turns": 5, "max_actions_per_turn": 5, "max_actions_per_episode": 20,
                                           "format_penalty": -0.1}
    assert CARDS["frozenlake_det"]["rl_gain"]["rl_success"] > CARDS["frozenlake_det"]["rl_gain"]["sft_success"]


def test_every_card_has_oracle_and_random_success_on_the_test_split():
    missing = [name for name, card in CARDS.items() if card["oracle_test"] is None or card["random_test"] is None]
    assert not missing
    # The visual presets play their text presets' levels, in episodes of their own: the same agents win the same
    # levels (frozenlake's figures come from the leaderboard's runs, visual_frozenlake's from the preset runs).
    for visual, text in (("visual_sokoban", "simple_sokoban"), ("visual_frozenlake", "frozenlake")):
        for figure in ("oracle_test", "random_test"):
            assert CARDS[visual][figure]["success"] == CARDS[text][figure]["success"], (visual, figure)
