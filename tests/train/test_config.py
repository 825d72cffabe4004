"""TrainConfig: presets, YAML + key=value precedence, clear errors, resolved config round trip."""

from __future__ import annotations

import math

import pytest

from ragen_envs.overrides import parse_overrides
from ragen_envs.text import ProtocolConfig
from ragen_train.config import PRESETS, TrainConfig, load_config, save_config


def test_defaults_are_ragens():
    c = TrainConfig()
    assert (c.env_groups, c.group_size, c.rollout_filter_ratio) == (8, 16, 0.25)
    assert (c.clip_ratio_low, c.clip_ratio_high, c.entropy_coeff, c.kl_coef) == (0.2, 0.28, 0.001, 0.0)
    assert (c.actor_lr, c.critic_lr, c.value_clip, c.grad_clip, c.gamma, c.lam) == (1e-6, 1e-5, 0.5, 1.0, 1.0, 1.0)
    assert c.loss_agg_mode == "token-mean" and c.temperature == 1.0 and c.advantage_estimator == "gae"


def test_presets():
    starpo = TrainConfig.from_dict({"preset": "starpo"})
    assert (starpo.rollout_filter_ratio, starpo.clip_ratio_high, starpo.kl_coef) == (1.0, 0.2, 0.001)
    s = TrainConfig.from_dict({"preset": "starpo-s"})
    assert (s.rollout_filter_ratio, s.clip_ratio_high, s.kl_coef) == (0.25, 0.28, 0.0)
    assert set(PRESETS) == {"starpo", "starpo-s"}


def test_yaml_then_overrides_then_preset_precedence(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("preset: starpo\nenv: frozenlake\nkl_coef: 0.0\nactor_lr: 1e-4\nenv_config:\n  height: 4\n  width: 4\n")
    c = load_config(path, ["actor_lr=3e-4", "env_config.width=5", "protocol.max_turns=2", "target_success=0.9"])
    assert c.kl_coef == 0.0  # the file beats the preset
    assert c.clip_ratio_high == 0.2  # untouched preset value
    assert c.actor_lr == 3e-4  # the override beats the file; "1e-4" without a dot is still a float
    assert c.env_config == {"height": 4, "width": 5} and c.protocol == ProtocolConfig(max_turns=2)
    saved = save_config(c, tmp_path / "run")
    assert load_config(saved) == c


def test_parse_overrides():
    assert parse_overrides(["a=1", "b=true", "c=null", "d=[1, 2]", "e.f=x"]) == \
        {"a": 1, "b": True, "c": None, "d": [1, 2], "e": {"f": "x"}}
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["novalue"])


@pytest.mark.parametrize("values, match", [
    ({"bogus": 1}, "unknown TrainConfig fields"),
    ({"preset": "ppo"}, "preset"),
    ({"rollout_filter_ratio": 0.0}, "rollout_filter_ratio"),
    ({"advantage_estimator": "vtrace"}, "advantage_estimator"),
    ({"advantage_estimator": "gae", "critic": "none"}, "needs a critic"),
    ({"temperature": 0.0}, "temperature"),
    ({"micro_batch_size": 64, "ppo_mini_batch_size": 8}, "micro_batch_size"),
    ({"total_steps": 0}, "total_steps"),
    ({"clip_ratio_low": 1.5}, "clip_ratio_low"),
    # nan fails every comparison, so it passed "< 0" checks and reached the run (inf likewise).
    ({"temperature": math.nan}, "temperature must be a finite number >= 0, got nan"),
    ({"temperature": math.inf}, "temperature must be a finite number >= 0, got inf"),
    ({"eval_temperature": math.nan}, "eval_temperature"), ({"kl_coef": math.inf}, "kl_coef"),
    ({"actor_lr": math.inf}, "actor_lr must be a finite number > 0, got inf"),
    ({"top_p": 1.5}, r"top_p must be in \(0, 1\]"), ({"top_p": math.nan}, "top_p"),
    # a nan epsilon made every advantage nan, a negative one infinite; a nan alert ratio switched the alert off
    ({"norm_adv_eps": math.nan}, "norm_adv_eps"), ({"norm_adv_eps": -1.0}, "norm_adv_eps"),
    ({"reasoning_reward_format": math.inf}, "reasoning_reward_format must be a finite number >= 0"),
    ({"collapse_std_ratio": math.nan}, "collapse_std_ratio"), ({"collapse_mi_ratio": math.inf}, "collapse_mi_ratio"),
    ({"collapse_grad_spike": math.inf}, "collapse_grad_spike must be a finite number > 1"),
    ({"protocol": {"context": "last_k"}}, "protocol.context must be 'full' for training"),
])
def test_bad_values_name_the_field(values, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict(values)


@pytest.mark.parametrize("values, match", [
    ({"total_steps": "many"}, "total_steps"), ({"actor_lr": "fast"}, "actor_lr"), ({"resume": 1}, "resume"),
    ({"env": None}, "env"), ({"env_config": [1]}, "env_config"),
])
def test_wrong_types_name_the_field(values, match):
    with pytest.raises(TypeError, match=match):
        TrainConfig.from_dict(values)


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(FileNotFoundError, match="is not a file"):
        load_config(tmp_path)
    bad = tmp_path / "list.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="mapping"):
        load_config(bad)
    bad.write_text("env: [bandit\n foo: : :\n")
    with pytest.raises(ValueError, match=r"is not valid YAML \(.* at line 2, column 5\)$"):
        load_config(bad)


def test_shipped_configs_resolve():
    from pathlib import Path

    files = sorted((Path(__file__).parents[2] / "configs").glob("*.yaml"))
    assert files
    for path in files:
        config = load_config(path)
        assert config.env and config.preset in PRESETS, path
