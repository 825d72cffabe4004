"""Rollouts: the loss mask covers exactly the sampled tokens, for any prefix-stable chat template."""

from __future__ import annotations

import pytest
import torch

from ragen_train.policy import load_tokenizer
from ragen_train.rollout import env_turn_text, render_chat, rollout

transformers = pytest.importorskip("transformers")

# A template unlike ChatML: upper-cased role tags, trimmed content, no newline after the end marker.
OTHER_TEMPLATE = (
    "{% for m in messages %}<|im_start|>[{{ m['role'] | upper }}]: {{ m['content'] | trim }}<|im_end|>{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>[ASSISTANT]: {% endif %}"
)


@pytest.fixture(scope="module")
def lm(tiny_model_dir):
    return transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))


def _scripted(lm, tokenizer, replies):
    """Make ``lm.generate`` answer turn k with ``replies[k]`` = (text, how it stops), like generate() would."""
    calls = {"n": 0}
    eos, pad = tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")

    def generate(input_ids, attention_mask, max_new_tokens, pad_token_id, **_):
        text, stop = replies[calls["n"]]
        calls["n"] += 1
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if stop == "length":  # never stopped: exactly max_new_tokens tokens, no padding
            assert len(ids) > max_new_tokens
            ids = ids[:max_new_tokens]
        else:  # stopped with the EOS, or with the generation config's second stop id; padded after it
            ids = ids + [eos if stop == "eos" else pad] + [pad_token_id] * 3
        tail = torch.tensor([ids])
        return torch.cat([input_ids, tail.expand(input_ids.shape[0], -1)], dim=1)

    return generate


def _check_masks(batch, tokenizer):
    for traj in batch.trajectories:
        turns = traj.record["turns"]
        assert len(traj.response_tokens) == len(turns)
        assert len(traj.input_ids) == len(traj.loss_mask) == len(traj.turn_ids) == len(traj.rewards)
        for k, turn in enumerate(turns):
            ids = [t for t, tid in zip(traj.input_ids, traj.turn_ids) if tid == k]
            assert tokenizer.decode(ids, skip_special_tokens=True) == turn["response"]
        assert traj.loss_mask == [int(t >= 0) for t in traj.turn_ids]
        assert sum(traj.rewards) == pytest.approx(traj.record["total_reward"])


@pytest.mark.parametrize("template", [None, OTHER_TEMPLATE], ids=["chatml", "other"])
def test_scripted_rollout_sequence_is_the_rendered_chat(lm, tiny_model_dir, template, monkeypatch):
    tokenizer = load_tokenizer(tiny_model_dir)
    if template is not None:
        tokenizer.chat_template = template
    r1 = "<think>left first</think><answer>Left</answer>"
    r2 = "<think>down</think><answer>Down || Down</answer>"
    r3 = "<think>" + "this reply runs out of tokens before it ends " * 4
    replies = [(r1, "eos"), (r2, "pad_stop"), (r3, "length")]
    monkeypatch.setattr(lm, "generate", _scripted(lm, tokenizer, replies))
    batch = rollout(lm, tokenizer, "frozenlake_det", [3], group_size=1, max_new_tokens=24,
                    protocol={"max_turns": 3, "max_actions_per_episode": 10})
    _check_masks(batch, tokenizer)
    traj = batch.trajectories[0]
    turns = traj.record["turns"]
    assert len(turns) == 3 and turns[2]["finish_reason"] == "length" and turns[0]["finish_reason"] is None
    r3_cut = turns[2]["response"]
    assert r3.startswith(r3_cut) and len(r3_cut) < len(r3)
    # Independent expectation: the template's rendering of the whole chat, where turn 2 carries the
    # extra stop token it sampled and nothing follows the truncated turn 3. Turn 1's sampled EOS is
    # the template's own end marker, so it appears once, not twice.
    full = render_chat(tokenizer, _history(traj), add_generation_prompt=False)
    expected = full[:full.index(r3_cut) + len(r3_cut)].replace(r2, r2 + "<|endoftext|>", 1)
    assert tokenizer.decode(traj.input_ids, skip_special_tokens=False) == expected
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert [t for t, tid in zip(traj.input_ids, traj.turn_ids) if tid == 0][-1] == eos
    assert traj.response_tokens[2] == 24


def _history(traj):
    """The episode's chat, replayed through the protocol from the record."""
    from ragen_envs.text import TextEpisode

    episode = TextEpisode(traj.record["env"], traj.record["seed"], traj.record["protocol"])
    for turn in traj.record["turns"]:
        episode.step(turn["response"], finish_reason=turn.get("finish_reason"))
    return episode.history


def test_random_model_rollout_masks_decode_to_responses(lm, tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    batch = rollout(lm, tokenizer, "frozenlake", [11, 12], group_size=3, max_new_tokens=16, generation_seed=5,
                    protocol={"max_turns": 2})
    assert len(batch.trajectories) == 6 and batch.group_rewards().shape == (2, 3)
    _check_masks(batch, tokenizer)
    # members of a group share the level
    levels = [t.record["level_seed"] for t in batch.trajectories]
    assert levels[0] == levels[1] == levels[2] and levels[3] == levels[4] == levels[5]
    again = rollout(lm, tokenizer, "frozenlake", [11, 12], group_size=3, max_new_tokens=16, generation_seed=5,
                    protocol={"max_turns": 2})
    assert [t.input_ids for t in again.trajectories] == [t.input_ids for t in batch.trajectories]
    data = batch.to_tensors(tokenizer.pad_token_id)
    assert data["loss_mask"].sum() == sum(sum(t.loss_mask) for t in batch.trajectories)
    assert torch.equal(data["loss_mask"].bool(), data["turn_ids"] >= 0)


def test_overflow_ends_token_collection_without_losing_rewards(lm, tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    first = len(tokenizer(render_chat(tokenizer, _first_chat(), True), add_special_tokens=False)["input_ids"])
    batch = rollout(lm, tokenizer, "frozenlake", [11], group_size=2, max_new_tokens=16, max_seq_len=first + 20,
                    protocol={"max_turns": 3})
    for traj in batch.trajectories:
        assert len(traj.input_ids) <= first + 20
        assert traj.overflowed and len(traj.record["turns"]) == 3
        assert sum(traj.rewards) == pytest.approx(traj.record["total_reward"])
    with pytest.raises(ValueError, match="max_seq_len"):
        rollout(lm, tokenizer, "frozenlake", [11], group_size=1, max_seq_len=first - 1)


def _first_chat():
    from ragen_envs.text import TextEpisode

    return TextEpisode("frozenlake", 11).messages


def test_template_that_rewrites_history_is_refused(tiny_model_dir):
    tokenizer = load_tokenizer(tiny_model_dir)
    tokenizer.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                               "{% if add_generation_prompt %}bot: {% endif %}")
    before = [{"role": "user", "content": "hi"}]
    after = before + [{"role": "assistant", "content": "yo"}, {"role": "user", "content": "again"}]
    with pytest.raises(ValueError, match="prefix"):
        env_turn_text(tokenizer, before, after)
    with pytest.raises(ValueError, match="context"):
        env_turn_text(tokenizer, before, [{"role": "user", "content": "other"}])
    with pytest.raises(ValueError, match="context='full'"):
        rollout(None, tokenizer, "bandit", [1], group_size=1, protocol={"context": "single"})
