"""The training loop end to end on a tiny random model: it logs, it updates every parameter, it resumes exactly."""

from __future__ import annotations

import json

import pytest
import torch

from ragen_envs.text import ProtocolConfig
from ragen_eval.embedded_model import default_model_path
from ragen_train.checkpoint import latest_checkpoint, list_checkpoints
from ragen_train.cli import main
from ragen_train.config import load_config
from ragen_train.sft import checkpoint_dir
from ragen_train.trainer import initial_model, train

transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

TINY_RUN = ["env=bandit", "env_groups=2", "group_size=2", "max_new_tokens=8", "ppo_mini_batch_size=4",
            "micro_batch_size=2", "actor_lr=1e-3", "critic_lr=1e-3", "plot_every=0"]


@pytest.mark.slow
def test_cli_run_logs_losses_and_changes_every_parameter(tiny_model_dir, tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("preset: starpo\nenv: bandit\ntotal_steps: 2\n")
    args = ["--config", str(cfg), f"model={tiny_model_dir}", f"output_dir={tmp_path}", "run_name=r", *TINY_RUN,
            "env=frozenlake", "protocol.max_turns=2"]
    assert main(args) == 0
    run = tmp_path / "r"
    resolved = load_config(run / "config.yaml")
    assert resolved.env == "frozenlake" and resolved.total_steps == 2 and resolved.protocol == ProtocolConfig(max_turns=2)
    assert resolved.kl_coef == 0.001 and resolved.clip_ratio_high == 0.2  # from the starpo preset
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        for key in ("losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/grad_norm_actor",
                    "losses/grad_norm_critic", "losses/kl_ref", "losses/clip_fraction", "losses/approx_kl",
                    "rollout/success_rate", "rollout/reward_std", "rollout/in_group_std", "rollout/kept_fraction",
                    "rollout/think_words_per_turn", "rollout/completion_tokens_per_turn",
                    "rollout/format_error_rate", "rollout/reply_entropy", "rollout/reply_cond_entropy",
                    "rollout/reply_mi"):
            assert row[key] is not None and row[key] == row[key], key  # present and not NaN
        assert row["rollout/kept_fraction"] == 1.0 and row["losses/entropy"] > 0
        assert row["losses/optimizer_steps"] == 1  # ppo_mini_batch_size=4 holds all 4 sequences
    assert (run / "metrics.csv").read_text().startswith("step,")
    assert (run / "metrics.png").stat().st_size > 0

    final = latest_checkpoint(run)
    assert final.name == "step_000002"
    before, after = load_file(tiny_model_dir / "model.safetensors"), load_file(final / "model.safetensors")
    assert before.keys() == after.keys()
    unchanged = [k for k in before if torch.equal(before[k], after[k])]
    assert not unchanged, f"parameters not updated: {unchanged}"
    critic = load_file(final / "critic" / "model.safetensors")
    assert any(not torch.equal(critic[k], before["model." + k]) for k in critic)
    assert torch.load(final / "critic" / "value_head.pt")["weight"].abs().sum() > 0
    # the checkpoint is a plain transformers checkpoint
    model = transformers.AutoModelForCausalLM.from_pretrained(str(final))
    assert torch.equal(model.state_dict()["model.embed_tokens.weight"], after["model.embed_tokens.weight"])
    assert transformers.AutoTokenizer.from_pretrained(str(final)).chat_template


@pytest.mark.slow
def test_resume_gives_the_same_next_step(tiny_model_dir, tmp_path):
    common = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", *TINY_RUN, "preset=starpo",
              "advantage_estimator=gae-turn", "save_every=1", "keep_checkpoints=5"]
    straight = train(load_config(None, [*common, "run_name=straight", "total_steps=2"]))
    broken = train(load_config(None, [*common, "run_name=broken", "total_steps=1"]))
    assert [p.name for p in list_checkpoints(broken)] == ["step_000001"]
    resumed = train(load_config(None, [*common, "run_name=broken", "total_steps=2"]))
    assert resumed == broken
    a = load_file(straight / "checkpoints" / "step_000002" / "model.safetensors")
    b = load_file(broken / "checkpoints" / "step_000002" / "model.safetensors")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
    rows_a = [json.loads(x) for x in (straight / "metrics.jsonl").read_text().splitlines()]
    rows_b = [json.loads(x) for x in (broken / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows_b] == [1, 2]
    for key in ("rollout/mean_reward", "losses/policy_loss", "losses/value_loss", "losses/grad_norm_actor",
                "losses/entropy"):
        assert rows_a[1][key] == rows_b[1][key], key


def test_initial_model_must_be_a_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        train(load_config(None, [f"model={tmp_path}", f"output_dir={tmp_path}", "run_name=x"]))


def test_model_default_is_the_embedded_model_ragen_eval_plays(tmp_path):
    # The same name means the same checkpoint in both commands (ragen-eval --model default), for RL and for SFT.
    embedded = default_model_path()
    config = load_config(None, ["model=default", f"output_dir={tmp_path}", "run_name=x"])
    assert initial_model(config, tmp_path / "x") == embedded
    assert checkpoint_dir("default") == embedded
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_an_evaluation_whose_episodes_all_fail_stops_the_run(tiny_model_dir, tmp_path, monkeypatch):
    # An in-process evaluation that errors is a bug (on a GPU, sampling once mixed devices): it must stop the run,
    # never be logged as eval/success_rate 0.
    import ragen_eval.agents.kv_batching as kv_batching

    def broken(logits, rows):
        raise RuntimeError("injected sampling failure")

    monkeypatch.setattr(kv_batching, "choose_tokens", broken)
    args = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", "run_name=r", *TINY_RUN, "env=bandit",
            "total_steps=1", "eval_every=1", "eval_episodes=2"]
    with pytest.raises(RuntimeError, match="evaluation at step 1: 2 of 2 val episodes ended in an error"):
        main(args)
    rows = (tmp_path / "r" / "metrics.jsonl").read_text().splitlines() if (tmp_path / "r" / "metrics.jsonl").exists() else []
    assert not any("eval/success_rate" in row for row in rows)
