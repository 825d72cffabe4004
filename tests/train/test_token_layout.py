"""One token layout: a real rollout and SFT's ``tokenize_chat`` of the same finished chat agree token for token."""

from __future__ import annotations

from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from ragen_envs.text import TextEpisode  # noqa: E402
from ragen_train.policy import load_tokenizer  # noqa: E402
from ragen_train.rollout import rollout  # noqa: E402
from ragen_train.sft import tokenize_chat  # noqa: E402

pytestmark = pytest.mark.train

#: A trained checkpoint, so the replies are well formed and mostly end with a sampled EOS.
TRAINED = Path(__file__).resolve().parents[2] / "ragen_eval" / "default_model"


@pytest.fixture(scope="module")
def trained():
    if not (TRAINED / "model.safetensors").is_file():
        pytest.skip("the embedded default model is not present")
    return transformers.AutoModelForCausalLM.from_pretrained(str(TRAINED)), load_tokenizer(TRAINED)


def _finished_chat(record: dict) -> list[dict[str, str]]:
    """The episode's chat, replayed through the protocol from the record (independent of the rollout)."""
    episode = TextEpisode(record["env"], record["seed"], record["protocol"])
    for turn in record["turns"]:
        episode.step(turn["response"], finish_reason=turn.get("finish_reason"))
    return episode.history


def _reply_ends(mask: list[int]) -> list[int]:
    """Index of the last token of each masked span (one span per assistant reply)."""
    return [i for i, m in enumerate(mask) if m and (i + 1 == len(mask) or not mask[i + 1])]


def _as_rollout_lays_it_out(ids: list[int], mask: list[int], turns: list[dict]) -> tuple[list[int], list[int]]:
    """SFT's layout with each cut-off reply's stop token handed back to the environment.

    A reply that hit the token limit has no sampled stop: the template's end marker follows it as
    environment text (mask 0), and after the last turn nothing follows at all.
    """
    ids, mask = list(ids), list(mask)
    ends = _reply_ends(mask)
    assert len(ends) == len(turns)
    for k in reversed(range(len(turns))):
        if turns[k]["finish_reason"] != "length":
            continue
        if k + 1 == len(turns):
            del ids[ends[k]], mask[ends[k]]
        else:
            mask[ends[k]] = 0
    return ids, mask


@pytest.mark.parametrize(("max_new_tokens", "seeds"), [(64, [0, 1]), (6, [2])], ids=["stopped", "cut-off"])
def test_rollout_and_sft_lay_out_a_finished_chat_identically(trained, max_new_tokens: int, seeds: list[int]) -> None:
    model, tokenizer = trained
    batch = rollout(model, tokenizer, "simple_sokoban", seeds, group_size=1, temperature=0.0,
                    max_new_tokens=max_new_tokens)
    stopped = cut = 0
    for traj in batch.trajectories:
        turns = traj.record["turns"]
        chat = _finished_chat(traj.record)
        ids, mask = tokenize_chat(tokenizer, chat)
        expected = _as_rollout_lays_it_out(ids, mask, turns)
        assert (traj.input_ids, traj.loss_mask) == expected
        cut += sum(t["finish_reason"] == "length" for t in turns)
        stopped += sum(t["finish_reason"] is None for t in turns)
    if max_new_tokens == 64:
        assert stopped > 0 and cut == 0, "a trained model at 64 tokens should end its replies itself"
    else:
        assert cut > 0, "6 tokens cut every reply short (the shortest, <think></think><answer>Up</answer>, is longer)"


def test_a_template_that_ends_replies_without_a_stop_token_is_refused(tiny_model_dir: Path) -> None:
    tokenizer = load_tokenizer(tiny_model_dir)
    tokenizer.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
                               "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<answer>Up</answer>"}]
    with pytest.raises(ValueError, match="never end its turn"):
        tokenize_chat(tokenizer, chat)
