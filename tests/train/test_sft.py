"""SFT warm start: the masked loss, batching, schedule, and a short end-to-end run on real demos."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ragen_train.demos import DemoConfig, play_demos  # noqa: E402
from ragen_train.sft import (  # noqa: E402
    Example,
    SFTConfig,
    batch_nll,
    config_from_args,
    learning_rate,
    run_sft,
    tokenize_chat,
    tokenize_demos,
)
from tests.train.loss_spans import trained_spans  # noqa: E402

pytestmark = pytest.mark.train


def test_batch_nll_is_the_cross_entropy_of_the_trained_tokens(tiny_model_dir: Path) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    examples = [Example([5, 6, 7, 8, 9, 10], [0, 1, 1, 0, 1, 0]), Example([5, 6, 11], [0, 0, 1])]
    # independent computation: each sequence alone; position t-1 predicts token t; mean over the 4 trained targets
    terms = []
    for e in examples:
        logits = model(input_ids=torch.tensor([e.input_ids])).logits[0]
        terms += [torch.nn.functional.cross_entropy(logits[t - 1][None], torch.tensor([e.input_ids[t]]))
                  for t in range(1, len(e.input_ids)) if e.loss_mask[t]]
    loss, tokens = batch_nll(model, examples)
    assert tokens == 4 and loss.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-5)
    changed = [Example([5, 6, 7, 8, 9, 3], e.loss_mask) if i == 0 else e for i, e in enumerate(examples)]
    assert batch_nll(model, changed)[0].item() == pytest.approx(loss.item(), rel=1e-6)  # an untrained last target


def test_learning_rate_warms_up_then_decays_to_a_tenth() -> None:
    cfg = SFTConfig(lr=1.0, warmup_steps=4)
    rates = [learning_rate(s, 20, cfg) for s in range(21)]
    assert rates[:4] == [0.25, 0.5, 0.75, 1.0]
    assert rates[4] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[4:], rates[5:]))
    assert rates[20] == pytest.approx(0.1)
    assert rates[12] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"epochs": 0}, "epochs"), ({"batch_size": -1}, "batch_size"), ({"lr": 0.0}, "lr"),
     ({"grad_clip": 0.0}, "grad_clip")],
)
def test_bad_config_raises(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SFTConfig(**kwargs)


def test_cli_arguments_map_to_the_config() -> None:
    cfg = config_from_args(["--out", "x", "--env", "frozenlake", "--mode", "oracle", "--episodes", "7",
                            "--lr", "0.01", "--protocol", '{"max_turns": 3}', "--successful-only"])
    assert cfg.out == "x" and cfg.lr == 0.01
    assert cfg.demos == [DemoConfig(env="frozenlake", mode="oracle", num_episodes=7, successful_only=True,
                                    protocol={"max_turns": 3})]
    with pytest.raises(SystemExit):
        config_from_args(["--out", "x", "--mode", "expert"])


def test_demo_tokens_under_the_mask_are_exactly_the_replies(tiny_model_dir: Path) -> None:
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    demos = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=4, seed=4))
    for demo, ex in zip(demos, tokenize_demos(demos, tok, 8192), strict=True):
        replies = [m["content"] for m in demo.messages if m["role"] == "assistant"]
        decoded = [tok.decode(span) for span in trained_spans(ex.input_ids, ex.loss_mask)]
        assert decoded == [reply + tok.eos_token for reply in replies]


def test_sft_run_lowers_the_loss_and_writes_a_loadable_checkpoint(tmp_path: Path) -> None:
    cfg = SFTConfig(model="tiny", out=str(tmp_path / "sft"), epochs=3, batch_size=8, lr=3e-3, warmup_steps=2,
                    demos=DemoConfig(env="bandit", mode="format", num_episodes=32, seed=0))
    out = run_sft(cfg)
    rows = list(csv.DictReader(open(out / "sft_metrics.csv")))
    assert len(rows) == 3 * 4
    first, last = float(rows[0]["loss"]), float(rows[-1]["loss"])
    assert last < 0.5 * first, (first, last)
    assert json.loads((out / "sft_config.json").read_text())["demos"][0]["env"] == "bandit"
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    init = transformers.AutoModelForCausalLM.from_pretrained(out / "init")
    changed = [name for (name, p), (_, q) in zip(model.named_parameters(), init.named_parameters())
               if not torch.equal(p, q)]
    assert len(changed) == len(list(model.parameters()))  # every trainable parameter moved


def test_drop_long_skips_and_counts_exactly_the_demos_over_max_seq_len(tmp_path: Path) -> None:
    demo = DemoConfig(env="frozenlake", mode="oracle", num_episodes=16, seed=3)
    probe = run_sft(SFTConfig(model="tiny", out=str(tmp_path / "probe"), epochs=1, batch_size=8, demos=demo))
    tok = transformers.AutoTokenizer.from_pretrained(probe)
    lengths = sorted(len(tokenize_chat(tok, d.messages)[0]) for d in play_demos(demo))
    limit = lengths[len(lengths) // 2]  # about half the demonstrations are longer
    too_long = sum(n > limit for n in lengths)
    assert 0 < too_long < len(lengths)
    with pytest.raises(ValueError, match="over max_seq_len"):
        run_sft(SFTConfig(model="tiny", out=str(tmp_path / "strict"), epochs=1, batch_size=8, demos=demo,
                          max_seq_len=limit))
    out = run_sft(SFTConfig(model="tiny", out=str(tmp_path / "dropped"), epochs=1, batch_size=8, demos=demo,
                            max_seq_len=limit, drop_long=True))
    summary = json.loads((out / "demos_summary.json").read_text())
    assert summary["dropped_too_long"] == too_long
    assert summary["episodes"] == len(lengths) - too_long
    rows = list(csv.DictReader(open(out / "sft_metrics.csv")))
    assert sum(int(r["tokens"]) for r in rows) > 0
