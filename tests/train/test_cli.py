"""The ragen-train command line: config help, errors, and the sft subcommand's delegation."""

from __future__ import annotations

import sys
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
    assert "unknown TrainConfig fields: ['bogus']" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.yaml")]) == 2


@pytest.mark.parametrize(("argv", "named"), [
    (["device=foo"], "device='foo' is not a torch device"),
    (["model=/no/such/checkpoint"], "model '/no/such/checkpoint' is not a transformers checkpoint directory"),
    (["protocol.context=single"], "protocol.context must be 'full' for training"),
])
def test_a_run_that_cannot_start_is_one_line_before_any_run_directory(argv, named, capsys, tmp_path):
    out = tmp_path / "out"
    assert main(["--out", str(out), "total_steps=1", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragen-train: error:") and named in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_an_unusable_run_directory_is_one_line(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    assert main(["--out", str(tmp_path / "file"), "total_steps=1"]) == 2
    assert "cannot be used" in capsys.readouterr().err
    for damaged in ("seed: [0\n", "- 1\n"):
        run = tmp_path / "runs" / "x"
        run.mkdir(parents=True, exist_ok=True)
        (run / "config.yaml").write_text(damaged)
        assert main(["--out", str(tmp_path / "runs"), "run_name=x", "total_steps=1"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("ragen-train: error:") and len(err.splitlines()) == 1, err
        assert f"{run / 'config.yaml'}" in err and "the run directory is damaged" in err, err
        assert (run / "config.yaml").read_text() == damaged


def test_sft_subcommand_goes_to_ragen_train_sft(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--help"])
    assert exit_info.value.code == 0
    assert "ragen-train sft" in capsys.readouterr().out


@pytest.mark.parametrize(("override", "named"), [
    ("env=sokobann", "unknown environment 'sokobann'"),
    ("protocol.max_turnz=3", "protocol: unknown ProtocolConfig fields: ['max_turnz']"),
    ("env_config.heigth=6", "unknown BanditConfig fields: ['heigth']"),
    ("protocol.max_turns=0", "protocol: max_turns must be a positive integer"),
])
def test_bad_game_settings_fail_before_any_run_directory(override, named, capsys, tmp_path):
    assert main(["--out", str(tmp_path), "total_steps=1", override]) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and err.startswith("ragen-train: error:") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_sft_with_an_unknown_game_fails_before_its_output_exists(capsys, tmp_path):
    out = tmp_path / "sft"
    for args in (["--env", "sokobann"], ["--env", "bandit", "--protocol", '{"max_turnz": 3}']):
        with pytest.raises(SystemExit) as exit_info:
            main(["sft", *args, "--out", str(out)])
        assert exit_info.value.code == 2
        assert ("sokobann" in args[1]) == ("unknown environment 'sokobann'" in capsys.readouterr().err)
        assert not out.exists()


@pytest.mark.parametrize("argv", [["--conf", "x.yaml"], ["--print", "env=bandit"], ["sft", "--out", "x", "--epoch", "1"]])
def test_flags_are_never_prefix_matched(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help-config"], ["env=bandit"], ["sft", "--out", "x"]])
def test_without_the_train_extra_every_command_says_what_to_install(argv, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without torch looks like to an import
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "torch" in err and "install ragen-envs[train]" in err


def _parsers():
    from ragen_train import cli, sft

    return {"ragen-train": cli.build_parser(), "ragen-train sft": sft.build_parser()}


def test_every_option_has_help_with_its_default_and_no_markup():
    from ragen_envs.help_format import HelpFormatter

    for prog, parser in _parsers().items():
        text = parser.format_help()
        assert "`" not in text and ":class:" not in text and "examples:" in text, prog
        for action in parser._actions:
            if not action.option_strings:
                continue
            assert action.help, f"{prog} {action.option_strings[0]} has no help line"
            if action.nargs != 0 and action.default not in (None, []):
                shown = HelpFormatter(prog)._get_help_string(action) % vars(action)
                assert "default" in shown.lower(), f"{prog} {action.option_strings[0]} hides its default"


def test_every_shown_example_parses_and_the_config_ones_run(capsys, monkeypatch):
    import shlex
    from pathlib import Path

    from ragen_envs.help_format import shown_examples

    parsers = _parsers()
    commands = [c for prog, parser in parsers.items() for c in shown_examples(parser.format_help(), prog)]
    assert len(commands) >= 7
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the examples name configs/ of the repository
    ran = 0
    for command in commands:
        argv = shlex.split(command)[1:]
        if argv[0] == "sft":
            parsers["ragen-train sft"].parse_args(argv[1:])
        else:
            parsers["ragen-train"].parse_args(argv)
        if "--print-config" in argv or "--help-config" in argv:
            assert main(argv) == 0, command
            ran += 1
    assert ran >= 4
    assert "runs/sft/multi" in capsys.readouterr().out


def test_out_names_the_output_directory_and_output_dir_still_works(capsys, tmp_path):
    assert main(["--out", "2024", "--print-config"]) == 0  # a bare number stays a directory name
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["output_dir"] == "2024" and err == ""
    assert main([f"output_dir={tmp_path}", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["output_dir"] == str(tmp_path) and "deprecated; use --out" in err
    assert main(["--out", "a", "output_dir=b", "--print-config"]) == 2
    assert "give only --out" in capsys.readouterr().err
