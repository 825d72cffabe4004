"""The Sokoban env: env checker, rules, rewards, info, invariants under random play, text, rendering."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.sokoban import SokobanEnv, parse_level, solve
from ragen_envs.text_game import TextGame

SOKOBAN_PRESETS = [p.name for p in ragen_envs.PRESETS if "sokoban" in p.env_id.lower() or "boxoban" in p.env_id.lower()]


@pytest.mark.parametrize("name", SOKOBAN_PRESETS)
def test_env_checker_on_every_preset(name):
    env = ragen_envs.make(name)
    check_env(env.unwrapped, skip_render_check=True)
    _, info = env.reset(seed=0)
    assert info["certificate"]["pushes"] >= env.unwrapped.config.min_pushes
    assert isinstance(env.unwrapped, TextGame)


def test_certificate_replays_through_the_env_with_rewards():
    env = SokobanEnv(config={"height": 8, "width": 8, "num_boxes": 2})
    for seed in range(10):
        _, info = env.reset(seed=seed)
        cert = info["certificate"]
        total, placed_before = 0.0, info["boxes_on_target"]
        for i, action in enumerate(cert["actions"]):
            _, reward, terminated, truncated, step_info = env.step(action)
            total += reward
            assert step_info["action_is_effective"] and not step_info["deadlock"]
            assert terminated == (i == len(cert["actions"]) - 1) and not truncated
        assert step_info["success"] and step_info["boxes_on_target"] == 2
        # -0.1 per move, +1 per box placed net of boxes taken off, +10 at the end.
        assert total == pytest.approx(-0.1 * cert["moves"] + (2 - placed_before) + 10)
        assert cert["solution"] == [env.unwrapped.action_names[a] for a in cert["actions"]]


def test_push_rules_walls_and_boxes_block():
    env = SokobanEnv(config={"height": 5, "width": 7})
    env.reset(options={"level": "#######\n#@$$. #\n# $ . #\n#   . #\n#######"})
    obs, reward, *_, info = env.step(3)  # two boxes in a row: nothing moves
    assert not info["action_is_effective"] and reward == pytest.approx(-0.1)
    assert env.state_dict()["player"] == [1, 1]
    obs, _, _, _, info = env.step(0)  # into the wall
    assert not info["action_is_effective"]
    env.step(1)  # (1, 1) -> (2, 1): free floor
    assert env.state_dict()["player"] == [2, 1]
    _, reward, _, _, info = env.step(3)  # push (2, 2) -> (2, 3)
    assert info["action_is_effective"] and env.state_dict()["boxes"] == [[1, 2], [1, 3], [2, 3]]
    _, reward, _, _, info = env.step(3)  # push (2, 3) onto the target (2, 4)
    assert reward == pytest.approx(0.9) and info["boxes_on_target"] == 1
    _, reward, _, _, info = env.step(3)  # push it off again onto (2, 5)
    assert reward == pytest.approx(-1.1) and info["boxes_on_target"] == 0
    assert obs.dtype == np.int8 and obs.shape == (5, 7)


def test_deadlock_is_reported_and_is_real():
    env = SokobanEnv()
    env.reset(options={"level": "#####\n#   #\n# $ #\n#@. #\n#####"})
    _, _, _, _, info = env.step(0)
    assert not info["deadlock"]
    _, _, terminated, _, info = env.step(3)  # box (2, 2) -> (2, 3): along the wall, no target in that column
    assert info["deadlock"] and not terminated
    assert solve(env.current_level()).status.value == "unsolvable"
    env.reset(options={"level": "######\n#    #\n# $$ #\n#@.. #\n#    #\n######"})
    _, _, _, _, info = env.step(0)
    _, _, _, _, info = env.step(0)
    _, _, _, _, info = env.step(3)
    _, _, _, _, info = env.step(1)  # box (2, 2) -> (3, 2): onto a target, nothing frozen
    assert not info["deadlock"] and info["boxes_on_target"] == 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), actions=st.lists(st.integers(0, 3), max_size=60),
       size=st.sampled_from([(6, 6, 1), (7, 7, 2), (10, 10, 4)]))
def test_random_play_invariants(seed, actions, size):
    h, w, n = size
    env = SokobanEnv(config={"height": h, "width": w, "num_boxes": n})
    obs, info = env.reset(seed=seed)
    walls = {tuple(c) for c in env.state_dict()["walls"]}
    targets = {tuple(c) for c in env.state_dict()["targets"]}
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        state = env.state_dict()
        boxes = {tuple(b) for b in state["boxes"]}
        player = tuple(state["player"])
        assert len(state["boxes"]) == len(boxes) == n  # conserved, no two boxes overlap
        assert player not in walls and player not in boxes and not boxes & walls
        assert {tuple(t) for t in state["targets"]} == targets
        assert info["boxes_on_target"] == len(boxes & targets)
        assert terminated == info["success"] == (boxes == targets)
        # the observation agrees with the state
        assert int((obs == 4).sum() + (obs == 3).sum()) == n and obs[player] in (5, 6)
        if info["deadlock"] and h == 6:
            assert not solve(env.current_level()).solved
        if terminated:
            break


def test_same_seed_same_level_and_level_seed_reported():
    a, b = SokobanEnv(), SokobanEnv()
    oa, ia = a.reset(seed=11)
    ob, ib = b.reset(seed=11)
    assert np.array_equal(oa, ob) and ia == ib and isinstance(ia["level_seed"], int)
    oc, _ = a.reset()
    assert a.observation_space.contains(oc)


def test_given_levels_smaller_ones_are_padded_and_larger_ones_refused():
    env = SokobanEnv(config={"height": 10, "width": 10, "num_boxes": 4})
    obs, info = env.reset(options={"level": parse_level("#####\n#@$.#\n#####")})
    assert obs.shape == (10, 10) and info["certificate"] is None and info["level_seed"] is None
    assert (obs[3:, :] == 0).all() and obs[1, 1] == 5
    env.step(3)
    small = SokobanEnv()
    with pytest.raises(ValueError, match="observation space is 6x6"):
        small.reset(options={"level": "#" * 8 + "\n#@$.   #\n" + "#" * 8})
    with pytest.raises(ValueError, match="unknown reset option"):
        small.reset(options={"lvl": 1})
    with pytest.raises(TypeError, match="SokobanLevel or level text"):
        small.reset(options={"level": 5})


@pytest.mark.parametrize("bad", [4, -1, 1.0, "Up", True, None])
def test_bad_action_raises_naming_the_problem(bad):
    env = SokobanEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an int in 0..3"):
        env.step(bad)


def test_numpy_actions_are_accepted():
    env = SokobanEnv()
    env.reset(seed=0)
    env.step(np.int64(1))
    env.step(np.array(2))


def test_text_observation_formats_and_symbols():
    env = SokobanEnv(render_mode="ansi", config={"height": 4, "width": 6})
    env.reset(options={"level": "######\n#@ $.#\n# *  #\n######"})
    assert env.render() == "######\n#P_XO#\n#_√__#\n######"
    assert "\x1b" not in env.render()
    custom = env.observation_text("grid", symbols={"floor": ".", "target": "T"})
    assert custom.split("\n")[1] == "#P.XT#"
    coords = env.observation_text("coords", coordinate_base=1)
    assert "player at (2, 2)" in coords and "box at (2, 4)" in coords and "box on target at (3, 3)" in coords
    assert "target at (2, 5)" in coords and "target at (3, 3)" in coords
    both = env.observation_text("grid+coords")
    assert both.startswith(env.render()) and "player at (1, 1)" in both
    legend = env.legend_text()
    assert "X = box" in legend and "√ = box on a target" in legend and "from 0" in legend
    assert "+10" in env.rules_text() and "-0.1" in env.rules_text()
    aliases = env.action_aliases()
    assert aliases["north"] == 0 and aliases["d"] == 1 and aliases["west"] == 2 and aliases["right"] == 3
    with pytest.raises(ValueError, match="unknown observation format"):
        env.observation_text("json")
    with pytest.raises(ValueError, match="Sokoban symbols must all differ"):
        env.observation_text("grid", symbols={"box": "#"})
    with pytest.raises(ValueError, match="unknown Sokoban symbol kind"):
        SokobanEnv(symbols={"crate": "C"})
    with pytest.raises(ValueError, match="without spaces"):  # an inner space once passed
        env.observation_text("grid", symbols={"wall": "W W"})


def test_state_dict_schema():
    env = SokobanEnv()
    env.reset(options={"level": "#####\n#+$ #\n# $.#\n#####"})
    state = env.state_dict()
    assert state["rows"] == ["######", "#+$ ##", "# $.##", "######", "######", "######"]
    del state["rows"]
    walls = state.pop("walls")
    assert state == {"game": "sokoban", "height": 6, "width": 6, "player": [1, 1], "boxes": [[1, 2], [2, 2]],
                     "targets": [[1, 1], [2, 3]]}
    assert [0, 0] in walls and [1, 3] not in walls and len(walls) == 36 - 6


def test_rgb_frames_have_distinct_tiles():
    env = SokobanEnv(render_mode="rgb_array", config={"height": 4, "width": 7})
    env.reset(options={"level": "#######\n#@ $ .#\n# *   #\n#######"})
    frame = env.render()
    assert frame.shape == (4 * 32, 7 * 32, 3) and frame.dtype == np.uint8
    cells = {"wall": (0, 0), "floor": (1, 2), "box": (1, 3), "target": (1, 5), "placed": (2, 2), "player": (1, 1)}
    centre = {name: tuple(frame[r * 32 + 16, c * 32 + 16].tolist()) for name, (r, c) in cells.items()}
    assert len(set(centre.values())) == 5  # target's ring leaves its centre floor-coloured
    assert centre["target"] == centre["floor"] and tuple(frame[1 * 32 + 16, 5 * 32 + 24].tolist()) == (200, 40, 40)


def test_gym_make_ids():
    env = gym.make("ragen/LargerSokoban-v0")
    obs, info = env.reset(seed=1)
    assert obs.shape == (8, 8) and env.spec.max_episode_steps == 100


def test_human_mode_opens_and_closes_a_window(monkeypatch):
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = SokobanEnv(render_mode="human")
    env.reset(seed=0)
    env.step(0)
    pygame = pytest.importorskip("pygame")
    assert env._frames.window_open and pygame.display.get_init()
    env.close()
    assert not env._frames.window_open and not pygame.display.get_init()
    with pytest.raises(ValueError, match="render_mode must be one of"):
        SokobanEnv(render_mode="video")
