"""Every registered ``ragen/`` id: Gymnasium's env checker, the info contract and the TextGame protocol.

The ids are read from Gymnasium's registry at collection time, so a game is covered the day it is
registered.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ragen_envs
from ragen_envs import OBSERVATION_FORMATS, PRESETS, TextGame

RAGEN_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("ragen/"))

STATE_KEYS = {
    "sokoban": {"game", "height", "width", "rows", "player", "boxes", "targets", "walls"},
    "frozenlake": {"game", "height", "width", "rows", "player", "start", "goal", "holes", "is_slippery"},
    "bandit": {"game", "arms", "chosen"},
    "countdown": {"game", "numbers", "target", "answer"},
    "sudoku": {"game", "size", "rows", "givens"},
    "rubiks_2x2": {"game", "faces", "solved"},
}


@pytest.fixture(autouse=True)
def _headless(monkeypatch):
    # check_env also opens each env in render_mode="human"; draw into an invisible window.
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


def test_registry_and_presets_agree():
    assert RAGEN_IDS == sorted(p.env_id for p in PRESETS)
    for preset in PRESETS:
        assert ragen_envs.get_preset(preset.name) is preset
        assert gym.spec(preset.env_id).kwargs["config"] == preset.config


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_gymnasium_env_checker(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.render
@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_gymnasium_env_checker_renders(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_info_contract_and_determinism(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=123)
    assert isinstance(info["level_seed"], int)
    json.dumps(info["certificate"])
    obs_again, info_again = env.reset(seed=123)
    assert np.array_equal(obs, obs_again) and info_again["certificate"] == info["certificate"]
    assert info_again["level_seed"] == info["level_seed"]
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, reward, terminated, truncated, step_info = env.step(int(rng.integers(env.action_space.n)))
        assert env.observation_space.contains(obs)
        for key in ("success", "action_is_valid", "action_is_effective"):
            assert isinstance(step_info[key], (bool, np.bool_)), key
        json.dumps({k: (bool(v) if isinstance(v, np.bool_) else v) for k, v in step_info.items()})
        if terminated or truncated:
            break
    with pytest.raises((ValueError, TypeError)):
        env.unwrapped.step(env.action_space.n)
    env.close()


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_text_game_protocol(env_id):
    env = gym.make(env_id).unwrapped
    assert isinstance(env, TextGame)
    env.reset(seed=7)
    assert len(env.action_names) == env.action_space.n
    aliases = env.action_aliases()
    assert all(k == k.lower() and 0 <= v < env.action_space.n for k, v in aliases.items())
    for name in env.action_names:
        assert aliases[name.lower()] == env.action_names.index(name)
    assert set(env.text_defaults) <= {"max_turns", "max_actions_per_turn", "max_actions_per_episode"}
    assert env.rules_text().strip() and env.legend_text().strip() and env.legend_text(coordinate_base=1).strip()
    for fmt in OBSERVATION_FORMATS:
        text = env.observation_text(fmt)
        assert text.strip() and "\x1b" not in text
    state = env.state_dict()
    json.dumps(state)
    assert STATE_KEYS[state["game"]] <= set(state)


@pytest.mark.parametrize("env_id", RAGEN_IDS)
def test_render_modes(env_id):
    text_env = gym.make(env_id, render_mode="ansi")
    text_env.reset(seed=1)
    text = text_env.render()
    assert isinstance(text, str) and text.strip() and "\x1b" not in text
    rgb_env = gym.make(env_id, render_mode="rgb_array")
    obs, _ = rgb_env.reset(seed=1)
    frame = rgb_env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    if obs.ndim == 2:  # grid games: at least 16 pixels a cell
        assert frame.shape[0] >= 16 * obs.shape[0] and frame.shape[1] >= 16 * obs.shape[1]
