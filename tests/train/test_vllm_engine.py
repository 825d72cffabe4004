"""The vLLM rollout engine (``rollout_engine=vllm``) on the tiny checkpoint, with vLLM's CPU build.

One engine is loaded for the whole file, in this process (``VLLMRolloutEngine`` keeps vLLM
in-process so that it can take the actor's tensors). The proof that weight sync works: after the
torch model changes, the synced engine's greedy replies equal ``transformers``' greedy replies of
the *changed* model, where the engine's replies before the sync did not. Run with
``python -m pytest -m vllm tests/train/test_vllm_engine.py``; the config and refusal tests at the
end need no vLLM and run in the default suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.policy import load_tokenizer
from ragen_train.rollout import HFRolloutEngine, render_chat, rollout, stop_token_ids

transformers = pytest.importorskip("transformers")

CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
ROLLOUT = {"group_size": 2, "protocol": {"max_turns": 2}, "max_new_tokens": 16}


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    pytest.importorskip("vllm")
    for key, value in CPU_ENV.items():
        os.environ.setdefault(key, value)
    from ragen_train.vllm_engine import VLLMRolloutEngine

    eng = VLLMRolloutEngine(tiny_model_dir, dtype=torch.float32, max_model_len=1024, gpu_memory_utilization=0.2,
                            enforce_eager=True, seed=0)
    yield eng
    eng.close()


@pytest.fixture
def lm(tiny_model_dir):
    """A fresh float32 copy of the tiny model for each test (tests change its weights)."""
    return transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32).eval()


def _history(record):
    """The episode's full chat, replayed through the protocol from its record."""
    from ragen_envs.text import TextEpisode

    episode = TextEpisode(record["env"], record["seed"], record["protocol"])
    for turn in record["turns"]:
        episode.step(turn["response"], finish_reason=turn.get("finish_reason"))
    return episode.history


def _check_layout(batch, tokenizer, stops):
    """Masked tokens are exactly the replies; the whole sequence is the chat template of the finished chat."""
    for traj in batch.trajectories:
        turns = traj.record["turns"]
        assert len(traj.response_tokens) == len(turns) >= 1
        assert len(traj.input_ids) == len(traj.loss_mask) == len(traj.turn_ids) == len(traj.rewards)
        assert traj.loss_mask == [int(t >= 0) for t in traj.turn_ids]
        assert sum(traj.rewards) == pytest.approx(traj.record["total_reward"])
        # Rebuild the text: unmasked runs decoded as they are, each reply as the protocol saw it plus
        # the stop token it sampled, and compare with the template's rendering of the whole chat.
        text, k, pos = "", 0, 0
        while pos < len(traj.input_ids):
            end = pos
            while end < len(traj.input_ids) and traj.turn_ids[end] == traj.turn_ids[pos]:
                end += 1
            run = traj.input_ids[pos:end]
            if traj.turn_ids[pos] < 0:
                text += tokenizer.decode(run, skip_special_tokens=False)
            else:
                assert traj.turn_ids[pos] == k and len(run) == traj.response_tokens[k]
                assert tokenizer.decode(run, skip_special_tokens=True) == turns[k]["response"]
                stopped = run[-1] in stops
                assert (turns[k]["finish_reason"] is None) == stopped
                text += turns[k]["response"] + (tokenizer.convert_ids_to_tokens(run[-1]) if stopped else "")
                k += 1
            pos = end
        assert k == len(turns)
        history = _history(traj.record)
        assert history[-1]["role"] == "assistant"
        last = turns[-1]
        prefix = render_chat(tokenizer, history[:-1], add_generation_prompt=True) + last["response"]
        assert render_chat(tokenizer, history, add_generation_prompt=False).startswith(prefix)
        end_marker = tokenizer.convert_ids_to_tokens(traj.input_ids[-1]) if last["finish_reason"] is None else ""
        assert text == prefix + end_marker


def _perturb(model, seed):
    """A weight change large enough to change greedy replies (standing in for many optimizer steps)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.3)


def _prompts(tokenizer):
    """First prompts of three games, as token ids."""
    from ragen_envs.text import TextEpisode

    return [tokenizer.apply_chat_template(TextEpisode(env, seed).messages, add_generation_prompt=True,
                                          return_dict=False)
            for env, seed in [("frozenlake", 1), ("bandit", 2), ("simple_sokoban", 3)]]


def _greedy(eng, prompts, stops, max_new_tokens=16):
    return eng.generate(prompts, max_new_tokens=max_new_tokens, temperature=0.0, top_p=1.0, stop_ids=stops,
                        seeds=list(range(len(prompts))))


# --- with vLLM ---------------------------------------------------------------------------------


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_rollout_has_the_hf_token_layout_and_is_reproducible(engine, lm, tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    stops = stop_token_ids(tokenizer, lm)
    engine.load_weights(lm)
    sampled = rollout(lm, tokenizer, "frozenlake", [11, 12], engine=engine, generation_seed=5, **ROLLOUT)
    assert len(sampled.trajectories) == 4 and sampled.group_rewards().shape == (2, 2)
    _check_layout(sampled, tokenizer, stops)
    again = rollout(lm, tokenizer, "frozenlake", [11, 12], engine=engine, generation_seed=5, **ROLLOUT)
    assert [t.input_ids for t in again.trajectories] == [t.input_ids for t in sampled.trajectories]
    other = rollout(lm, tokenizer, "frozenlake", [11, 12], engine=engine, generation_seed=6, **ROLLOUT)
    assert [t.input_ids for t in other.trajectories] != [t.input_ids for t in sampled.trajectories]
    # members of a group play one level with different samples
    first, second = sampled.trajectories[:2]
    assert first.record["level_seed"] == second.record["level_seed"] and first.input_ids != second.input_ids


@pytest.mark.vllm
@pytest.mark.slow
def test_synced_engine_generates_what_the_changed_torch_model_generates(engine, lm, tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    stops = stop_token_ids(tokenizer, lm)
    hf = HFRolloutEngine(lm, tokenizer)
    prompts = _prompts(tokenizer)
    engine.load_weights(lm)
    assert _greedy(engine, prompts, stops) == _greedy(hf, prompts, stops)

    _perturb(lm, seed=1)
    changed = _greedy(hf, prompts, stops)
    assert _greedy(engine, prompts, stops) != changed  # the engine still has the old weights (and cache)
    engine.load_weights(lm)
    assert _greedy(engine, prompts, stops) == changed

    # Replies are cut after the first stop id, which is kept, the same way by both engines.
    stop = changed[0][len(changed[0]) // 2]
    expected = [reply[:reply.index(stop) + 1] if stop in reply else reply for reply in changed]
    assert _greedy(engine, prompts, [stop]) == _greedy(hf, prompts, [stop]) == expected

    # Whole greedy rollouts of the changed model are the same token for token, masks included.
    greedy_vllm = rollout(lm, tokenizer, "frozenlake", [11], engine=engine, temperature=0.0, **ROLLOUT)
    greedy_hf = rollout(lm, tokenizer, "frozenlake", [11], temperature=0.0, **ROLLOUT)
    _check_layout(greedy_vllm, tokenizer, stops)
    assert [t.input_ids for t in greedy_vllm.trajectories] == [t.input_ids for t in greedy_hf.trajectories]
    assert [t.loss_mask for t in greedy_vllm.trajectories] == [t.loss_mask for t in greedy_hf.trajectories]


@pytest.mark.vllm
@pytest.mark.slow
def test_engine_refuses_bad_requests(engine, tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    prompts = _prompts(tokenizer)
    with pytest.raises(ValueError, match="one seed per prompt"):
        engine.generate(prompts, max_new_tokens=4, temperature=1.0, top_p=1.0, stop_ids=[2], seeds=[0])
    with pytest.raises(ValueError, match="max_model_len=1024"):
        engine.generate([[5] * 1024], max_new_tokens=4, temperature=1.0, top_p=1.0, stop_ids=[2], seeds=[0])
    # A prompt near the limit gets only the room that is left.
    near = engine.generate([prompts[0] + [5] * (1021 - len(prompts[0]))] * 4, max_new_tokens=16, temperature=1.0,
                           top_p=1.0, stop_ids=[2], seeds=[0, 1, 2, 3])
    assert all(len(reply) == 3 or (1 <= len(reply) < 3 and reply[-1] == 2) for reply in near)


@pytest.mark.vllm
@pytest.mark.slow
def test_ragen_train_with_vllm_engine_runs_and_logs(tiny_model_dir, tmp_path):
    pytest.importorskip("vllm")
    # A separate process: the trainer starts its own engine, as `ragen-train` would.
    args = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", "run_name=r", "env=bandit", "total_steps=2",
            "env_groups=2", "group_size=2", "max_new_tokens=8", "max_seq_len=1024", "ppo_mini_batch_size=4",
            "micro_batch_size=2", "actor_lr=1e-3", "critic_lr=1e-3", "plot_every=0", "rollout_filter_ratio=1.0",
            "rollout_engine=vllm",
            "vllm_gpu_memory_utilization=0.2"]
    env = {**os.environ, **CPU_ENV}
    proc = subprocess.run([sys.executable, "-m", "ragen_train.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        for key in ("rollout/success_rate", "rollout/mean_reward", "losses/policy_loss", "losses/value_loss",
                    "losses/entropy", "losses/grad_norm_actor", "rollout/completion_tokens_per_turn",
                    "time/weight_sync_s", "time/rollout_s"):
            assert row[key] is not None and row[key] == row[key], key  # present and not NaN
        assert row["time/weight_sync_s"] >= 0 and row["rollout/completion_tokens_per_turn"] > 0
    assert load_config(tmp_path / "r" / "config.yaml").rollout_engine == "vllm"
    assert (tmp_path / "r" / "checkpoints" / "step_000002" / "model.safetensors").is_file()


# --- without vLLM: config checks and refusals --------------------------------------------------


@pytest.mark.parametrize("value", [0, -0.1, 1.5, float("nan")])
def test_bad_memory_fraction_is_refused(value):
    with pytest.raises(ValueError, match="vllm_gpu_memory_utilization"):
        load_config(overrides=["rollout_engine=vllm", f"vllm_gpu_memory_utilization={value}"])


def test_unknown_engine_is_refused_and_both_engines_are_accepted():
    with pytest.raises(ValueError, match=r"rollout_engine must be one of \['hf', 'vllm'\]"):
        load_config(overrides=["rollout_engine=sglang"])
    assert load_config(overrides=["rollout_engine=vllm"]).vllm_gpu_memory_utilization == 0.3
    with pytest.raises(TypeError, match="vllm_enforce_eager"):
        load_config(overrides=["vllm_enforce_eager=maybe"])


def test_missing_vllm_gives_a_clear_error(monkeypatch, tiny_model_dir, tmp_path):
    from ragen_train.trainer import train

    monkeypatch.setitem(sys.modules, "vllm", None)  # as if not installed: `import vllm` fails
    config = load_config(overrides=[f"model={tiny_model_dir}", f"output_dir={tmp_path}", "run_name=r",
                                    "rollout_engine=vllm", "total_steps=1"])
    with pytest.raises(ImportError, match=r"rollout_engine=vllm needs the vllm package .*rollout_engine=hf"):
        train(config)
    assert not (tmp_path / "r" / "metrics.jsonl").exists()


def test_vllm_engine_refuses_several_processes(tiny_model_dir):
    from ragen_train.trainer import open_rollout_engine

    config = load_config(overrides=["rollout_engine=vllm"])
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    with pytest.raises(ValueError, match="single process only; under torchrun use rollout_engine=hf"):
        open_rollout_engine(config, tiny_model_dir, lm, DistInfo(rank=0, world_size=2))
    assert open_rollout_engine(load_config(), tiny_model_dir, lm, DistInfo(rank=0, world_size=2)) is None
