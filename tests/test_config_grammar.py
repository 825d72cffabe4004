"""One config grammar: the same override text means the same config in ragen-eval, ragen-train and
ragen-train sft, every bad key or value fails the same way before anything is written, and every
command lists its full config from the fields' own documentation."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragen_envs.config_dicts import config_from_dict, non_default_fields
from ragen_envs.overrides import parse_flag, parse_game_flag, parse_overrides, parse_value
from ragen_envs.sokoban import SokobanConfig
from ragen_envs.text import ProtocolConfig
from ragen_eval import cli as eval_cli
from ragen_eval.config import EvalConfig

yaml = pytest.importorskip("yaml")
train_cli = pytest.importorskip("ragen_train.cli")
sft = pytest.importorskip("ragen_train.sft")
from ragen_train.config import TrainConfig, load_config  # noqa: E402 - after the importorskip of the train extra
from ragen_train.demos import DemoConfig  # noqa: E402

# Plain words read as strings: no reserved word (nor Python's inf/nan, read as floats), number, quote,
# flow or mapping character.
WORDS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_/-]{0,15}", fullmatch=True).filter(
    lambda w: w.lower() not in {"null", "true", "false", "yes", "no", "on", "off", "y", "n", "inf", "nan"})
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()


def _plain(value: object) -> str:
    """``value`` written as a plain (unquoted) YAML scalar."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value).replace("inf", ".inf")
    return str(value)


@given(SCALARS)
def test_json_text_of_a_scalar_reads_back_as_the_scalar(value):
    assert parse_value(json.dumps(value)) == value


@given(st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none() | WORDS)
def test_plain_yaml_text_of_a_scalar_reads_back(value):
    assert parse_value(_plain(value)) == value
    assert parse_value(f"  {_plain(value)} ") == value


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=8))
def test_json_values_read_as_json_reads_them(value):
    assert parse_value(json.dumps(value)) == value


@given(st.recursive(st.none() | st.booleans() | st.integers() | WORDS,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORDS, inner, max_size=3),
                    max_leaves=8))
def test_yaml_flow_values_read_as_pyyaml_reads_them(value):
    """PyYAML's own flow text (plain words unquoted) reads back as PyYAML reads it: an independent reader."""
    flow = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    if flow.endswith("\n..."):  # PyYAML's document end after a lone scalar
        flow = flow[:-4].strip()
    assert parse_value(flow) == yaml.safe_load(flow) == value


@given(st.dictionaries(WORDS.filter(lambda w: "." not in w and "=" not in w and w == w.strip()),
                       st.integers() | st.booleans() | WORDS, min_size=1, max_size=4),
       st.sampled_from(["", "protocol.", "a.b."]))
def test_dotted_overrides_rebuild_the_nested_mapping(values, prefix):
    pairs = [f"{prefix}{key}={value if not isinstance(value, bool) else str(value).lower()}"
             for key, value in values.items()]
    parsed = parse_overrides(pairs)
    for part in filter(None, prefix.split(".")):
        parsed = parsed[part]
    assert parsed == values


def test_special_scalars_and_malformed_values():
    assert parse_value("") == "" and parse_value("~") is None and parse_value("NULL") is None
    assert parse_value("1e-6") == 1e-6 and parse_value("-.inf") == -math.inf and math.isnan(parse_value(".nan"))
    # as Python prints them, so f"{value}" round-trips (and `=nan` reaches a field's range check as a float)
    assert parse_value("inf") == math.inf and parse_value("-inf") == -math.inf and math.isnan(parse_value("nan"))
    assert parse_value("infinity") == "infinity" and parse_value("nan_rate") == "nan_rate"
    assert parse_value("'it''s'") == "it's" and parse_value("tRUE") == "tRUE"
    assert parse_value("{wall: W, box: 'B'}") == {"wall": "W", "box": "B"}
    for bad in ("[1, 2", "{a 1}", "'open", "[1] tail"):
        with pytest.raises(ValueError, match="cannot read"):
            parse_value(bad)
    with pytest.raises(ValueError, match=r"--protocol 'max_turns' is not key=value"):
        parse_flag(["max_turns"], "--protocol")
    with pytest.raises(ValueError, match="already has nested keys"):
        parse_overrides(["a.b=1", "a=2"])


def test_per_env_items_group_by_env_and_later_items_win():
    assert parse_game_flag(["lake:height=5", "room:{num_boxes: 2}", "lake:height=6", "lake:is_slippery=false"]) == {
        "lake": {"height": 6, "is_slippery": False}, "room": {"num_boxes": 2}}
    assert parse_game_flag(["lake:levels=a:b"]) == {"lake": {"levels": "a:b"}}  # only the first colon names the env
    for bad in ("height=5", ":height=5"):
        with pytest.raises(ValueError, match=r"--env-config takes ENV:KEY=VALUE"):
            parse_game_flag([bad])


# The same protocol, written once, given to all three commands.
PROTOCOL_ITEMS = ["max_turns=3", "observation_format=coords", "format_penalty=-1", "symbols.wall=W", "think=false",
                  "action_separator='|'"]
EXPECTED = ProtocolConfig(max_turns=3, observation_format="coords", format_penalty=-1.0, symbols={"wall": "W"},
                          think=False, action_separator="|")


def _eval_config(*extra: str) -> EvalConfig:
    args = eval_cli.build_parser().parse_args(["evaluate", "--model", "random", "--env", "sokoban", *extra])
    return eval_cli.config_from_args(args)


def test_the_same_override_text_gives_the_same_protocol_in_every_command(tmp_path):
    flags = [arg for item in PROTOCOL_ITEMS for arg in ("--protocol", item)]
    by_eval = _eval_config(*flags).protocol
    by_train = load_config(None, ["env=sokoban", *(f"protocol.{item}" for item in PROTOCOL_ITEMS)]).protocol
    by_sft = sft.config_from_args(["--out", str(tmp_path / "sft"), "--env", "sokoban", *flags]).demos[0].protocol
    assert by_eval == by_train == by_sft == EXPECTED
    # the old JSON forms read the same
    assert _eval_config("--protocol", "max_turns=3", "--protocol", 'symbols={"wall": "W"}').protocol == \
        ProtocolConfig(max_turns=3, symbols={"wall": "W"})
    old_sft = sft.config_from_args(["--out", str(tmp_path / "sft"), "--protocol", '{"max_turns": 3, "think": false}'])
    assert old_sft.demos[0].protocol == ProtocolConfig(max_turns=3, think=False)


def test_every_command_prints_the_same_stored_protocol(tmp_path, capsys):
    flags = [arg for item in PROTOCOL_ITEMS for arg in ("--protocol", item)]
    assert eval_cli.main(["--model", "random", "--env", "sokoban", "--out", str(tmp_path), *flags,
                          "--print-config"]) == 0
    by_eval = json.loads(capsys.readouterr().out)["protocol"]
    assert train_cli.main(["--print-config", "env=sokoban", *(f"protocol.{item}" for item in PROTOCOL_ITEMS)]) == 0
    by_train = yaml.safe_load(capsys.readouterr().out)["protocol"]
    assert sft.main(["--out", str(tmp_path / "sft"), "--env", "sokoban", *flags, "--print-config"]) == 0
    by_sft = json.loads(capsys.readouterr().out)["demos"][0]["protocol"]
    assert by_eval == by_train == by_sft == non_default_fields(EXPECTED) == \
        {"max_turns": 3, "observation_format": "coords", "format_penalty": -1.0, "symbols": {"wall": "W"},
         "think": False, "action_separator": "|"}
    assert list(tmp_path.iterdir()) == []  # printing a config makes no run directory


def _run_each_command(tmp_path, capsys, item: str) -> list[str]:
    """The error line each command prints for ``--protocol item``, after checking exit 2 and no output."""
    errors = []
    out = tmp_path / "eval"
    assert eval_cli.main(["--model", "random", "--env", "bandit", "--episodes", "2", "--out", str(out),
                          "--no-progress", "--protocol", item]) == 2
    errors.append(capsys.readouterr().err.strip().splitlines()[-1].split("error: ", 1)[1])
    assert not out.exists()
    out = tmp_path / "train"
    assert train_cli.main(["--out", str(out), "total_steps=1", f"protocol.{item}"]) == 2
    errors.append(capsys.readouterr().err.strip().splitlines()[-1].split("error: ", 1)[1])
    assert not out.exists()
    out = tmp_path / "sft"
    with pytest.raises(SystemExit) as exit_info:
        train_cli.main(["sft", "--out", str(out), "--protocol", item])
    assert exit_info.value.code == 2
    errors.append(capsys.readouterr().err.strip().splitlines()[-1].split("error: ", 1)[1])
    assert not out.exists()
    return errors


@pytest.mark.parametrize(("item", "message"), [
    ("max_turnz=3", "protocol: unknown ProtocolConfig fields: ['max_turnz']; known fields: ['action_separator', "),
    ("max_turns=abc", "protocol: ProtocolConfig.max_turns must be an int, got 'abc'"),
    ("think=maybe", "protocol: ProtocolConfig.think must be true or false, got 'maybe'"),
    ("max_turns=0", "protocol: max_turns must be a positive integer or None, got 0"),
])
def test_a_bad_key_or_value_fails_alike_in_every_command_before_any_output(item, message, tmp_path, capsys):
    errors = _run_each_command(tmp_path, capsys, item)
    assert errors[0] == errors[1] == errors[2] and errors[0].startswith(message), errors


def test_unknown_keys_and_wrong_types_read_the_same_in_every_config():
    for cls in (EvalConfig, TrainConfig, ProtocolConfig, SokobanConfig, DemoConfig):
        with pytest.raises(ValueError, match=rf"^unknown {cls.__name__} fields: \['zz'\]; known fields: \["):
            config_from_dict(cls, {"zz": 1})
    with pytest.raises(TypeError, match=r"^SokobanConfig\.height must be an int, got '6'$"):
        config_from_dict(SokobanConfig, {"height": "6"})
    with pytest.raises(TypeError, match=r"^TrainConfig\.actor_lr must be a number, got 'fast'$"):
        TrainConfig.from_dict({"actor_lr": "fast"})
    with pytest.raises(TypeError, match=r"^sampling: SamplingParams\.top_p must be a number, got \[1\]$"):
        EvalConfig.from_dict({"model": "random", "sampling": {"top_p": [1]}})
    assert TrainConfig.from_dict({"actor_lr": "1e-4", "protocol": {"max_turns": 2}}).actor_lr == 1e-4


def test_stored_configs_of_either_form_load_and_keep_their_identity(tmp_path):
    # a config.json written before the protocol was typed held only the overrides
    stored = {"model": "random", "envs": ["bandit"], "episodes": 2, "protocol": {"max_turns": 1}, "shard": [0, 2],
              "sampling": {"temperature": 0.5, "top_p": 1.0, "max_tokens": 400, "seed": None}}
    config = EvalConfig.from_dict(stored)
    assert config.protocol == ProtocolConfig(max_turns=1) and config.shard == (0, 2)
    assert config.identity()["protocol"] == {"max_turns": 1}
    assert EvalConfig.from_dict(config.to_dict()).identity() == config.identity()
    # a ragen-train config.yaml of either form loads with --config
    old = tmp_path / "old.yaml"
    old.write_text("env: frozenlake\nprotocol:\n  max_turns: 2\n")
    assert load_config(old).protocol == ProtocolConfig(max_turns=2)


@pytest.mark.parametrize(("main", "argv", "configs", "game_field"), [
    (eval_cli.main, ["--help-config"], [(EvalConfig, ""), (ProtocolConfig, "protocol.")],
     ("env_configs.sokoban.num_boxes", "1")),
    (eval_cli.main, ["--help-config", "--env", "simple_sokoban", "--env-config", "simple_sokoban:num_boxes=2"],
     [(EvalConfig, "")], ("env_configs.simple_sokoban.num_boxes", "2")),
    (train_cli.main, ["--help-config", "env=frozenlake", "env_config.height=5"],
     [(TrainConfig, ""), (ProtocolConfig, "protocol.")], ("env_config.height", "5")),
    (lambda argv: train_cli.main(["sft", *argv]), ["--help-config", "--env", "bandit"],
     [(sft.SFTConfig, ""), (DemoConfig, "demos[]."), (ProtocolConfig, "demos[].protocol.")],
     ("demos[].env_config.num_arms", "2")),
])
def test_every_command_lists_its_full_config_with_defaults_and_help(main, argv, configs, game_field, capsys):
    assert main(argv) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    shown = {line.split(" = ")[0].strip(): line.split(" = ", 1)[1] for line in lines}
    for cls, prefix in configs:
        for f in fields(cls):
            assert f"{prefix}{f.name}" in shown, f"{prefix}{f.name} missing"
    # values are printed as JSON, documented by the field's docstring; a game's config shows its preset's values
    protocol_line = next(v for k, v in shown.items() if k.endswith("protocol.max_turns"))
    assert protocol_line.startswith("null  # Turns (model calls) per episode")
    name, value = game_field
    assert shown[name].split("  #")[0] == value
