"""The typed certificate every game fills, checked against independent computations per game."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragen_envs
from ragen_envs import PRESETS
from ragen_envs.certificate import TYPED_FIELDS, Certificate
from ragen_envs.frozen_lake import value_iteration
from ragen_envs.sokoban import solve


@pytest.mark.parametrize("preset", [p.name for p in PRESETS if p.name not in ("boxoban", "boxoban_hard")])
def test_every_game_exposes_one_typed_certificate_and_its_dict(preset):
    env = ragen_envs.make(preset)
    _, info = env.reset(seed=3)
    cert = env.unwrapped.certificate
    assert isinstance(cert, Certificate)
    assert info["certificate"] == cert.to_dict()
    assert Certificate.from_dict(json.loads(json.dumps(info["certificate"]))) == cert
    assert set(TYPED_FIELDS) <= set(info["certificate"])
    env.close()


def test_sokoban_optimal_steps_are_the_solvers_and_the_actions_win():
    for preset in ("simple_sokoban", "larger_sokoban"):
        env = ragen_envs.make(preset)
        for seed in range(4):
            env.reset(seed=seed)
            game = env.unwrapped
            cert = game.certificate
            assert cert.optimal_steps == solve(game.current_level()).moves  # A*, not the generator's search
            assert cert.optimal_success_probability == 1.0
            assert len(cert.optimal_actions) == cert.optimal_steps
            for action in cert.optimal_actions:
                _, _, terminated, _, info = env.step(action)
            assert terminated and info["success"]


def _bfs_steps(rows: list[str]) -> int | None:
    """Moves from S to G over non-hole cells, 4-neighbourhood, written here from scratch."""
    height, width = len(rows), len(rows[0])
    start = next((r, c) for r in range(height) for c in range(width) if rows[r][c] == "S")
    seen = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if rows[r][c] == "G":
            return seen[(r, c)]
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < height and 0 <= nc < width and rows[nr][nc] != "H" and (nr, nc) not in seen:
                seen[(nr, nc)] = seen[(r, c)] + 1
                queue.append((nr, nc))
    return None


def test_frozen_lake_deterministic_certificate_is_a_bfs_path_that_wins():
    env = ragen_envs.make("frozenlake_det", config={"height": 6, "width": 6})
    for seed in range(8):
        _, info = env.reset(seed=seed)
        cert = env.unwrapped.certificate
        assert cert.optimal_steps == _bfs_steps(info["level"].splitlines())
        assert cert.optimal_success_probability == (1.0 if cert.optimal_steps <= 10 else 0.0)
        for action in cert.optimal_actions:
            _, reward, terminated, _, step_info = env.step(action)
        assert terminated and step_info["success"] and reward == 1.0


def test_frozen_lake_slippery_certificate_has_no_fixed_actions_and_the_value_iteration_probability():
    env = ragen_envs.make("frozenlake")
    for seed in range(5):
        _, info = env.reset(seed=seed)
        game = env.unwrapped
        cert = game.certificate
        assert cert.optimal_actions is None
        assert cert.optimal_steps == _bfs_steps(info["level"].splitlines())
        table = value_iteration(game.level, is_slippery=True, success_rate=1 / 3, horizon=game.config.horizon)
        assert cert.optimal_success_probability == pytest.approx(table.success_prob[-1][game.level.start], abs=1e-12)


def test_bandit_certificate_is_one_pull_of_the_arm_with_the_highest_mean():
    for preset in ("bandit", "bandit_heldout", "bandit_reversed"):
        env = ragen_envs.make(preset, config={"num_arms": 3} if preset != "bandit" else {})
        for seed in range(5):
            _, info = env.reset(seed=seed)
            cert = env.unwrapped.certificate
            means = [arm["payout"] * arm["pay_prob"] for arm in info["certificate"]["arms"]]
            assert cert.optimal_steps == 1 and cert.optimal_success_probability == 1.0
            assert cert.optimal_actions == (int(np.argmax(means)),)
            _, _, _, _, step_info = env.step(cert.optimal_actions[0])
            assert step_info["success"]


_extras = st.dictionaries(st.text(min_size=1).filter(lambda k: k not in TYPED_FIELDS),
                          st.one_of(st.integers(), st.text(), st.none(), st.lists(st.integers(), max_size=3)),
                          max_size=4)


@given(st.integers(0, 50), st.booleans(), st.floats(0.0, 1.0), _extras)
def test_dict_form_round_trips_through_json(steps, with_actions, probability, extras):
    cert = Certificate(steps, tuple(range(steps)) if with_actions else None, probability, extras)
    assert Certificate.from_dict(json.loads(json.dumps(cert.to_dict()))) == cert


def test_bad_certificates_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="optimal_steps"):
        Certificate(-1, None, 1.0)
    with pytest.raises(ValueError, match="optimal_actions has 2 actions but optimal_steps=3"):
        Certificate(3, (0, 1), 1.0)
    with pytest.raises(ValueError, match="optimal_success_probability"):
        Certificate(1, None, 1.5)
    with pytest.raises(ValueError, match="optimal_success_probability"):
        Certificate(1, None, float("nan"))
    with pytest.raises(ValueError, match="repeat the typed fields"):
        Certificate(1, None, 1.0, {"optimal_steps": 2})
    with pytest.raises(ValueError, match=r"lacks the typed field\(s\) \['optimal_actions'"):
        Certificate.from_dict({"optimal_steps": 2, "moves": 2})
