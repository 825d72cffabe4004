"""Bandit: name sets, shuffling, payoffs against their certificate, text protocol, golden levels, bad input."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.bandit import NAME_POOLS, BanditConfig, BanditEnv, generate

SEEDS = (0, 1, 2, 7, 42, 2024, 123456789)

# sha256 of the certificate's arm list (names, order, payoffs)[:16] after reset(seed=s), for s in SEEDS.
GOLDEN = {
    "bandit": ["a996694006f754a6", "bc1be1136e3300b9", "bc1be1136e3300b9", "a996694006f754a6",
               "bc1be1136e3300b9", "bc1be1136e3300b9", "bc1be1136e3300b9"],
    "bandit_heldout": ["db4b28b5f44db44e", "70a9f648d41edd4f", "e921f426df13152c", "d7dd38540410e4ea",
                       "b3228eedd4e8364e", "e6bd596e85628bc0", "5c034635cb36b079"],
    "bandit_reversed": ["13afe23a4ec5f3bb", "0d53ecfa741d8841", "10e2c61fb447c435", "e5def8124f78ef47",
                        "eb71ce0ddc9cf874", "f037fe01ef4112fa", "d913cfee7c6e5041"],
}

DIGEST_SCRIPT = """
import hashlib, json
import ragen_envs
def digest(env, s):
    arms = env.reset(seed=s)[1]["certificate"]["arms"]
    return hashlib.sha256(json.dumps(arms, sort_keys=True).encode()).hexdigest()[:16]
print(json.dumps({p: [digest(ragen_envs.make(p), s) for s in %r] for p in %r}))
""" % (SEEDS, tuple(GOLDEN))


def _digests() -> dict[str, list[str]]:
    out = {}
    for preset in GOLDEN:
        env = ragen_envs.make(preset)
        out[preset] = [
            hashlib.sha256(json.dumps(env.reset(seed=s)[1]["certificate"]["arms"], sort_keys=True).encode())
            .hexdigest()[:16]
            for s in SEEDS
        ]
    return out


def test_golden_levels_here_and_in_another_process():
    assert _digests() == GOLDEN
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    out = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == GOLDEN


def test_ragen_preset_is_phoenix_against_dragon():
    env = BanditEnv()
    _, info = env.reset(seed=0)
    assert set(env.action_names) == {"Phoenix", "Dragon"}
    arms = {a["name"]: a for a in info["certificate"]["arms"]}
    assert arms["Phoenix"]["low_risk"] and arms["Phoenix"]["expected_reward"] == 0.1
    assert arms["Phoenix"]["variance"] == 0.0
    assert arms["Dragon"]["expected_reward"] == 0.25
    assert arms["Dragon"]["variance"] == pytest.approx(0.25 * 0.75)
    assert info["certificate"]["best_arm_names"] == ["Dragon"]


def test_arm_order_shuffles_about_half_the_time():
    env = BanditEnv()
    env.reset(seed=1)
    n = 400
    dragon_first = sum(env.reset()[1]["certificate"]["arms"][0]["name"] == "Dragon" for _ in range(n))
    assert abs(dragon_first - n / 2) < 4 * math.sqrt(n / 4)
    fixed = BanditEnv(config={"shuffle_arms": False})
    assert all(fixed.reset(seed=s)[0] is not None and fixed.action_names == ("Phoenix", "Dragon") for s in range(20))


@pytest.mark.parametrize("name_set", sorted(NAME_POOLS))
def test_names_come_from_their_pool(name_set):
    pool = NAME_POOLS[name_set]
    env = BanditEnv(config={"name_set": name_set})
    env.reset(seed=0)
    seen_low, seen_high = set(), set()
    for _ in range(200):
        _, info = env.reset()
        for arm in info["certificate"]["arms"]:
            (seen_low if arm["low_risk"] else seen_high).add(arm["name"])
    assert seen_low == set(pool.low_risk) and seen_high == set(pool.high_risk)


def test_name_pools_are_disjoint():
    sets = {name: set(p.low_risk) | set(p.high_risk) for name, p in NAME_POOLS.items()}
    names = sorted(sets)
    for i, a in enumerate(names):
        assert not set(NAME_POOLS[a].low_risk) & set(NAME_POOLS[a].high_risk)
        for b in names[i + 1:]:
            assert not sets[a] & sets[b], (a, b)


@pytest.mark.parametrize("preset", ["bandit", "bandit_reversed"])
def test_rewards_match_the_certificate(preset):
    env = ragen_envs.make(preset)
    n = 4000
    draws: dict[str, list[float]] = {}
    certified: dict[str, dict] = {}
    for episode in range(n):
        _, info = env.reset(seed=episode)
        arm = episode % 2
        _, reward, terminated, truncated, step_info = env.step(arm)
        assert terminated and not truncated
        cert = info["certificate"]["arms"][arm]
        kind = "low" if cert["low_risk"] else "high"
        certified[kind] = cert
        draws.setdefault(kind, []).append(reward)
        assert step_info["success"] == (arm in info["certificate"]["best_arms"])
        assert step_info["expected_reward"] == cert["expected_reward"]
    for key, rewards in draws.items():
        mean, var = np.mean(rewards), np.var(rewards)
        cert = certified[key]
        assert abs(mean - cert["expected_reward"]) <= 4 * math.sqrt(cert["variance"] / len(rewards)) + 1e-12
        assert var == pytest.approx(cert["variance"], abs=0.02)
        if cert["low_risk"]:
            assert set(rewards) == {0.1}
        else:
            assert set(rewards) == {0.0, 1.0}


@settings(max_examples=50, deadline=None)
@given(
    num_arms=st.integers(2, 7),
    low=st.floats(0.0, 1.0),
    high=st.floats(0.0, 2.0),
    prob=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
)
def test_certificate_matches_the_payoff_rule(num_arms, low, high, prob, seed):
    config = BanditConfig(name_set="heldout", num_arms=num_arms, low_risk_reward=low, high_risk_reward=high,
                          high_risk_prob=prob)
    level = generate(config, seed)
    assert len({a.name for a in level.arms}) == num_arms
    assert sum(a.low_risk for a in level.arms) == 1
    risky_probs = sorted(a.pay_prob for a in level.arms if not a.low_risk)
    np.testing.assert_allclose(risky_probs, [prob * k / (num_arms - 1) for k in range(1, num_arms)])
    means = [low if a.low_risk else high * a.pay_prob for a in level.arms]
    variances = [0.0 if a.low_risk else high**2 * a.pay_prob * (1 - a.pay_prob) for a in level.arms]
    np.testing.assert_allclose([a.expected_reward for a in level.arms], means)
    np.testing.assert_allclose([a.variance for a in level.arms], variances, atol=1e-15)
    assert set(level.best_arms) == {i for i, m in enumerate(means) if m >= max(means) - 1e-12}


def test_more_arms_and_paper_reward():
    env = BanditEnv(config={"name_set": "reversed", "num_arms": 4, "low_risk_reward": 0.15})
    _, info = env.reset(seed=3)
    means = sorted(a["expected_reward"] for a in info["certificate"]["arms"])
    np.testing.assert_allclose(means, [0.25 / 3, 0.15, 0.5 / 3, 0.25])
    assert env.action_space.n == 4 and len(env.action_names) == 4
    safe_best = BanditEnv(config={"low_risk_reward": 0.3})
    _, info = safe_best.reset(seed=0)
    assert info["certificate"]["best_arm_names"] == ["Phoenix"]


def test_text_protocol():
    env = BanditEnv(config={"arm_names": ["Slow Oak", "Comet"], "shuffle_arms": False})
    assert isinstance(env, ragen_envs.TextGame) and env.text_defaults["max_actions_per_episode"] == 1
    assert env.action_names == ("Arm1", "Arm2")  # placeholders until reset
    env.reset(seed=0)
    assert env.action_names == ("Slow Oak", "Comet")
    assert env.action_aliases() == {"slow oak": 0, "slowoak": 0, "comet": 1}
    rules = env.rules_text()
    assert "Slow Oak and Comet" in rules and "hidden" in rules and "0.25" not in rules and "0.1" not in rules
    assert "Slow Oak or Comet" in env.legend_text()
    texts = {env.observation_text(fmt) for fmt in ragen_envs.OBSERVATION_FORMATS}
    assert texts == {"Arms: Slow Oak, Comet. Choose one to pull."}
    assert env.state_dict() == {
        "game": "bandit",
        "arms": [{"name": "Slow Oak", "expected_reward": 0.1, "variance": 0.0, "low_risk": True},
                 {"name": "Comet", "expected_reward": 0.25, "variance": 0.1875, "low_risk": False}],
        "chosen": None,
    }
    env.step(0)
    assert env.observation_text() == "You pulled Slow Oak and received 0.1."
    assert env.state_dict()["chosen"] == 0
    json.dumps(env.state_dict())
    revealed = BanditEnv(config={"reveal_payoffs": True})
    revealed.reset(seed=0)
    assert "pays 0.1 every time" in revealed.rules_text() and "probability 0.25" in revealed.rules_text()
    with pytest.raises(ValueError, match="observation format"):
        env.observation_text("table")


def test_rendering():
    env = BanditEnv(render_mode="rgb_array")
    env.reset(seed=0)
    before = env.render()
    assert before.shape == (48, 96, 3)
    env.step(1)
    after = env.render()
    assert not np.array_equal(before[:, 48:], after[:, 48:]) and np.array_equal(before[:, :47], after[:, :47])
    text_env = BanditEnv(render_mode="ansi")
    text_env.reset(seed=0)
    assert "\x1b" not in text_env.render() and "Arms:" in text_env.render()


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        ({"name_set": "greek"}, ValueError, "name_set"),
        ({"num_arms": 1}, ValueError, "num_arms"),
        ({"num_arms": 3}, ValueError, "needs 2"),
        ({"high_risk_prob": 1.5}, ValueError, "high_risk_prob"),
        ({"low_risk_reward": "0.1"}, TypeError, "low_risk_reward"),
        ({"arm_names": ["A"]}, ValueError, "arm_names"),
        ({"arm_names": ["A", "a"]}, ValueError, "differ"),
        ({"shuffle_arms": 1}, TypeError, "shuffle_arms"),
        ({"arms": 2}, ValueError, "unknown BanditConfig field"),
    ],
)
def test_bad_configs_raise(fields, error, match):
    with pytest.raises(error, match=match):
        ragen_envs.make("bandit", config=fields)


def test_bad_actions_raise():
    env = BanditEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    bad = [(2, ValueError), (-1, ValueError), (0.0, TypeError), (True, TypeError), ("Dragon", TypeError)]
    for action, error in bad:
        with pytest.raises(error, match="arm index"):
            env.step(action)
    env.step(np.int64(0))
    with pytest.raises(RuntimeError, match="over"):
        env.step(1)
    with pytest.raises(ValueError, match="seed"):
        generate(BanditConfig(), -5)
