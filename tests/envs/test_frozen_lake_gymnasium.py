"""FrozenLake against Gymnasium's own FrozenLake on the same map (``desc=``).

Three checks: (1) with the same random stream both envs take identical trajectories; (2) a chi-square
test over many steps finds our transition frequencies consistent with Gymnasium's transition table,
while the same test rejects a model with the wrong slip rate; (3) the value-iteration optimum matches
Monte Carlo rollouts of the optimal policy in Gymnasium's env within 4 standard errors + 0.005.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake

from ragen_envs.frozen_lake import FrozenLakeConfig, FrozenLakeEnv, generate, value_iteration

MAPS = ["SFFF\nFHFH\nFFFH\nHFFG", "FFFFF\nFHSHF\nFFFFF\nHFHFF\nFFFGH", "SFFFFF\nFFHFFF\nFFFFHG"]


def _pair(text: str, is_slippery: bool = True, success_rate: float = 1 / 3):
    rows = text.splitlines()
    ours = FrozenLakeEnv(config=FrozenLakeConfig(height=len(rows), width=len(rows[0]), is_slippery=is_slippery,
                                                 success_rate=success_rate, certify_unlimited=False))
    theirs = GymFrozenLake(desc=rows, is_slippery=is_slippery, success_rate=success_rate)
    return ours, theirs


def chi2_sf(x: float, df: int) -> float:
    """Upper tail of the chi-square distribution (Wilson-Hilferty; exact enough for df >= 5)."""
    z = ((x / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.mark.parametrize("text", MAPS)
@pytest.mark.parametrize("success_rate", [1 / 3, 0.6])
def test_same_random_stream_gives_the_same_trajectory(text, success_rate):
    ours, theirs = _pair(text, success_rate=success_rate)
    actions = np.random.default_rng(1)
    for episode in range(40):
        ours.reset(options={"level": text})
        start, _ = theirs.reset(seed=episode)
        assert divmod(start, ours.config.width) == ours.position
        ours.np_random = np.random.default_rng(episode)
        theirs.np_random = np.random.default_rng(episode)
        for _ in range(30):
            a = int(actions.integers(4))
            _, r1, t1, _, info = ours.step(a)
            s2, r2, t2, _, _ = theirs.step(a)
            assert (ours.position, r1, t1) == (divmod(s2, ours.config.width), float(r2), t2)
            if t1:
                break


def _transition_counts(env, text: str, steps: int, seed: int) -> Counter:
    """(state, action, next state) counts over ``steps`` random moves, resetting at each episode end."""
    actions = np.random.default_rng(seed)
    counts: Counter = Counter()
    env.reset(seed=seed, options={"level": text})
    for _ in range(steps):
        state = env._pos
        a = int(actions.integers(4))
        _, _, terminated, _, _ = env.step(a)
        counts[state, a, env._pos] += 1
        if terminated:
            env.reset(options={"level": text})
    return counts


def _chi2_against(model: dict, counts: Counter) -> tuple[float, int]:
    stat, df = 0.0, 0
    for (state, action) in {(s, a) for s, a, _ in counts}:
        expected = Counter()
        for p, nxt, _, _ in model[state][action]:
            expected[nxt] += p
        n = sum(c for (s, a, _), c in counts.items() if (s, a) == (state, action))
        outcomes = [o for o, p in expected.items() if p > 0]
        assert all(counts[state, action, o] == 0 for o in {o for s, a, o in counts if (s, a) == (state, action)}
                   if o not in outcomes), "a transition Gymnasium never makes"
        if len(outcomes) > 1:
            stat += sum((counts[state, action, o] - n * expected[o]) ** 2 / (n * expected[o]) for o in outcomes)
            df += len(outcomes) - 1
    return stat, df


@pytest.mark.parametrize("text", MAPS[:2])
def test_transition_frequencies_match_gymnasium(text):
    ours, theirs = _pair(text)
    counts = _transition_counts(ours, text, steps=20_000, seed=0)
    stat, df = _chi2_against(theirs.P, counts)
    assert df >= 20
    assert chi2_sf(stat, df) > 1e-3, (stat, df)
    # The same test has power: it rejects Gymnasium's model with a different slip rate.
    _, wrong = _pair(text, success_rate=0.45)
    stat_wrong, df_wrong = _chi2_against(wrong.P, counts)
    assert chi2_sf(stat_wrong, df_wrong) < 1e-6, (stat_wrong, df_wrong)


def test_deterministic_transitions_match_gymnasium_exactly():
    text = MAPS[1]
    ours, theirs = _pair(text, is_slippery=False)
    counts = _transition_counts(ours, text, steps=3000, seed=1)
    for (state, action, nxt) in counts:
        [(p, expected, _, _)] = theirs.P[state][action]
        assert p == 1.0 and nxt == expected


@pytest.mark.parametrize("seed", [3, 11, 20])
def test_value_iteration_matches_monte_carlo_in_gymnasium(seed):
    config = FrozenLakeConfig(height=4, width=4)
    level = generate(config, seed)
    horizon = config.horizon
    table = value_iteration(level, horizon=horizon)
    predicted = table.success_prob[horizon][level.start]
    env = GymFrozenLake(desc=list(level.rows))
    n = 3000
    wins = 0
    for episode in range(n):
        state, _ = env.reset(seed=episode + 1000 * seed)
        for steps_left in range(horizon, 0, -1):
            state, reward, terminated, _, _ = env.step(table.action(divmod(state, level.width), steps_left))
            if terminated:
                wins += reward > 0
                break
    estimate = wins / n
    tolerance = 4 * math.sqrt(max(predicted * (1 - predicted), 1e-4) / n) + 0.005
    assert abs(estimate - predicted) <= tolerance, (estimate, predicted, tolerance)
