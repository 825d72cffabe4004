"""Value iteration and the certificate, checked against an independent expectimax on Gymnasium's model."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs.frozen_lake import (
    FrozenLakeConfig,
    FrozenLakeLevel,
    certificate,
    generate,
    plan_turn,
    reach_probability,
    value_iteration,
)
from ragen_envs.frozen_lake.planning import MOVES


def expectimax(level: FrozenLakeLevel, is_slippery: bool, success_rate: float, horizon: int) -> np.ndarray:
    """Best chance of reaching the goal within t steps, by plain recursion over Gymnasium's own transition table."""
    model = GymFrozenLake(desc=list(level.rows), is_slippery=is_slippery, success_rate=success_rate).P
    letters = "".join(level.rows)

    @lru_cache(maxsize=None)
    def value(state: int, steps: int) -> float:
        if letters[state] == "G":
            return 1.0
        if letters[state] == "H" or steps == 0:
            return 0.0
        return max(
            sum(p * (1.0 if reward > 0 else (0.0 if done else value(nxt, steps - 1)))
                for p, nxt, reward, done in model[state][a])
            for a in range(4)
        )

    return np.array([[value(s, t) for s in range(len(letters))] for t in range(horizon + 1)]).reshape(
        horizon + 1, level.height, level.width
    )


@settings(max_examples=25, deadline=None)
@given(
    height=st.integers(1, 4),
    width=st.integers(2, 4),
    seed=st.integers(0, 10**6),
    is_slippery=st.booleans(),
    success_rate=st.sampled_from([1 / 3, 0.5, 0.8, 1.0]),
    horizon=st.integers(0, 7),
)
def test_value_iteration_matches_expectimax(height, width, seed, is_slippery, success_rate, horizon):
    level = generate(FrozenLakeConfig(height=height, width=width, p_frozen=0.7), seed)
    table = value_iteration(level, is_slippery=is_slippery, success_rate=success_rate, horizon=horizon)
    expected = expectimax(level, is_slippery, success_rate, horizon)
    np.testing.assert_allclose(table.success_prob, expected, atol=1e-12)
    # The policy achieves the value: one Bellman backup with the chosen action reproduces it.
    model = GymFrozenLake(desc=list(level.rows), is_slippery=is_slippery, success_rate=success_rate).P
    flat = table.success_prob.reshape(horizon + 1, -1)
    letters = "".join(level.rows)
    for t in range(1, horizon + 1):
        for s, letter in enumerate(letters):
            if letter in "HG":
                assert table.policy.reshape(horizon + 1, -1)[t, s] == -1
                continue
            a = table.policy.reshape(horizon + 1, -1)[t, s]
            backup = sum(p * (1.0 if letters[n] == "G" else flat[t - 1, n]) for p, n, _, _ in model[s][a])
            assert backup == pytest.approx(flat[t, s], abs=1e-12)


def test_closed_form_corridor():
    # From S, pushing Right reaches G with 1/3; the two sideways slips bump into the border and stay put.
    level = FrozenLakeLevel.from_text("SG")
    table = value_iteration(level, horizon=6)
    np.testing.assert_allclose(table.success_prob[:, 0, 0], [1 - (2 / 3) ** t for t in range(7)])
    assert reach_probability(level)[0, 0] == pytest.approx(1.0)
    # A hole below the start: pushing Right risks sliding Down into it; pushing Up is safe (its slips are a
    # bump into the border or a slide Right onto the goal), so Up is optimal from two steps on and wins surely.
    level = FrozenLakeLevel.from_text("SG\nHF")
    table = value_iteration(level, horizon=6)
    np.testing.assert_allclose(table.success_prob[:, 0, 0], [1 - (2 / 3) ** t for t in range(7)])
    assert list(table.policy[2:, 0, 0]) == [3] * 5
    assert reach_probability(level)[0, 0] == pytest.approx(1.0)


def test_ties_go_to_the_faster_action():
    level = FrozenLakeLevel.from_text("SFFG")
    table = value_iteration(level, is_slippery=False, horizon=8)
    assert all(table.action((0, c), t) == 2 for c in range(3) for t in range(3 - c, 9))


@settings(max_examples=15, deadline=None)
@given(size=st.integers(2, 5), seed=st.integers(0, 10**6), success_rate=st.sampled_from([1 / 3, 0.6]))
def test_unlimited_probability_is_the_limit_of_value_iteration(size, seed, success_rate):
    level = generate(FrozenLakeConfig(height=size, width=size), seed)
    unlimited = reach_probability(level, success_rate=success_rate)
    table = value_iteration(level, success_rate=success_rate, horizon=1000)
    assert np.all(np.diff(table.success_prob, axis=0) >= -1e-15)  # more steps never hurt
    assert np.all(table.success_prob[-1] <= unlimited + 1e-9)
    np.testing.assert_allclose(table.success_prob[-1], unlimited, atol=1e-3)  # VI creeps up slowly on some lakes
    # The answer is a fixed point of the Bellman optimality equation, checked on Gymnasium's own model.
    model = GymFrozenLake(desc=list(level.rows), success_rate=success_rate).P
    flat = unlimited.ravel()
    letters = "".join(level.rows)
    for s, letter in enumerate(letters):
        if letter in "HG":
            assert flat[s] == (1.0 if letter == "G" else 0.0)
        else:
            best = max(sum(p * flat[n] for p, n, _, _ in model[s][a]) for a in range(4))
            assert best == pytest.approx(flat[s], abs=1e-9)


def test_certificate_fields():
    config = FrozenLakeConfig(height=5, width=5)
    for seed in range(5):
        level = generate(config, seed)
        cert = certificate(level, config).to_dict()
        table = value_iteration(level, horizon=10)
        assert cert["optimal_success_prob"] == table.success_prob[10][level.start]
        assert cert["optimal_success_prob"] <= cert["optimal_success_prob_unlimited"] + 1e-12
        assert cert["optimal_success_prob"] > 0 or cert["shortest_path_length"] > 10
        assert cert["optimal_success_prob"] == 0 or cert["shortest_path_length"] <= 10
    deterministic = FrozenLakeConfig(height=5, width=5, is_slippery=False, certify_unlimited=False)
    cert = certificate(generate(deterministic, 0), deterministic).to_dict()
    assert cert["optimal_success_prob_unlimited"] is None and cert["success_rate"] == 1.0


def test_value_table_action_lookup_and_bad_arguments():
    level = FrozenLakeLevel.from_text("SFG")
    table = value_iteration(level, is_slippery=False, horizon=3)
    assert table.action((0, 0), 2) == 2 and table.action((0, 0), 99) == 2
    assert table.action((0, 2), 1) == -1
    with pytest.raises(ValueError, match="horizon"):
        value_iteration(level, horizon=-1)
    with pytest.raises(ValueError, match="success_rate"):
        value_iteration(level, success_rate=0.0)
    with pytest.raises(ValueError, match="success_rate"):
        reach_probability(level, success_rate=1.5)
    with pytest.raises(ValueError, match="no hole-free path"):
        certificate(FrozenLakeLevel.from_text("SHG"), FrozenLakeConfig(height=1, width=3))


def gym_step_distances(level: FrozenLakeLevel) -> dict[int, int]:
    """Moves to the goal from every cell with a hole-free path, by BFS over Gymnasium's non-slippery model."""
    model = GymFrozenLake(desc=list(level.rows), is_slippery=False).P
    letters = "".join(level.rows)
    goal = letters.index("G")
    distance, frontier = {goal: 0}, [goal]
    while frontier:
        following = []
        for s in range(len(letters)):
            if s in distance or letters[s] == "H":
                continue
            if any(model[s][a][0][1] in frontier for a in range(4)):
                distance[s] = distance[frontier[0]] + 1
                following.append(s)
        frontier = following
    return distance


@settings(max_examples=25, deadline=None)
@given(height=st.integers(1, 5), width=st.integers(2, 5), seed=st.integers(0, 10**6), pick=st.integers(0, 10**6),
       turn_actions=st.integers(1, 5))
def test_plan_turn_without_slipping_walks_a_shortest_path_from_anywhere(height, width, seed, pick, turn_actions):
    level = generate(FrozenLakeConfig(height=height, width=width, p_frozen=0.7), seed)
    distance = gym_step_distances(level)
    starts = sorted(s for s, d in distance.items() if d > 0)
    position = divmod(starts[pick % len(starts)], level.width)
    moves = 0
    while level.rows[position[0]][position[1]] != "G":
        left = distance[position[0] * level.width + position[1]]
        plan = plan_turn(level, position, is_slippery=False, success_rate=1 / 3, turn_actions=turn_actions,
                         actions_left=10, turns_left=5)
        assert len(plan) == min(turn_actions, left)
        for action in plan:
            row, col = position[0] + MOVES[action][0], position[1] + MOVES[action][1]
            assert level.rows[row][col] != "H"
            position = (row, col)
            moves += 1
        assert distance[position[0] * level.width + position[1]] == left - len(plan)  # every move gets closer
    assert moves == distance[starts[pick % len(starts)]]


@settings(max_examples=25, deadline=None)
@given(size=st.integers(2, 4), seed=st.integers(0, 10**6), success_rate=st.sampled_from([1 / 3, 0.6]),
       turn_actions=st.integers(1, 5), actions_left=st.integers(1, 10), turns_left=st.integers(1, 5))
def test_plan_turn_with_slipping_plays_optimal_moves_from_the_intended_cells(size, seed, success_rate, turn_actions,
                                                                              actions_left, turns_left):
    level = generate(FrozenLakeConfig(height=size, width=size), seed)
    values = expectimax(level, True, success_rate, actions_left).reshape(actions_left + 1, -1)
    model = GymFrozenLake(desc=list(level.rows), success_rate=success_rate).P
    letters = "".join(level.rows)

    def q(cell: int, action: int, steps: int) -> float:
        return sum(p * (1.0 if letters[n] == "G" else values[steps - 1, n]) for p, n, _, _ in model[cell][action])

    position = level.start
    plan = plan_turn(level, position, is_slippery=True, success_rate=success_rate, turn_actions=turn_actions,
                     actions_left=actions_left, turns_left=turns_left)
    share = min(turn_actions, -(-actions_left // turns_left))
    assert 1 <= len(plan) <= share
    for step, action in enumerate(plan):
        cell = position[0] * level.width + position[1]
        steps = actions_left - step
        assert q(cell, action, steps) == pytest.approx(max(q(cell, a, steps) for a in range(4)), abs=1e-12)
        row = min(max(position[0] + MOVES[action][0], 0), level.height - 1)
        col = min(max(position[1] + MOVES[action][1], 0), level.width - 1)
        position = (row, col)
        if level.rows[row][col] in "HG":  # a plan stops at the first intended hole or goal
            assert step == len(plan) - 1
    if len(plan) < share:
        assert level.rows[position[0]][position[1]] in "HG"


def test_plan_turn_by_hand_and_bad_positions():
    level = FrozenLakeLevel.from_text("SFFG")
    assert plan_turn(level, (0, 1), is_slippery=False, success_rate=1.0, turn_actions=5, actions_left=9,
                     turns_left=5) == [2, 2]
    # Slipping that never happens: the share is ceil(10 / 2) = 5, but the plan stops at the goal after 3.
    assert plan_turn(level, (0, 0), is_slippery=True, success_rate=1.0, turn_actions=5, actions_left=10,
                     turns_left=2) == [2, 2, 2]
    # "SG/HF": Up is safe (its slips bump the border or slide onto the goal) and leaves the player in place, so
    # the even share of 10 actions over 5 turns is two Ups.
    assert plan_turn(FrozenLakeLevel.from_text("SG\nHF"), (0, 0), is_slippery=True, success_rate=1 / 3,
                     turn_actions=5, actions_left=10, turns_left=5) == [3, 3]
    # "SG/FH" with two steps left: Up first (safe); the second move has one step to go, where every move but
    # Left wins with 1/3 and the tie goes to the lowest action id, Down. Planning it with two steps gives Up.
    assert plan_turn(FrozenLakeLevel.from_text("SG\nFH"), (0, 0), is_slippery=True, success_rate=1 / 3,
                     turn_actions=5, actions_left=2, turns_left=1) == [3, 1]
    for slippery in (False, True):
        assert plan_turn(level, (0, 3), is_slippery=slippery, success_rate=1 / 3, turn_actions=5, actions_left=4,
                         turns_left=2) == [0]
        with pytest.raises(ValueError, match="outside the 1x4 lake"):
            plan_turn(level, (1, 0), is_slippery=slippery, success_rate=1 / 3, turn_actions=5, actions_left=4,
                      turns_left=2)
