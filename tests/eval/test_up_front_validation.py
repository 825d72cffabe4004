"""Bad input to ``ragen-eval`` is refused in one line, with exit 2, before any run directory is made; options
are never matched by prefix; a run directory that lost its config.json still refuses another configuration."""

from __future__ import annotations

import json
import time

import pytest

from ragen_eval.cli import EXIT_BAD_INPUT, EXIT_OK, main
from ragen_eval.jsonl_store import read_jsonl, rewrite_jsonl
from ragen_eval.run_dir import CONFIG_FILE, EPISODES_FILE, RUN_IDENTITY_KEY


def _run(out, *extra: str) -> int:
    return main(["--model", "random", "--env", "sokoban,bandit", "--episodes", "2", "--out", str(out),
                 "--no-progress", *extra])


def _one_line_error(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragen-eval evaluate: error: "), lines
    return lines[0]


@pytest.mark.parametrize("override, named", [
    ("sokoban:num_boxez=2", "['num_boxez']"),
    ("sokoban:dim_room=[1000,1000]", "['dim_room']"),
    ("sokoban:num_boxes=-3", "num_boxes must be at least 1, got -3"),
    ("sokoban:level_file=levels/none.txt", "['level_file']"),
    ('sokoban:height="6"', "height must be an int"),
    ("bandit:num_arms=0", "num_arms"),
])
def test_bad_env_config_is_refused_before_the_run_directory(tmp_path, capsys, override, named):
    assert _run(tmp_path / "runs", "--env-config", override) == EXIT_BAD_INPUT
    line = _one_line_error(capsys)
    assert f"--env-config {override.partition(':')[0]}: " in line and named in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argv, named", [
    (["--protocol", "symbols.nope=Z"], "--protocol: sokoban cannot be played with it: unknown Sokoban symbol kind(s) "
                                       "['nope']"),
    (["--protocol", "symbols.wall="], "--protocol: sokoban cannot be played with it: Sokoban symbol for 'wall' "
                                      "must be a non-empty string without spaces"),
    (["--env", "bandit,frozenlake", "--protocol", "symbols.wall=W"], "--protocol: frozenlake cannot be played with it: "
                                                                     "unknown FrozenLake symbol kind(s) ['wall']"),
    (["--agent-seed", "-1"], "--agent-seed must be >= 0, got -1"),
    (["--seed-start", "-2"], "--seed-start must be >= 0, got -2"),
])
def test_settings_every_episode_would_fail_on_are_refused_before_the_run_directory(tmp_path, capsys, argv, named):
    # Before, the run directory was made and every episode ended in an error (exit 1).
    envs = [] if "--env" in argv else ["--env", "sokoban,bandit"]
    assert main(["--model", "random", *envs, "--episodes", "2", "--out", str(tmp_path / "runs"), "--no-progress",
                 *argv]) == EXIT_BAD_INPUT
    assert named in _one_line_error(capsys)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argv, named", [
    (["--timeout", "nan"], "--timeout must be a finite number of seconds > 0, got nan"),
    (["--timeout", "inf"], "--timeout must be a finite number of seconds > 0, got inf"),
    (["--temperature", "nan"], "--temperature must be a finite number >= 0, got nan"),
    (["--temperature", "inf"], "--temperature must be a finite number >= 0, got inf"),
    (["--top-p", "nan"], "--top-p must be in (0, 1], got nan"),
    (["--top-p", "0"], "--top-p must be in (0, 1], got 0.0"),
    (["--rps", "nan"], "--rps must be a finite number > 0, got nan"),
    (["--rps", "inf"], "--rps must be a finite number > 0, got inf"),
    (["--judge-model", "j", "--judge-base-url", "http://127.0.0.1:9/v1", "--timeout", "nan"],
     "--timeout must be a finite number of seconds > 0, got nan"),
])
def test_numbers_out_of_range_nan_and_inf_are_refused_before_the_run_directory(tmp_path, capsys, argv, named):
    # Before, nan and inf passed every check, made the run directory, then failed writing config.json.
    assert _run(tmp_path / "runs", *argv) == EXIT_BAD_INPUT
    assert named in _one_line_error(capsys)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flag", ["--base-url", "--judge-base-url"])
@pytest.mark.parametrize("url", ["ftp://user:pw-0123456789@example.com/v1?api_key=KEY-0123456789", "http:///v1",
                                 "http://127.0.0.1:9/v1?key=a&key=b"])
def test_a_bad_base_url_is_refused_before_the_run_directory_without_its_secrets(tmp_path, capsys, flag, url):
    judged = ["--model", "random", "--judge-model", "j"] if flag == "--judge-base-url" else ["--model", "m"]
    assert main([*judged, flag, url, "--env", "bandit", "--episodes", "1", "--out", str(tmp_path / "runs"),
                 "--no-progress"]) == EXIT_BAD_INPUT
    line = _one_line_error(capsys)
    assert "base URL" in line and "0123456789" not in line
    assert not (tmp_path / "runs").exists()


SECRET = "sk-proj-0123456789abcdef"


def _local(out, *extra: str) -> int:
    return main(["--model", "random", "--local-server", "--env", "bandit", "--episodes", "2", "--out", str(out),
                 "--no-progress", *extra])


@pytest.mark.parametrize("arg, named", [
    (f"--server-arg=--api-key={SECRET}", "--server-arg: ragen-eval serve does not take --api-key (see"),
    (f"--server-arg=--api-key-env={SECRET}", "--server-arg --api-key-env takes the NAME of an environment variable"),
    ("--server-arg=--api-key-env=RAGEN_TEST_UNSET_VARIABLE", "RAGEN_TEST_UNSET_VARIABLE: that environment variable "
                                                             "is unset or empty"),
    (f"--server-arg=--latency={SECRET}", "--server-arg --latency: invalid float value"),
    ("--server-arg=--failure-rate=2", "--failure-rate must be a probability in [0, 1], got 2.0"),
    ("--server-arg=--host=0.0.0.0", "--server-arg --host: --local-server sets the server's agent"),
    ("--server-arg=--port=8000", "--server-arg --port: --local-server sets the server's agent"),
])
def test_bad_server_args_are_refused_before_the_run_directory_without_their_values(tmp_path, capsys, arg, named):
    # Before, the run directory was made (config.json holding the argument verbatim), then the server failed.
    assert _local(tmp_path / "runs", arg) == EXIT_BAD_INPUT
    line = _one_line_error(capsys)
    assert named in line and SECRET not in line
    assert not (tmp_path / "runs").exists()


def test_server_args_without_local_server_are_refused(tmp_path, capsys):
    assert _run(tmp_path / "runs", "--server-arg=--latency=0.1") == EXIT_BAD_INPUT
    assert "--server-arg passes options to the server --local-server starts" in _one_line_error(capsys)


def test_a_key_like_server_arg_is_never_stored(tmp_path, capsys):
    argv = [f"--server-arg=--model-name={SECRET}", "--server-arg=--latency", "--server-arg=0.001"]
    assert _local(tmp_path, *argv, "--print-config") == EXIT_OK
    printed = json.loads(capsys.readouterr().out)
    assert printed["server_args"] == ["--model-name=***", "--latency", "0.001"]
    assert _local(tmp_path, *argv, "--run-name", "served") == EXIT_OK
    run = tmp_path / "served"
    assert json.loads((run / CONFIG_FILE).read_text())["eval_config"]["server_args"] == printed["server_args"]
    assert all(SECRET not in path.read_text() for path in run.iterdir() if path.is_file())
    assert len(read_jsonl(run / EPISODES_FILE)) == 2


@pytest.mark.parametrize(("arg", "message"), [
    ("device=cuda", "device='cuda' but CUDA is not available"),
    ("device=gpu0", "device='gpu0' is not a torch device"),
    ("dtype=bfloat17", "dtype must name a torch dtype"),
    ("attn_implementation=flash_attention_2", "unknown --model-args ['attn_implementation'] for the hf backend"),
])
def test_bad_hf_model_args_are_one_line_and_exit_2(arg, message, tmp_path, capsys):
    """Each was once a traceback from torch or HFAgent.__init__ with exit status 1."""
    pytest.importorskip("torch")
    if arg == "device=cuda":
        import torch

        if torch.cuda.is_available():
            pytest.skip("CUDA is there")
    assert main(["--model", "default", "--env", "bandit", "--episodes", "2", "--model-args", arg, "--out",
                 str(tmp_path / "runs"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "runs").exists()


def test_a_secret_in_model_args_is_never_printed(tmp_path, capsys):
    # Before, --print-config (and config.json, and every episode's run_identity) held the token as given.
    assert main(["--model", "org/model", "--backend", "hf", "--model-args", f"token={SECRET}", "--model-args",
                 "dtype=float32", "--print-config", "--out", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert json.loads(out)["model_args"] == {"token": "***", "dtype": "float32"} and SECRET not in out


@pytest.mark.parametrize("argv, message", [
    (["--seed", "1"], "unrecognized arguments: --seed 1"),
    (["--temp", "0.9"], "unrecognized arguments: --temp 0.9"),
    (["--api-key-e", "MY_KEY"], "unrecognized arguments: --api-key-e MY_KEY"),
])
def test_options_are_never_matched_by_prefix(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        _run(tmp_path / "runs", *argv)
    assert exit_info.value.code == EXIT_BAD_INPUT and message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_ragen_train_options_are_never_matched_by_prefix(capsys):
    from ragen_train.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--print-conf"])
    assert "unrecognized arguments: --print-conf" in capsys.readouterr().err


@pytest.mark.parametrize("flag, pointer", [("--api-key", "--api-key-env"), ("--judge-api-key", "--judge-api-key-env")])
def test_a_key_on_the_command_line_is_refused_and_never_written(tmp_path, capsys, flag, pointer):
    assert _run(tmp_path / "runs", flag, "sk-secret-0123") == EXIT_BAD_INPUT
    line = _one_line_error(capsys)
    assert f"{flag} is not accepted" in line and f"name it with {pointer}" in line and "sk-secret" not in line
    assert not (tmp_path / "runs").exists()


def test_a_key_given_as_the_variable_name_is_refused_without_echoing_it(tmp_path, capsys):
    assert main(["--model", "gpt-4o", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "sk-secret-0123",
                 "--out", str(tmp_path / "runs")]) == EXIT_BAD_INPUT
    line = _one_line_error(capsys)
    assert "--api-key-env takes the NAME of an environment variable" in line and "sk-secret" not in line
    assert not (tmp_path / "runs").exists()


def test_out_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "taken").write_text("not a directory\n")
    assert _run(tmp_path / "taken") == EXIT_BAD_INPUT
    assert f"--out {tmp_path / 'taken'}: {tmp_path / 'taken'} is a file, not a directory" in _one_line_error(capsys)
    assert _run(tmp_path / "taken" / "deeper") == EXIT_BAD_INPUT
    assert "is a file, not a directory" in _one_line_error(capsys)


@pytest.mark.parametrize("name", ["../../x", "/tmp/elsewhere", "a/b", ".", ".."])
def test_run_name_is_a_name_not_a_path(tmp_path, capsys, name):
    out = tmp_path / "deep" / "runs"
    assert _run(out, "--run-name", name) == EXIT_BAD_INPUT
    assert "--run-name takes a directory name, not a path" in _one_line_error(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", ["runs/nope", "./nope", "ABSOLUTE"])
def test_a_missing_local_checkpoint_is_named_at_once(tmp_path, monkeypatch, capsys, model):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    model = str(tmp_path / "gone") if model == "ABSOLUTE" else model
    start = time.monotonic()
    assert main(["--backend", "hf", "--model", model, "--env", "bandit", "--out", "out", "--no-progress"]) \
        == EXIT_BAD_INPUT
    assert time.monotonic() - start < 30  # no model hub retries (they took 55 s)
    assert f"--model {model}: no such local checkpoint directory" in _one_line_error(capsys)
    assert not (tmp_path / "out").exists()


def test_a_run_that_lost_its_config_refuses_another_configuration(tmp_path, capsys):
    run = tmp_path / "random__builtin__test"
    assert _run(tmp_path) == EXIT_OK
    (run / CONFIG_FILE).unlink()
    capsys.readouterr()
    assert _run(tmp_path, "--temperature", "0.9", "--episodes", "2") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "has no config.json, and its episodes were played with a different configuration" in err
    assert "sampling.temperature: 0.5 -> 0.9" in err and not (run / CONFIG_FILE).exists()
    # The same settings resume it (nothing to play) and write config.json again.
    assert _run(tmp_path) == EXIT_OK
    assert json.loads((run / CONFIG_FILE).read_text())["eval_config"]["sampling"]["temperature"] == 0.5
    assert len(read_jsonl(run / EPISODES_FILE)) == 4


def test_unstamped_episodes_without_a_config_are_refused(tmp_path, capsys):
    run = tmp_path / "random__builtin__test"
    assert _run(tmp_path) == EXIT_OK
    records = read_jsonl(run / EPISODES_FILE)
    assert all(RUN_IDENTITY_KEY in r for r in records)
    rewrite_jsonl(run / EPISODES_FILE, [{k: v for k, v in r.items() if k != RUN_IDENTITY_KEY} for r in records])
    (run / CONFIG_FILE).unlink()
    capsys.readouterr()
    assert _run(tmp_path) == EXIT_BAD_INPUT
    assert "episodes do not say which configuration played them" in capsys.readouterr().err


def test_a_checkpoint_that_cannot_load_leaves_no_run_directory(tmp_path, capsys):
    # The model used to load after the run directory was made: the failed run left config.json behind, and the
    # corrected command under the same --out was then refused as a different configuration.
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    out = tmp_path / "runs"
    argv = ["--env", "bandit", "--episodes", "2", "--out", str(out), "--run-name", "r", "--no-progress"]
    assert main(["--backend", "hf", "--model", str(broken), *argv]) == EXIT_BAD_INPUT
    assert f"cannot load a tokenizer from {str(broken)!r}" in _one_line_error(capsys)
    assert not out.exists()
    assert main(["--model", "random", *argv]) == EXIT_OK
    assert len(read_jsonl(out / "r" / EPISODES_FILE)) == 2


@pytest.mark.parametrize("backend", ["hf", "vllm"])
def test_a_builtin_agent_under_a_checkpoint_backend_is_refused(tmp_path, capsys, backend):
    assert _run(tmp_path / "runs", "--backend", backend) == EXIT_BAD_INPUT
    assert f"--model random is a built-in agent: drop --backend {backend}" in _one_line_error(capsys)
    assert not (tmp_path / "runs").exists()
