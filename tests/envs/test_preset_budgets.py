"""Every registered preset's default text budget fits its levels: optimal play fits on at least 95% of
them, and where it fits, playing the certificate through the text protocol wins."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.text_game import text_budget
from ragen_envs.text import ProtocolConfig, TextEpisode
from ragen_envs.text import oracle_responses

LEVELS = 200  # per preset
FEWER_LEVELS = {"boxoban": 60, "boxoban_hard": 60,  # these generators make about 60 levels a second
                "sudoku_9x9": 40}  # about 30 levels a second


def _optimum(certificate: dict, game: str) -> tuple[int, list[int] | None]:
    """Moves of optimal play and, where play is deterministic, the moves themselves."""
    if game == "sokoban":
        return certificate["moves"], certificate["actions"]
    if game == "frozenlake":
        path = certificate["shortest_path"]
        return certificate["shortest_path_length"], None if certificate["is_slippery"] else list(path)
    if game == "bandit":
        return 1, None  # one pull
    return certificate["optimal_steps"], certificate["optimal_actions"]  # the typed fields of every other game


@pytest.mark.parametrize("preset", [p.name for p in ragen_envs.PRESETS])
def test_the_default_budget_fits_optimal_play(preset: str) -> None:
    fits, levels = 0, FEWER_LEVELS.get(preset, LEVELS)
    for seed in range(levels):
        episode = TextEpisode(preset, seed)
        budget = episode.config
        assert budget.max_turns * budget.max_actions_per_turn >= budget.max_actions_per_episode
        game = episode.game.state_dict()["game"]
        moves, plan = _optimum(episode.certificate, game)
        if moves > budget.max_actions_per_episode:
            continue
        fits += 1
        if plan is None:
            continue
        for reply in oracle_responses(plan, budget, episode.game.action_names):
            episode.step(reply)
        assert episode.success, f"{preset} seed {seed}: optimal play of {moves} moves lost ({episode.end_reason})"
    assert fits >= 0.95 * levels, f"{preset}: optimal play fits the default budget on only {fits} of {levels} levels"


def test_boxoban_sized_levels_get_more_than_ragens_ten_actions() -> None:
    """The issue's case: the boxoban presets used to allow 10 actions, and no level needs so few."""
    for preset in ("boxoban", "boxoban_hard"):
        config = ProtocolConfig().resolved(ragen_envs.make(preset).unwrapped.text_defaults)
        assert config.max_actions_per_episode >= 50
        assert config.max_turns * config.max_actions_per_turn >= config.max_actions_per_episode


def test_a_protocol_override_still_wins_over_the_preset_budget() -> None:
    episode = TextEpisode("boxoban", 0, {"max_actions_per_episode": 10, "max_turns": 5})
    assert (episode.config.max_actions_per_episode, episode.config.max_turns) == (10, 5)


@given(st.integers(1, 10_000))
def test_text_budget_always_fits_the_actions(actions: int) -> None:
    budget = text_budget(actions)
    assert budget["max_actions_per_episode"] == actions
    assert budget["max_turns"] * budget["max_actions_per_turn"] >= actions
    assert budget["max_turns"] >= 5 and budget["max_actions_per_turn"] == 5
