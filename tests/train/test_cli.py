"""The ragen-train command line: config help, errors, and the sft subcommand's delegation."""

from __future__ import annotations

from dataclasses import fields

import pytest
import yaml

from ragen_train.cli import main
from ragen_train.config import TrainConfig


def test_help_config_lists_every_field(capsys):
    assert main(["--help-config"]) == 0
    out = capsys.readouterr().out
    for f in fields(TrainConfig):
        assert f"  {f.name} = " in out


def test_print_config_resolves_preset_and_overrides(capsys, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("preset: starpo\nenv: frozenlake\n")
    assert main(["--config", str(cfg), "--print-config", "kl_coef=0.01", "protocol.max_turns=3"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["env"] == "frozenlake" and printed["kl_coef"] == 0.01 and printed["rollout_filter_ratio"] == 1.0
    assert printed["protocol"] == {"max_turns": 3}


def test_bad_config_is_a_clean_error(capsys, tmp_path):
    assert main(["bogus=1"]) == 2
    assert "unknown config keys ['bogus']" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2


def test_sft_subcommand_goes_to_ragen_train_sft(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--help"])
    assert exit_info.value.code == 0
    assert "ragen-train sft" in capsys.readouterr().out
