"""Tiny causal LMs built locally: a byte-level BPE tokenizer trained on game text, random weights.

No model hub is reachable here, so tests, the CPU baselines and the embedded ``ragen-eval`` default
all start from models this module builds. They exercise exactly the code paths of a real checkpoint:
a ``Qwen2ForCausalLM`` saved with ``save_pretrained``, a ``PreTrainedTokenizerFast`` with a ChatML
chat template, loadable by ``transformers.AutoModelForCausalLM`` and by vLLM (CPU build).

>>> from ragen_train.tiny import build_tiny_checkpoint
>>> path = build_tiny_checkpoint("/tmp/tiny", seed=0)   # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragen_envs import PRESETS, make
from ragen_envs.config_dicts import require_ints
from ragen_envs.seeding import as_seed
from ragen_envs.text import TextEpisode

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

#: Special tokens, in id order (ids 0, 1, 2). ``<|im_end|>`` ends every chat turn and is the EOS.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

#: ChatML, the format Qwen2.5 uses. Rendering a conversation one message longer only appends text,
#: so the rollout's prefix diffing sees every assistant turn as a clean suffix.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Protocol vocabulary the games' own text may not spell out (tags, answer separators, templated
# thoughts, every action name and common alias), so the tokenizer has compact tokens for the text
# a model writes, not only for the text it reads.
_PROTOCOL_TEXT = (
    "assistant\n<think>I should move the player next to the box, then push it onto the target.</think>"
    "<answer>Up || Down || Left || Right</answer>\n"
    "assistant\n<think>The goal is below and to the right; holes are to the left. I move down, then right.</think>"
    "<answer>Down || Right || Down</answer>\n"
    "<think>One arm pays a small reward every time; the other pays a large reward rarely. "
    "I compare their expected rewards.</think><answer>phoenix</answer>\n"
    "assistant\n<think>The box is above the target, so I push it down.</think><answer>Down</answer>\n"
    "assistant\n<think>I pick a valid action.</think><answer>Left</answer>\n"
    "assistant\n<think>I am at (1, 2) and the goal is at (3, 3). I will go Down, Right.</think>"
    "<answer>Down || Right</answer>\n"
    "assistant\n<think>I am at (2, 2), the box is at (3, 2) and the target at (4, 2). I will go Down.</think>"
    "<answer>Down</answer>\n"
    "Your answer must be <think>...</think><answer>...</answer>. "
    "Separate actions with ||. Actions available: Up, Down, Left, Right. "
    "up down left right north south east west u d l r 0 1 2 3 4 5 6 7 8 9 10\n"
    "Turn 1 of 5. You have 10 actions left. Reward: 1.0. Reward: -0.1. Invalid format.\n"
    "Row and column coordinates (row, col) start at 0 from the top-left cell.\n"
    "Player at (2, 3). Box at (3, 3). Target at (4, 3). Walls at (0, 0), (0, 1).\n"
    "######\n#_P__#\n#_X__#\n#_O__#\n#____#\n######\n"
    "######\n#  @ #\n# $  #\n# .  #\n#    #\n######\n"
    "SFFF\nFHFH\nFFFH\nHFFG\n"
    "P _ _ _\n_ O _ O\n_ _ _ O\nO _ _ G\n"
)


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of a tiny Qwen2 model and its tokenizer.

    ``hidden_size / num_heads`` is the attention head size; vLLM's CPU attention refuses heads
    smaller than 64, so the defaults keep it at exactly 64.
    """

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 2
    num_kv_heads: int = 1
    intermediate_size: int = 256
    vocab_size: int = 1024
    max_position_embeddings: int = 4096

    def __post_init__(self) -> None:
        require_ints(self, ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size",
                            "max_position_embeddings"))
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if self.hidden_size // self.num_heads < 64:
            raise ValueError(
                f"head size hidden_size/num_heads = {self.hidden_size // self.num_heads} < 64; "
                "vLLM's CPU attention needs at least 64")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} is not divisible by num_kv_heads {self.num_kv_heads}")
        if not isinstance(self.vocab_size, int) or self.vocab_size < 256 + len(SPECIAL_TOKENS):
            raise ValueError(f"vocab_size must be at least {256 + len(SPECIAL_TOKENS)} "
                             f"(256 byte symbols + special tokens), got {self.vocab_size!r}")


def tokenizer_corpus() -> list[str]:
    """The fixed text the tiny tokenizer is trained on: protocol vocabulary plus the games' own text.

    The games' text (rules, legends, prompts, observations of a few fixed levels per preset) comes
    from ``ragen_envs.text``, so the corpus is a deterministic function of the code: a change to the
    protocol's wording changes the tokenizer built from then on (saved checkpoints keep theirs).
    """
    corpus = [_PROTOCOL_TEXT]
    corpus.extend(_game_text())
    return corpus


def _game_text() -> list[str]:
    """Chat text of the first turn of three fixed levels of every registered text preset (a visual preset's
    chat is a text preset's with pictures)."""
    texts: list[str] = []
    for preset in PRESETS:
        if preset.visual:
            continue
        for seed in range(3):
            episode = TextEpisode(preset.name, seed)
            # role names as ChatML puts them, so "system", "user", "assistant" become single tokens
            texts.extend(f"{message['role']}\n{message['content']}" for message in episode.messages)
    return texts


def grid_symbols() -> frozenset[str]:
    """Every single character a game draws a grid cell with, in any of its symbol vocabularies (the
    ``symbol_sets`` of every built-in preset's game)."""
    symbols = set()
    for preset in PRESETS:
        env = make(preset.name)
        symbols.update(s for vocabulary in env.unwrapped.symbol_sets.values() for s in vocabulary.values())
        env.close()
    return frozenset(s for s in symbols if len(s) == 1)


def _without_grid_merges(spec: dict, grid: frozenset[str]) -> dict:
    """A trained BPE's JSON ``spec`` minus every merge that joins grid symbols with each other or
    with a line break (and every later merge that needs a dropped token), ids renumbered densely."""
    from tokenizers import decoders

    to_text = decoders.ByteLevel()
    vocab: dict[str, int] = spec["model"]["vocab"]
    dropped = set()
    kept_merges = []
    for merge in spec["model"]["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        token = left + right
        if left in dropped or right in dropped:
            dropped.add(token)  # built from a dropped token: it could never be produced
            continue
        # part of one multi-byte character (half of the tick symbol) decodes to U+FFFD, never a cell
        text = to_text.decode([token])
        # a row is pre-tokenised with its line break attached ("_#\n"); keeping the break a token of
        # its own gives every row the same length, so the cell below is always the same offset away
        if len(text) >= 2 and set(text) <= grid | {"\n"} and any(c in grid for c in text):
            dropped.add(token)
            continue
        kept_merges.append(merge)
    kept = sorted((i, t) for t, i in vocab.items() if t not in dropped)
    spec["model"]["vocab"] = {t: new for new, (_, t) in enumerate(kept)}
    spec["model"]["merges"] = kept_merges
    old_to_new = {old: new for new, (old, _) in enumerate(kept)}
    for added in spec.get("added_tokens", []):
        added["id"] = old_to_new[added["id"]]
    return spec


def build_tiny_tokenizer(
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 1024,
    model_max_length: int = 4096,
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``corpus`` (default :func:`tokenizer_corpus`).

    No token spans two grid cells: merges of :func:`grid_symbols` (with each other or with a line
    break) are dropped, so a grid row is one token per cell plus one for its line break, and a
    model sees each cell at its own position (a merged ``__#`` would hide which column holds the wall). Byte-level with Qwen2's NFC
    normaliser and pre-tokeniser, so every NFC string (all game and
    protocol text) round-trips exactly through encode/decode, and a checkpoint reloaded with
    ``AutoTokenizer`` (which transformers maps to ``Qwen2Tokenizer``) encodes identically. Carries the
    :data:`SPECIAL_TOKENS`, a ChatML chat template, ``<|im_end|>`` as EOS and ``<|endoftext|>`` as
    pad. Training is deterministic: the same corpus gives the same vocabulary and merges.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    texts = list(tokenizer_corpus() if corpus is None else corpus)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("corpus must be a non-empty iterable of strings")
    if not isinstance(vocab_size, int) or vocab_size < 256 + len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must be an int >= {256 + len(SPECIAL_TOKENS)}, got {vocab_size!r}")

    bpe = Tokenizer(models.BPE())
    # transformers loads any saved qwen2 checkpoint's tokenizer as Qwen2Tokenizer, which rebuilds the
    # normaliser and pre-tokeniser from its own defaults; training with exactly those makes the
    # tokenizer returned here and the one reloaded from disk (by transformers or vLLM) identical.
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    bpe = Tokenizer.from_str(json.dumps(_without_grid_merges(json.loads(bpe.to_str()), grid_symbols())))

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=["<|im_start|>"],
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
        padding_side="left",  # batched generation appends after the prompt
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_checkpoint(
    out_dir: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    intermediate_size: int = 256,
    vocab_size: int = 1024,
    max_position_embeddings: int = 4096,
    tokenizer: PreTrainedTokenizerFast | None = None,
) -> Path:
    """Save a randomly initialised tiny Qwen2 causal LM and its tokenizer to ``out_dir``; return it.

    Weights are a pure function of ``seed`` and the shape (the global torch RNG is left untouched).
    ``tokenizer`` defaults to :func:`build_tiny_tokenizer` with ``vocab_size``; the model's
    vocabulary is the tokenizer's actual size. The directory loads with
    ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` and with vLLM.
    """
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    shape = TinyModelConfig(hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
                            num_kv_heads=num_kv_heads, intermediate_size=intermediate_size,
                            vocab_size=vocab_size, max_position_embeddings=max_position_embeddings)
    seed = as_seed(seed)  # NumPy integers too
    if tokenizer is None:
        tokenizer = build_tiny_tokenizer(vocab_size=shape.vocab_size, model_max_length=max_position_embeddings)
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_layers,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        max_position_embeddings=shape.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="float32",
    )
    # fork_rng: seed the init without touching the caller's global torch RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[eos_id, pad_id], pad_token_id=pad_id, bos_token_id=pad_id)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "tiny_config.json").write_text(_tiny_config_json(shape, seed))
    return out


def _tiny_config_json(shape: TinyModelConfig, seed: int) -> str:
    """Provenance written beside the checkpoint: the exact call that rebuilds its initial weights."""
    return json.dumps({"builder": "ragen_train.tiny.build_tiny_checkpoint", "seed": seed, **asdict(shape)},
                      indent=2) + "\n"



#: The chat template of the tiny vision-language checkpoint: ChatML whose content may be OpenAI content
#: parts, each image part (``image_url`` or ``image``) written as the processor's ``<image>`` token.
VISION_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}{% else %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_tiny_vision_checkpoint(out_dir: str | Path, *, seed: int = 0, image_size: int = 32,
                                 patch_size: int = 8) -> Path:
    """Save a randomly initialised tiny LLaVA (a CLIP vision tower, a Qwen2 language model) and its processor.

    The processor is the :func:`build_tiny_tokenizer` tokenizer with an ``<image>`` token, a CLIP image
    processor that resizes every picture to ``image_size`` pixels, and :data:`VISION_CHAT_TEMPLATE`.
    The directory loads with ``AutoProcessor`` / ``AutoModelForImageTextToText`` and plays image
    observations through ``ragen-eval --backend hf``; nothing comes from a model hub.
    """
    import torch
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, GenerationConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor, Qwen2Config)

    seed = as_seed(seed)
    tokenizer = build_tiny_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<image>"]})
    tokenizer.chat_template = VISION_CHAT_TEMPLATE
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                              image_size=image_size, patch_size=patch_size, projection_dim=32)
    text = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                       tie_word_embeddings=True, eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=pad_id)
    config = LlavaConfig(vision_config=vision, text_config=text,
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
                         vision_feature_select_strategy="default", vision_feature_layer=-1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos_id, pad_id], pad_token_id=pad_id)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": image_size},
                                           crop_size={"height": image_size, "width": image_size}),
        tokenizer=tokenizer, patch_size=patch_size, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=VISION_CHAT_TEMPLATE)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
