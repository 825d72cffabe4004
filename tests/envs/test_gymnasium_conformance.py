"""Gymnasium's own test conditions for environments, over every registered ``ragen/`` id.

Gymnasium checks its environments for determinism under a seed, for surviving ``pickle`` (a bare
env and the wrapper stack ``gym.make`` builds) and for rendering. Here every condition steps through
*every* action of the space, several rounds, and compares observations, rewards, flags, info, the
true state (``state_dict``), the text and the rgb frame, so a copy that silently stops following
its own moves is caught on the first step it takes.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

import ragen_envs  # noqa: F401  (registers the ids)
from ragen_envs.text import TextEpisode

RAGEN_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("ragen/"))
ROUNDS = 3  # passes over the whole action space


def _same_step(a: gym.Env, b: gym.Env, action: int) -> bool:
    """Step both with ``action``; assert they agree in everything the env exposes; return whether it ended."""
    out_a, out_b = a.step(action), b.step(action)
    assert data_equivalence(out_a, out_b, exact=True), f"step({action}) differs: {out_a} vs {out_b}"
    _same_view(a, b)
    return bool(out_a[2] or out_a[3])


def _same_view(a: gym.Env, b: gym.Env) -> None:
    game_a, game_b = a.unwrapped, b.unwrapped
    assert game_a.state_dict() == game_b.state_dict()
    assert game_a.observation_text("grid+coords") == game_b.observation_text("grid+coords")
    if a.render_mode is not None:
        assert data_equivalence(a.render(), b.render(), exact=True)


def _play_every_action(a: gym.Env, b: gym.Env, seed: int) -> None:
    """Every action of the space in turn, ``ROUNDS`` times; both are reset with the same seed when an episode ends."""
    for round_ in range(ROUNDS):
        for action in range(a.action_space.n):
            if _same_step(a, b, action):
                seed += 1
                assert data_equivalence(a.reset(seed=seed), b.reset(seed=seed), exact=True)
                _same_view(a, b)


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_env_determinism_rollout(env_id):
    env_a, env_b = gym.make(env_id, render_mode="rgb_array"), gym.make(env_id, render_mode="rgb_array")
    assert data_equivalence(env_a.reset(seed=123), env_b.reset(seed=123), exact=True)
    _play_every_action(env_a, env_b, seed=123)
    env_a.close()
    env_b.close()


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_pickle_env(env_id):
    # Gymnasium's condition: pickle a fresh env, then reset both alike and step both alike.
    env = gym.make(env_id, render_mode="rgb_array")
    pickled = pickle.loads(pickle.dumps(env))
    assert data_equivalence(env.reset(seed=42), pickled.reset(seed=42), exact=True)
    _same_view(env, pickled)
    _play_every_action(env, pickled, seed=42)
    env.close()
    pickled.close()


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_a_copy_made_mid_episode_follows_its_own_moves(env_id, how):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=7)
    if env.step(0)[2]:  # Bandit: one pull ends the episode; copy it freshly reset instead
        env.reset(seed=8)
    clone = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    _same_view(env, clone)
    _play_every_action(env, clone, seed=7)
    # and the two are independent: moving one leaves the other where it was
    before = clone.unwrapped.state_dict()
    env.reset(seed=99)
    assert clone.unwrapped.state_dict() == before


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_pickling_env_stack(env_id):
    # The whole stack gym.make builds (time limit, order enforcing, env checker) round-trips, with
    # its step count: the copy is truncated on the same step as the original.
    env = gym.make(env_id)
    env.reset(seed=3)
    for action in range(env.action_space.n):
        if env.step(action)[2]:
            env.reset(seed=3)
    pickled = pickle.loads(pickle.dumps(env))
    assert pickled.spec.id == env.spec.id and pickled.spec.max_episode_steps == env.spec.max_episode_steps
    assert type(pickled) is type(env) and type(pickled.unwrapped) is type(env.unwrapped)
    ended = False
    for step in range((env.spec.max_episode_steps or 1) + 1):
        ended = _same_step(env, pickled, step % env.action_space.n)
        if ended:
            break
    assert ended


@pytest.mark.parametrize("seed", [np.int64(3), np.int32(3), np.uint64(3)])
@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_numpy_integer_seeds_are_the_same_seed(env_id, seed):
    env_np, env_int = gym.make(env_id), gym.make(env_id)
    assert data_equivalence(env_np.reset(seed=seed), env_int.reset(seed=3), exact=True)
    _play_every_action(env_np, env_int, seed=3)


@pytest.mark.parametrize("name", ["sokoban", "frozenlake", "bandit"])
def test_text_episodes_take_numpy_integer_seeds(name):
    from_numpy, from_int = TextEpisode(name, np.int64(5)), TextEpisode(name, 5)
    assert type(from_numpy.seed) is int and from_numpy.record() == from_int.record()
    assert from_numpy.messages == from_int.messages
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        TextEpisode(name, np.int64(-1))
    for bad in (True, 2.0, "5"):
        with pytest.raises(TypeError, match="seed must be an integer"):
            TextEpisode(name, bad)
