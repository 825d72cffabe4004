"""Every game config documents every field the one way (an attribute docstring), so ``--help-config``
shows help for it; a field added without one fails here."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

import ragen_envs
from ragen_envs.config_docs import config_help, field_docs, game_config_help
from ragen_envs.registration import PRESETS


def undocumented(cls: type) -> list[str]:
    """Init fields of the config dataclass ``cls`` without help text."""
    docs = field_docs(cls)
    return [f.name for f in fields(cls) if f.init and not docs.get(f.name, "").strip()]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_field_of_every_preset_game_config_has_help(preset):
    env = ragen_envs.make(preset.name)
    try:
        config_class = type(env.unwrapped.config)
    finally:
        env.close()
    assert undocumented(config_class) == [], f"{config_class.__name__} fields without a docstring"
    # and what --help-config prints for the game: one `name = value  # help` line per field
    lines = game_config_help(preset.name).splitlines()
    assert len(lines) == len([f for f in fields(config_class) if f.init])
    for line in lines:
        assert line.partition("  # ")[2].strip(), f"no help in --help-config line {line!r}"


def test_a_field_with_only_a_comment_counts_as_undocumented():
    @dataclass(frozen=True)
    class Half:
        documented: int = 1
        """Spread over
        two lines."""
        commented: int = 2  # a comment is not read by --help-config

    assert field_docs(Half) == {"documented": "Spread over two lines."}
    assert undocumented(Half) == ["commented"]
    assert config_help(Half).splitlines() == ["  documented = 1  # Spread over two lines.", "  commented = 2"]
