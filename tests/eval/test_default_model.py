"""The embedded default model: ``--model default`` (and no ``--model``) finds the checkpoint shipped in
the package, plays it in process with the hf backend, and serves it over HTTP with ``--local-server``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragen_eval
from ragen_eval.cli import build_parser, main
from ragen_eval.config import EvalConfig
from ragen_eval.embedded_model import DEFAULT_MODEL, default_model_path, default_model_provenance, resolve_model_path


def test_the_checkpoint_is_found_inside_the_installed_package():
    path = default_model_path()
    assert path == Path(ragen_eval.__file__).resolve().parent / "default_model"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (path / name).is_file(), name
    assert resolve_model_path("default") == str(path)
    assert resolve_model_path("some/other/dir") == "some/other/dir"
    assert default_model_provenance()["games"] == ["simple_sokoban", "frozenlake", "bandit"]


def test_default_is_what_evaluate_plays_when_no_model_is_given():
    args = build_parser().parse_args(["evaluate"])
    assert args.model == DEFAULT_MODEL
    assert EvalConfig().resolved_backend() == "hf"
    assert EvalConfig(model="default", local_server=True).resolved_backend() == "openai"
    assert EvalConfig(model="default", envs="sokoban").run_name() == "default__hf__test"
    with pytest.raises(ValueError, match="builtin backend plays"):
        EvalConfig(model="default", backend="builtin")


def _responses(run: Path) -> list[list[str]]:
    records = sorted((json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()),
                     key=lambda r: r["seed"])
    return [[turn["response"] for turn in r["turns"]] for r in records]


@pytest.mark.slow
def test_default_model_plays_the_same_greedy_game_in_process_and_through_the_local_server(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    # One request at a time and greedy decoding: the server's batches hold one prompt, as in process,
    # so both paths must produce the very same replies.
    common = ["--env", "sokoban", "--episodes", "2", "--temperature", "0", "--max-tokens", "64",
              "--concurrency", "1", "--no-progress", "--json"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 0  # no --model: the embedded default
    in_process = json.loads(capsys.readouterr().out)
    assert main(["--model", "default", "--local-server", *common, "--out", str(tmp_path / "b")]) == 0
    served = json.loads(capsys.readouterr().out)

    run_a, run_b = tmp_path / "a" / "default__hf__test", tmp_path / "b" / "default__openai__test"
    assert json.loads((run_a / "config.json").read_text())["eval_config"]["model"] == "default"
    replies = _responses(run_a)
    assert len(replies) == 2 and all(replies)
    # The trained model answers in the protocol's format, not with random text.
    assert all(r.lstrip().startswith("<think>") and "<answer>" in r for episode in replies for r in episode)
    assert _responses(run_b) == replies
    for summary in (in_process, served):
        assert summary["episodes_done"] == 2 and summary["complete"]
    assert served["per_env"]["sokoban"]["success_rate"] == in_process["per_env"]["sokoban"]["success_rate"]


@pytest.mark.slow
def test_sampled_episodes_do_not_depend_on_concurrency(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    # Every sample draws from a generator seeded by the episode and its messages, so how many
    # episodes shared a batch (and in which order they arrived) changes no reply.
    common = ["--env", "sokoban,bandit", "--episodes", "3", "--temperature", "0.7", "--max-tokens", "48",
              "--no-progress", "--json"]
    assert main([*common, "--concurrency", "1", "--out", str(tmp_path / "one")]) == 0
    assert main([*common, "--concurrency", "6", "--out", str(tmp_path / "six")]) == 0
    capsys.readouterr()
    one, six = ({(r["env"], r["seed"]): [turn["response"] for turn in r["turns"]]
                 for r in map(json.loads, (tmp_path / name / "default__hf__test" / "episodes.jsonl").open())}
                for name in ("one", "six"))
    assert len(one) == 6 and all(one.values())
    assert six == one
