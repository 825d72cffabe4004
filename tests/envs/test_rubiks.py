"""The 2x2 cube: turns behave as turns, the distance table has the 2x2's known layer sizes, and each
certificate solves its level in a number of turns no shorter sequence reaches (a BFS written here)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.rubiks import RubiksConfig, cube, generate


def bfs_distance(start: tuple[str, ...], limit: int) -> int | None:
    """Fewest turns from ``start`` to solved by breadth-first search over sticker states."""
    frontier, seen = {start}, {start}
    for depth in range(limit + 1):
        if cube.SOLVED in frontier:
            return depth
        frontier = {cube.turn(s, m) for s in frontier for m in range(len(cube.MOVES))} - seen
        seen |= frontier
    return None


def ball(state: tuple[str, ...], radius: int) -> set[tuple[str, ...]]:
    """Every state within ``radius`` turns of ``state``."""
    seen = frontier = {state}
    for _ in range(radius):
        frontier = {cube.turn(s, m) for s in frontier for m in range(len(cube.MOVES))} - seen
        seen = seen | frontier
    return seen


def test_quarter_turns_have_order_four_and_inverses_undo():
    for face in range(3):
        plus, minus, half = 3 * face, 3 * face + 1, 3 * face + 2
        state = cube.scramble([plus] * 4)
        assert state == cube.SOLVED
        assert cube.scramble([plus, minus]) == cube.SOLVED and cube.scramble([plus, plus]) == cube.scramble([half])
        assert cube.scramble([plus]) != cube.SOLVED


def test_the_table_has_the_known_2x2_half_turn_layer_sizes():
    # the 2x2's published distance distribution (half-turn metric, one corner fixed), first layers
    assert cube.counts(6) == [1, 9, 54, 321, 1847, 9992, 50136]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_the_certificate_is_optimal_by_an_independent_bfs(seed):
    config = RubiksConfig(min_distance=1, max_distance=4)
    level = generate(config, seed)
    assert generate(config, seed) == level
    env = ragen_envs.make("rubiks_2x2").unwrapped
    env.reset(options={"level": level})
    cert = env.certificate
    assert cert.optimal_steps == level.distance == bfs_distance(level.stickers, 4)
    state = level.stickers
    for move in cert.optimal_actions:
        state = cube.turn(state, move)
    assert state == cube.SOLVED


def test_hard_levels_lie_at_their_distance_and_the_certificate_wins():
    env = ragen_envs.make("rubiks_2x2_hard")
    for seed in range(5):
        _, info = env.reset(seed=seed)
        cert = info["certificate"]
        assert 5 <= cert["optimal_steps"] == cert["distance"] <= 8
        # nothing shorter: the balls of (d - 1) / 2 turns around the level and around solved do not meet
        shorter = cert["distance"] - 1
        assert not ball(env.unwrapped.level.stickers, (shorter + 1) // 2) & ball(cube.SOLVED, shorter // 2)
        for move in cert["optimal_actions"]:
            _, reward, terminated, _, step = env.step(move)
        assert terminated and step["success"] and reward == 1.0


def test_an_apostrophe_is_not_read_as_a_clockwise_turn():
    from ragen_envs.text import TextEpisode

    episode = TextEpisode("rubiks_2x2", 0)
    turn = episode.step("<think>t</think><answer>U'</answer>")
    assert not turn["format_ok"]
    assert episode.step("<think>t</think><answer>u cw || Ui || U2</answer>")["format_ok"]


@pytest.mark.parametrize("bad", [{"min_distance": 0}, {"min_distance": 5, "max_distance": 4}, {"max_distance": 12}])
def test_bad_configs_are_one_clear_error(bad):
    with pytest.raises(ValueError, match="RubiksConfig"):
        RubiksConfig(**bad)


def test_threads_deepening_the_table_at_once_get_the_true_distances():
    # ragen-eval serve answers on worker threads; before the lock, 33 of these 40 came out wrong
    from concurrent.futures import ThreadPoolExecutor

    levels = [generate(RubiksConfig(1, 8), seed) for seed in range(40)]
    cube._table.cache_clear()  # a fresh table, deepened by the threads below
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda level: cube.distance(level.stickers), levels))
    assert found == [level.distance for level in levels]
