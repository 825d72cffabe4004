"""TRL's GRPOTrainer trains on Bandit through :class:`ragen_train.trl_env.GameRollout`, on the CPU.

The policy is the embedded default checkpoint (0.4M parameters, plays the text protocol), sampled hot
enough that a group's replies differ, so GRPO has advantages to learn from: the nine-stage model picked
the same Bandit arm in every reply at temperature 1.5. The ten-stage model is steadier still
(`ragen-eval --model default --env bandit --episodes 64 --temperature T`: success 0.969 at 1.5, 0.938
at 2.0, where 6% of its replies break the format). The rewards TRL scores are
checked against a fresh in-process replay of every episode.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")

from ragen_envs import split_seeds  # noqa: E402
from ragen_envs.text import TextEpisode, replay  # noqa: E402
from ragen_eval.embedded_model import default_model_path  # noqa: E402
from ragen_train.trl_env import SEED_KEY, GameRollout, episode_reward  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.slow]


@pytest.fixture(scope="module")
def policy():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), tokenizer


def test_two_grpo_steps_on_bandit_score_our_rewards_and_change_every_parameter(policy, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = copy.deepcopy(policy[0]), policy[1]
    game = GameRollout("bandit")
    seeds = split_seeds("train", 4, env="bandit")
    dataset = datasets.Dataset.from_list(game.prompts(seeds))
    scored = []

    def recording_reward(completions, ragen_reward, ragen_record, **kwargs):
        scored.extend(zip(ragen_reward, ragen_record, strict=True))
        return episode_reward(completions, ragen_reward)

    config = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8, num_generations=4,
        max_completion_length=32, temperature=2.0, learning_rate=1e-2, beta=0.0, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=True, seed=0, dataloader_num_workers=0,
    )
    trainer = trl.GRPOTrainer(model=model, reward_funcs=recording_reward, args=config, train_dataset=dataset,
                              processing_class=tokenizer, rollout_func=game)
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    trainer.train()

    assert len(scored) == 16 and game.calls == 2
    for reward, record in scored:
        # The reward is the game's: replaying the episode's replies in process gives the same total.
        assert record["env_id"] == "ragen/Bandit-v0" and record["seed"] in seeds
        assert reward == pytest.approx(replay(record).total_reward)
        assert reward == pytest.approx(record["total_reward"])
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == 2
    assert [e["reward"] for e in logged] == pytest.approx([sum(r for r, _ in scored[i * 8:(i + 1) * 8]) / 8
                                                          for i in range(2)], abs=1e-6)
    # Sampled hot, a group's replies earn different rewards, so GRPO had a signal to follow...
    groups = [[r for r, _ in scored[i:i + 4]] for i in range(0, 16, 4)]
    assert any(len(set(g)) > 1 for g in groups)
    # ...and every trainable tensor moved.
    unchanged = [name for name, p in model.named_parameters() if p.requires_grad and torch.equal(p, before[name])]
    assert not unchanged


def test_the_completion_holds_every_turn_with_the_env_text_masked(policy):
    # A 3-turn FrozenLake episode through the adapter, with a stand-in for the trainer.
    model, tokenizer = policy
    game = GameRollout("frozenlake", protocol={"max_turns": 3})

    trainer = _stand_in_trainer(model, tokenizer)
    prompts = [row["prompt"] for row in game.prompts([3, 3, 8])]
    out = game(prompts, trainer)
    assert set(out) == {"prompt_ids", "completion_ids", "env_mask", "logprobs", "ragen_reward", "ragen_success",
                        "ragen_record"}
    for prompt, ids, mask, completion, record in zip(prompts, out["prompt_ids"], out["env_mask"],
                                                     out["completion_ids"], out["ragen_record"], strict=True):
        chat = [{"role": m["role"], "content": m["content"]} for m in prompt]
        assert ids == tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                    return_dict=False)
        assert len(mask) == len(completion) and mask[0] == 1
        # The model's tokens decode to exactly the replies the game was played with, turn by turn.
        sampled, runs, current = [], [], []
        for token, flag in zip(completion, mask):
            if flag:
                current.append(token)
            elif current:
                runs.append(current)
                current = []
        runs += [current] if current else []
        assert [tokenizer.decode(r, skip_special_tokens=True) for r in runs] == \
            [turn["response"] for turn in record["turns"]]
        assert record["seed"] == prompt[0][SEED_KEY]


def _stand_in_trainer(model, tokenizer, max_completion_length=24):
    """What GameRollout reads of a GRPOTrainer, without building one."""
    return SimpleNamespace(
        args=SimpleNamespace(seed=0, max_completion_length=max_completion_length, temperature=1.0, top_p=1.0),
        processing_class=tokenizer, model=model,
        accelerator=SimpleNamespace(process_index=0, unwrap_model=lambda m: m),
    )


def test_a_reply_of_no_tokens_is_played_as_an_empty_reply(policy, monkeypatch):
    # The first turn's generation ends before any token (as an engine stopped at once can); the batch
    # goes on, the turn scored as an empty reply: a format error with the protocol's penalty.
    model, tokenizer = copy.deepcopy(policy[0]), policy[1]
    real_generate, calls = model.generate, []

    def generate(input_ids, **kwargs):
        calls.append(1)
        return input_ids if len(calls) == 1 else real_generate(input_ids=input_ids, **kwargs)

    monkeypatch.setattr(model, "generate", generate)
    game = GameRollout("frozenlake", protocol={"max_turns": 3})
    prompts = [row["prompt"] for row in game.prompts([3, 8])]
    out = game(prompts, _stand_in_trainer(model, tokenizer))
    for reward, record, mask in zip(out["ragen_reward"], out["ragen_record"], out["env_mask"], strict=True):
        first = record["turns"][0]
        assert first["response"] == "" and not first["format_ok"] and first["penalty"] == pytest.approx(-0.1)
        assert reward == pytest.approx(replay(record).total_reward)
        assert mask[0] == 0  # the completion opens with the env's text of turn 2: turn 1 sampled nothing

    # ragen-train's path: the turn's penalty is kept and credited with the next sampled turn.
    from ragen_train.rollout import rollout

    calls.clear()
    batch = rollout(model, tokenizer, "bandit", [1, 2], group_size=2, max_new_tokens=8)
    for traj in batch.trajectories:
        assert traj.episode_reward == pytest.approx(-0.1) and not any(traj.loss_mask)
    assert batch.to_tensors(tokenizer.pad_token_id)["scores"].tolist() == pytest.approx([-0.1] * 4)


def test_token_ids_outside_the_vocabulary_are_refused(policy, monkeypatch):
    model, tokenizer = copy.deepcopy(policy[0]), policy[1]
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    monkeypatch.setattr(model, "generate", lambda input_ids, **kwargs: torch.cat(
        [input_ids, torch.tensor([[len(tokenizer) + 5, eos]]).expand(input_ids.shape[0], -1)], dim=1))
    game = GameRollout("bandit")
    with pytest.raises(ValueError, match=f"token id {len(tokenizer) + 5}, outside the tokenizer's {len(tokenizer)}"):
        game([row["prompt"] for row in game.prompts([1])], _stand_in_trainer(model, tokenizer))


def test_a_padded_embedding_table_never_samples_past_the_tokenizer(policy):
    # 64 extra rows, each far longer than any real one: unsuppressed, they would win nearly every draw.
    model, tokenizer = copy.deepcopy(policy[0]), policy[1]
    model.resize_token_embeddings(len(tokenizer) + 64)
    with torch.no_grad():
        extra = model.get_output_embeddings().weight[len(tokenizer):]
        extra.copy_(torch.randn(extra.shape, generator=torch.Generator().manual_seed(0)) * 100)
    game = GameRollout("bandit")
    out = game([row["prompt"] for row in game.prompts([1, 2, 3, 4])], _stand_in_trainer(model, tokenizer))
    assert all(0 <= t < len(tokenizer) for ids in out["completion_ids"] for t in ids)


def test_bad_settings_and_foreign_prompts_fail_clearly():
    with pytest.raises(ValueError, match="unknown environment"):
        GameRollout("no_such_game")
    with pytest.raises(ValueError, match="context='full'"):
        GameRollout("bandit", protocol={"context": "single"})
    for length in ("x", -5, 0, True):  # each once failed only at the first rollout
        with pytest.raises(ValueError, match="max_seq_len must be a positive int"):
            GameRollout("bandit", max_seq_len=length)
    with pytest.raises(ValueError, match=SEED_KEY):
        GameRollout("bandit")([[{"role": "user", "content": "hi"}]], trainer=None)


def test_prompt_rows_survive_a_datasets_round_trip():
    game = GameRollout("simple_sokoban")
    rows = datasets.Dataset.from_list(game.prompts([5, 9])).to_list()
    for row, seed in zip(rows, [5, 9]):
        assert row["prompt"][0][SEED_KEY] == seed
        chat = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
        assert chat == TextEpisode("simple_sokoban", seed).messages
    json.dumps(rows)  # plain data, as a dataset on disk holds it
