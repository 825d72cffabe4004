"""The tiny tokenizer and checkpoint: determinism, exact round trips, chat template, loading."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ragen_train.tiny import (  # noqa: E402
    SPECIAL_TOKENS,
    TinyModelConfig,
    build_tiny_checkpoint,
    build_tiny_tokenizer,
    tokenizer_corpus,
)

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


@pytest.fixture(scope="module")
def reloaded_tokenizer(tiny_model_dir: Path):
    return transformers.AutoTokenizer.from_pretrained(tiny_model_dir)


def _chat() -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are playing Sokoban."},
        {"role": "user", "content": "######\n#_P__#\n#_X__#\n#_O__#\n######\nTurn 1 of 5."},
        {"role": "assistant", "content": "<think>The box is above the target.</think><answer>Down</answer>"},
        {"role": "user", "content": "######\n#____#\n#_P__#\n#_√__#\n######\nTurn 2 of 5."},
        {"role": "assistant", "content": "<think>Done?</think><answer>Up || Left</answer>"},
    ]


def test_tokenizer_training_is_deterministic(tokenizer) -> None:
    again = build_tiny_tokenizer()
    assert again.backend_tokenizer.to_str() == tokenizer.backend_tokenizer.to_str()


def test_corpus_changes_the_vocabulary() -> None:
    """Guards against a trainer that ignores its corpus (the determinism test alone would pass)."""
    a = build_tiny_tokenizer(["Sokoban box target " * 50], vocab_size=300)
    b = build_tiny_tokenizer(["FrozenLake hole goal " * 50], vocab_size=300)
    assert "Sokoban" in "".join(a.convert_ids_to_tokens(a("Sokoban")["input_ids"]))
    assert len(a("Sokoban")["input_ids"]) < len(b("Sokoban")["input_ids"])


def test_special_tokens_and_ids(tokenizer) -> None:
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2]
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    # a special token is one id, never split into bytes
    assert tokenizer("<|im_start|>user")["input_ids"][0] == 1


def test_game_words_are_compact(tokenizer) -> None:
    """The point of training on game text: protocol text takes few tokens (bytes would take 9-11).

    Qwen2's pre-tokeniser splits ``</answer>`` at ``</``, the letters and ``>``, so 3 is the floor.
    """
    for text, most in (("<think>", 2), ("</answer>", 3), ("Up || Right", 3), (" Left", 1)):
        ids = tokenizer(text)["input_ids"]
        assert len(ids) <= most, (text, tokenizer.convert_ids_to_tokens(ids))


@settings(max_examples=30, deadline=None)
@given(preset=st.sampled_from(["simple_sokoban", "sokoban", "frozenlake", "frozenlake_8x8"]),
       seed=st.integers(0, 10_000), standard=st.booleans())
def test_grid_rows_are_one_token_per_cell(reloaded_tokenizer, preset: str, seed: int, standard: bool) -> None:
    """Every cell of a real observation is its own token and every line break too, as reloaded from
    disk (the way vLLM and ragen-eval load it), so the cell below is always width + 1 tokens on."""
    from ragen_envs.sokoban.text import STANDARD_SYMBOLS
    from ragen_envs.text import TextEpisode

    symbols = dict(STANDARD_SYMBOLS) if standard and "sokoban" in preset else None
    grid = TextEpisode(preset, seed, config={"symbols": symbols}).game.observation_text("grid", symbols, 0)
    ids = reloaded_tokenizer(grid, add_special_tokens=False)["input_ids"]
    pieces = [reloaded_tokenizer.decode([i]) for i in ids]
    assert pieces == list(grid), pieces


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80))
def test_nfc_text_round_trips_exactly(tokenizer, text: str) -> None:
    text = unicodedata.normalize("NFC", text)
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=80))
def test_reloaded_tokenizer_encodes_identically(tokenizer, reloaded_tokenizer, text: str) -> None:
    # the session checkpoint was built from the default corpus, so a fresh default build must match it
    assert tokenizer(text)["input_ids"] == reloaded_tokenizer(text)["input_ids"]


def test_chat_template_is_prefix_stable(reloaded_tokenizer) -> None:
    """Rendering one more message only appends: what rollout masking by prefix diffing relies on."""
    chat = _chat()
    for k in range(1, len(chat)):
        shorter = reloaded_tokenizer.apply_chat_template(
            chat[:k], tokenize=False, add_generation_prompt=chat[k]["role"] == "assistant")
        longer = reloaded_tokenizer.apply_chat_template(chat[: k + 1], tokenize=False)
        assert longer.startswith(shorter)
    rendered = reloaded_tokenizer.apply_chat_template(chat[:2], tokenize=False, add_generation_prompt=True)
    assert rendered == (
        "<|im_start|>system\nYou are playing Sokoban.<|im_end|>\n"
        "<|im_start|>user\n######\n#_P__#\n#_X__#\n#_O__#\n######\nTurn 1 of 5.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_chat_token_ids_decode_to_the_rendered_text(reloaded_tokenizer) -> None:
    chat = _chat()
    text = reloaded_tokenizer.apply_chat_template(chat, tokenize=False)
    ids = reloaded_tokenizer.apply_chat_template(chat, tokenize=True, return_dict=False)
    assert reloaded_tokenizer.decode(ids) == text
    assert ids.count(reloaded_tokenizer.convert_tokens_to_ids("<|im_end|>")) == len(chat)


def test_checkpoint_loads_and_has_the_promised_shape(tiny_model_dir: Path) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = model.config
    assert cfg.model_type == "qwen2"
    assert cfg.hidden_size // cfg.num_attention_heads >= 64
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_key_value_heads) == (2, 128, 1)
    assert cfg.vocab_size == len(tok)
    assert model.generation_config.eos_token_id[0] == tok.eos_token_id
    n_params = sum(p.numel() for p in model.parameters())
    assert 100_000 < n_params < 2_000_000
    size = sum(f.stat().st_size for f in tiny_model_dir.iterdir())
    assert size < 5_000_000
    provenance = json.loads((tiny_model_dir / "tiny_config.json").read_text())
    assert provenance["seed"] == 0 and provenance["hidden_size"] == 128


def test_generate_runs_batched_with_left_padding(tiny_model_dir: Path) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    chats = [_chat()[:2], _chat()[:4]]
    batch = tok.apply_chat_template(chats, add_generation_prompt=True, return_tensors="pt",
                                    return_dict=True, padding=True)
    assert batch["attention_mask"][0, 0] == 0  # left padding: the shorter prompt is padded in front
    # generate() samples from the global RNG; isolate it
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        out = model.generate(**batch, max_new_tokens=12, do_sample=True, temperature=1.0)
    assert out.shape[0] == 2 and out.shape[1] <= batch["input_ids"].shape[1] + 12


def test_weights_are_a_pure_function_of_seed(tmp_path: Path) -> None:
    tok = build_tiny_tokenizer(["Up Down Left Right <think> </think> <answer> </answer>"] * 20, vocab_size=300)
    rng_before = torch.random.get_rng_state()
    a = build_tiny_checkpoint(tmp_path / "a", seed=1, tokenizer=tok)
    b = build_tiny_checkpoint(tmp_path / "b", seed=1, tokenizer=tok)
    c = build_tiny_checkpoint(tmp_path / "c", seed=2, tokenizer=tok)
    assert torch.equal(torch.random.get_rng_state(), rng_before)  # the caller's RNG is untouched
    load = transformers.AutoModelForCausalLM.from_pretrained
    sa, sb, sc = (load(p).state_dict() for p in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["model.layers.0.self_attn.q_proj.weight"], sc["model.layers.0.self_attn.q_proj.weight"])


def test_default_corpus_covers_the_protocol_text() -> None:
    corpus = "".join(tokenizer_corpus())
    # protocol vocabulary, and the games' own text (rules, arm names) rendered by ragen_envs.text
    for needle in ("<think>", "</answer>", "||", "Up", "Down", "Left", "Right", "FrozenLake", "Phoenix", "box"):
        assert needle in corpus


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden_size": 64, "num_heads": 2}, "head size"),
        ({"hidden_size": 130, "num_heads": 4}, "divisible"),
        ({"num_heads": 2, "num_kv_heads": 3}, "divisible"),
        ({"num_layers": 0}, "positive"),
        ({"vocab_size": 100}, "vocab_size"),
    ],
)
def test_bad_shapes_raise_clear_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TinyModelConfig(**kwargs)


def test_bad_tokenizer_inputs_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        build_tiny_tokenizer([])
    with pytest.raises(ValueError, match="vocab_size"):
        build_tiny_tokenizer(["abc"], vocab_size=10)
    with pytest.raises(TypeError, match="seed"):
        build_tiny_checkpoint(tmp_path, seed="0")  # type: ignore[arg-type]
