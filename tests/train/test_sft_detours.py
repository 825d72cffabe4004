"""Detour demonstrations (``DemoConfig.detour_turns``): Sokoban demonstrations that open with a walk over free
floor and back, kept as history but out of the SFT loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs.text.episode import TextEpisode
from ragen_train.demos import DemoConfig, detour_moves, level_seeds, play_demo
from tests.train.loss_spans import trained_spans

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ragen_train.sft import config_from_args, tokenize_demos  # noqa: E402

pytestmark = pytest.mark.train

STEP = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


@pytest.mark.parametrize(("env", "count"), [("simple_sokoban", 40), ("larger_sokoban", 12), ("boxoban", 4)])
def test_a_detour_pushes_nothing_returns_to_the_start_and_the_oracle_plays_on(env: str, count: int) -> None:
    detoured = DemoConfig(env=env, mode="oracle", num_episodes=count, seed=3, thought="grounded", detour_turns=3)
    plain = DemoConfig(env=env, mode="oracle", num_episodes=count, seed=3, thought="grounded")
    seen = set()
    for index, seed in enumerate(level_seeds(detoured)):
        demo = play_demo(detoured, index, seed)
        turns = demo.record["turns"]
        assert demo.context_turns == demo.record["detour_turns"] <= 3
        assert demo.context_turns < len(turns)  # at least one turn is trained on
        seen.add(demo.context_turns)
        start = turns[0]["state_before"]
        row, col = start["player"]
        walls = {tuple(c) for c in start["walls"]}
        for turn in turns[:demo.context_turns]:
            assert turn["state_after"]["boxes"] == start["boxes"]  # nothing pushed
            assert 1 <= len(turn["actions_executed"]) <= 5
            for move in turn["actions_executed"]:
                row, col = row + STEP[move][0], col + STEP[move][1]
                assert (row, col) not in walls and [row, col] not in start["boxes"]
        assert [row, col] == start["player"]  # back where it began
        # from there the oracle plays as it does with no detour: the same replies, level for level
        alone = [m["content"] for m in play_demo(plain, index, seed).messages if m["role"] == "assistant"]
        replies = [m["content"] for m in demo.messages if m["role"] == "assistant"]
        assert replies[demo.context_turns] == alone[0]
    assert 0 in seen and max(seen) > 0  # the number of detour turns is drawn per demonstration


@settings(max_examples=80, deadline=None)
@given(turns=st.integers(0, 10), max_turns=st.integers(1, 8), per_turn=st.integers(1, 6),
       per_episode=st.integers(1, 40), level=st.integers(0, 50), seed=st.integers(0, 2**32 - 1))
def test_a_detour_fits_every_budget_and_comes_back(turns: int, max_turns: int, per_turn: int, per_episode: int,
                                                    level: int, seed: int) -> None:
    protocol = {"max_turns": max_turns, "max_actions_per_turn": per_turn, "max_actions_per_episode": per_episode}
    episode = TextEpisode("larger_sokoban", level, protocol)
    state = episode.game.state_dict()
    walk = detour_moves(episode, turns, np.random.default_rng(seed))
    assert len(walk) <= min(turns, max_turns - 1)  # a turn is left for the oracle
    assert all(1 <= len(moves) <= per_turn for moves in walk)
    assert sum(len(moves) for moves in walk) <= per_episode // 2
    blocked = {tuple(c) for c in state["walls"]} | {tuple(c) for c in state["boxes"]}
    row, col = state["player"]
    for move in (m for moves in walk for m in moves):
        row, col = row + STEP[move][0], col + STEP[move][1]
        assert (row, col) not in blocked  # it pushes nothing
    assert [row, col] == list(state["player"])


def test_detour_replies_are_history_out_of_the_loss(tiny_model_dir: Path) -> None:
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    config = DemoConfig(env="simple_sokoban", mode="oracle", num_episodes=12, seed=3, thought="grounded",
                        detour_turns=3)
    demos = [play_demo(config, i, s) for i, s in enumerate(level_seeds(config))]
    assert any(d.context_turns for d in demos)
    for demo, example in zip(demos, tokenize_demos(demos, tok, 8192), strict=True):
        replies = [m["content"] for m in demo.messages if m["role"] == "assistant"]
        spans = trained_spans(example.input_ids, example.loss_mask)
        assert [tok.decode(span) for span in spans] == [r + tok.eos_token for r in replies[demo.context_turns:]]
        # the detour is still in the tokens, as the history the trained turns read
        assert all(r in tok.decode(example.input_ids) for r in replies[:demo.context_turns])


def test_detours_are_for_sokoban_and_per_game_on_the_command_line() -> None:
    with pytest.raises(ValueError, match="detour_turns is for Sokoban games; 'frozenlake' is not one"):
        DemoConfig(env="frozenlake", detour_turns=2)
    with pytest.raises(ValueError, match="detour_turns"):
        DemoConfig(env="simple_sokoban", detour_turns=-1)
    config = config_from_args(["--out", "x", "--env", "simple_sokoban,frozenlake", "--detour-turns", "4,0"])
    assert [d.detour_turns for d in config.demos] == [4, 0]
    assert DemoConfig(env="simple_sokoban").detour_turns == 0  # off unless asked for
    # a run without detours writes the config it wrote before they existed, so its older run directories resume
    assert "detour_turns" not in DemoConfig(env="simple_sokoban").to_dict()
    assert DemoConfig(env="simple_sokoban", detour_turns=2).to_dict()["detour_turns"] == 2
