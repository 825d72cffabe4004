"""Reading configs from dicts: one rule for every config dataclass (games, text protocol, harness)."""

from __future__ import annotations

import dataclasses

import pytest

from ragen_envs.bandit import BanditConfig
from ragen_envs.config_dicts import coerce_config, config_from_dict
from ragen_envs.frozen_lake import FrozenLakeConfig
from ragen_envs.sokoban import SokobanConfig
from ragen_envs.text import ProtocolConfig

CONFIGS = [BanditConfig, FrozenLakeConfig, SokobanConfig, ProtocolConfig]
#: One non-default field of each.
OVERRIDES = {BanditConfig: ("high_risk_prob", 0.5), FrozenLakeConfig: ("height", 5), SokobanConfig: ("num_boxes", 2),
             ProtocolConfig: ("max_turns", 3)}


@pytest.mark.parametrize("cls", CONFIGS)
def test_from_dict_reads_to_dict_back_and_fills_missing_fields(cls):
    config = cls()
    assert cls.from_dict(config.to_dict()) == config
    assert config_from_dict(cls, {}) == config
    name, value = OVERRIDES[cls]
    assert getattr(config, name) != value
    assert config_from_dict(cls, {name: value}) == dataclasses.replace(config, **{name: value})


@pytest.mark.parametrize("cls", CONFIGS)
def test_unknown_keys_are_named_with_the_known_ones(cls):
    with pytest.raises(ValueError, match=rf"unknown {cls.__name__} fields: \['colour', 'zz'\]; known fields: \[") as err:
        cls.from_dict({"zz": 1, "colour": "red"})
    assert all(repr(f.name) in str(err.value) for f in dataclasses.fields(cls))
    with pytest.raises(TypeError, match=rf"{cls.__name__}.from_dict needs a mapping, got list"):
        cls.from_dict([("zz", 1)])


@pytest.mark.parametrize("cls", CONFIGS)
def test_coerce_takes_a_config_a_dict_or_none(cls):
    config = cls()
    assert coerce_config(cls, config) is config
    assert coerce_config(cls, None) == config
    assert coerce_config(cls, config.to_dict()) == config
    with pytest.raises(TypeError, match=rf"config must be a {cls.__name__}, a dict of its fields or None, got tuple"):
        coerce_config(cls, (1, 2))


def test_require_ints_names_the_first_bad_field_and_rejects_bools() -> None:
    from dataclasses import dataclass

    from ragen_envs.config_dicts import require_ints

    @dataclass
    class Sizes:
        rows: object = 3
        cols: object = 0

    require_ints(Sizes(), ("rows",))
    require_ints(Sizes(), ("rows", "cols"), minimum=0)
    with pytest.raises(ValueError, match=r"Sizes\.cols must be a positive int, got 0"):
        require_ints(Sizes(), ("rows", "cols"))
    for bad in (True, 2.0, "3", None):
        with pytest.raises(ValueError, match=r"Sizes\.rows must be an int >= 0"):
            require_ints(Sizes(rows=bad), ("rows",), minimum=0)
