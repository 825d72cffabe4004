"""``ragen-train sft``: supervised warm start on demonstration episodes.

Demonstrations (:mod:`ragen_train.demos`) are played through the text protocol and tokenised with
the rollout's own :func:`~ragen_train.rollout.append_turn` into the same layout and loss mask as an RL
episode (:func:`tokenize_chat`), so SFT trains exactly the tokens the policy later generates: every
assistant reply (thought, answer and its end-of-turn token), never the prompts or the
environment's turns.

    ragen-train sft --model tiny --env bandit --mode format --episodes 512 --epochs 2 --lr 2e-3 --out runs/sft/bandit-format

writes a ``transformers`` checkpoint (model + tokenizer) to ``--out`` plus ``sft_config.json`` (the
resolved settings), ``sft_metrics.csv`` (loss per optimizer step) and ``demos_summary.json``.

One model can learn several games at once (``--env simple_sokoban,frozenlake,bandit --episodes
32000,8000,1000``). Demonstrations are played on the fly, batch by batch (each batch holds one game),
so a run streams many fresh levels instead of holding them all; every ``--checkpoint-every`` steps the
run saves its state under ``--out/resume``, and the same command run again continues from there.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

from ragen_envs.config_dicts import config_from_dict, require_ints
from ragen_envs.cli_flags import GivenOnce
from ragen_envs.config_docs import config_help, field_docs, game_config_help
from ragen_envs.help_format import HelpFormatter, examples, field_help
from ragen_envs.overrides import parse_flag, parse_game_flag
from ragen_eval.devices import torch_device
from ragen_eval.embedded_model import resolve_model_path
from ragen_eval.jsonl_store import read_jsonl, rewrite_jsonl
from ragen_train.demos import DEMO_MODES, THOUGHT_STYLES, Demo, DemoConfig, level_seeds, play_demo
from ragen_train.loss import aggregate, token_logprobs
from ragen_train.policy import load_tokenizer
from ragen_train.rollout import append_turn, encode_text, env_turn_text, render_chat, start_trajectory
from ragen_train.tiny import build_tiny_checkpoint


@dataclass
class SFTConfig:
    """Settings of one SFT run; defaults are sized for the tiny models on a CPU."""

    model: str = "tiny"
    """A transformers causal-LM directory, ``default`` (the embedded model) or ``tiny`` (built by
    :func:`ragen_train.tiny.build_tiny_checkpoint`)."""
    out: str = "runs/sft/run"
    """Output directory: the fine-tuned checkpoint and its logs."""
    demos: list[DemoConfig] = field(default_factory=lambda: [DemoConfig()])
    """Demonstration sets to play (game, oracle/format player, count, seed, protocol), one per game;
    a single :class:`DemoConfig` is taken as a one-element list."""
    epochs: int = 2
    """Passes over the demonstrations."""
    batch_size: int = 8
    """Episodes per optimizer step."""
    lr: float = 1e-3
    """AdamW learning rate; 1e-3 suits the randomly initialised tiny models (real models: ~1e-5)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip, as in RL updates."""
    warmup_steps: int = 10
    """Linear learning-rate warm-up, then cosine decay to 10% of ``lr``."""
    max_seq_len: int = 4096
    """Episodes whose tokens exceed this are an error (raise it, or shorten the protocol), unless
    ``drop_long`` is set."""
    drop_long: bool = False
    """Skip demonstrations longer than ``max_seq_len`` instead of stopping; each is recorded in
    ``demo_records.jsonl`` as ``"dropped": "too_long"`` and counted in ``demos_summary.json``."""
    seed: int = 0
    """Seeds the tiny model's init and the order of examples."""
    tiny_hidden_size: int = 128
    """Hidden size when ``model`` is ``tiny``."""
    tiny_num_layers: int = 2
    """Layers when ``model`` is ``tiny``."""
    share_prefix: bool = True
    """Run the prompt prefix that a batch's episodes share once, not once per episode, when it is at least
    as long as the rest of an episode on average (same loss and gradients; faster when prompts are long and
    alike and replies short)."""
    checkpoint_every: int = 200
    """Save the resumable state under ``out/resume`` every this many optimizer steps."""
    log_every: int = 50
    """Print progress (step, loss, episodes per second, time left) every this many steps."""

    def __post_init__(self) -> None:
        if isinstance(self.demos, (DemoConfig, dict)):
            self.demos = [self.demos]
        self.demos = [config_from_dict(DemoConfig, d) if isinstance(d, dict) else d for d in self.demos]
        if not self.demos or not all(isinstance(d, DemoConfig) for d in self.demos):
            raise ValueError("SFTConfig.demos must be one or more DemoConfig")
        for demos in self.demos:  # the chat template gets text; a picture once failed inside Jinja
            if demos.observation != "text":
                raise ValueError(f"{demos.env!r} shows the model {demos.observation} observations; SFT trains on "
                                 "text chats (protocol observation=text)")
        require_ints(self, ("epochs", "batch_size", "max_seq_len", "tiny_hidden_size", "tiny_num_layers",
                            "checkpoint_every", "log_every"))
        # ranges checked as "inside", so nan and inf are refused before anything is written
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < math.inf):
            raise ValueError(f"SFTConfig.lr must be a finite number > 0, got {self.lr!r}")
        if not (isinstance(self.weight_decay, (int, float)) and 0 <= self.weight_decay < math.inf):
            raise ValueError(f"SFTConfig.weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if not (self.warmup_steps >= 0 and 0 < self.grad_clip < math.inf):
            raise ValueError("SFTConfig.warmup_steps must be >= 0 and grad_clip a finite number > 0")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as written to ``sft_config.json``."""
        return {**asdict(self), "demos": [d.to_dict() for d in self.demos]}


@dataclass
class Example:
    """One tokenised demonstration: ids and the 0/1 loss mask (1 on the assistant's tokens)."""

    input_ids: list[int]
    loss_mask: list[int]


def tokenize_chat(tokenizer: Any, messages: Sequence[dict[str, str]],
                  stop_ids: Sequence[int] | None = None, context_turns: int = 0) -> tuple[list[int], list[int]]:
    """Token ids of a finished chat and its loss mask, laid out exactly as a rollout lays out an episode.

    Every turn goes through the rollout's own :func:`~ragen_train.rollout.append_turn`: the first
    prompt with its generation header (mask 0), then per assistant reply its tokens plus the stop
    token that closes it (mask 1: what the model samples, stop included), then the environment's
    text up to the next generation header (mask 0). ``stop_ids`` are the ids that may end a reply
    (default: the tokenizer's EOS); the one the template closes replies with is used. A reply is
    taken as finished: a rollout reply cut off by the token limit has no stop token, so for it the
    two layouts differ in that token's mask (and, on the last turn, its presence). The first
    ``context_turns`` replies (a demonstration's detour) keep their tokens with mask 0: history only.
    """
    chat = list(messages)
    firsts = [k for k, m in enumerate(chat) if m.get("role") == "assistant"]
    if not firsts:
        raise ValueError("the chat has no assistant reply to train on")
    if stop_ids is None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no EOS token; pass stop_ids")
        stop_ids = [int(tokenizer.eos_token_id)]
    traj = start_trajectory(tokenizer, chat[:firsts[0]])
    for n, k in enumerate(firsts):
        before = chat[:k]
        final = n + 1 == len(firsts)
        if not final:
            after = env_turn_text(tokenizer, before, chat[:firsts[n + 1]])
        else:  # the last reply: what the template closes it with
            head = render_chat(tokenizer, before, add_generation_prompt=True) + chat[k]["content"]
            full = render_chat(tokenizer, chat[:k + 1], add_generation_prompt=False)
            if not full.startswith(head):
                raise ValueError("the chat template does not render the last reply as an extension of its prompt")
            after = full[len(head):]
        start = len(traj.input_ids)
        append_turn(traj, tokenizer, encode_text(tokenizer, chat[k]["content"]), after, turn=n, reward=0.0,
                    stop_ids=stop_ids, add_stop=True, final=final)
        if n < context_turns:
            traj.loss_mask[start:] = [0] * (len(traj.loss_mask) - start)
    return traj.input_ids, traj.loss_mask


def tokenize_demos(demos: Sequence[Demo], tokenizer: Any, max_seq_len: int,
                   drop_long: bool = False) -> list[Example | None]:
    """Tokenise every demo's chat with :func:`tokenize_chat`; one over ``max_seq_len`` is an error,
    or with ``drop_long`` a None in its place."""
    examples: list[Example | None] = []
    for demo in demos:
        ids, mask = tokenize_chat(tokenizer, demo.messages, context_turns=demo.context_turns)
        if len(ids) <= max_seq_len:
            examples.append(Example(ids, mask))
        elif drop_long:
            examples.append(None)
        else:
            raise ValueError(f"a demonstration has {len(ids)} tokens, over max_seq_len={max_seq_len}; "
                             "raise max_seq_len, shorten the protocol or pass --drop-long")
    return examples


def learning_rate(step: int, total: int, config: SFTConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``0.1 * lr`` at ``total``."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(total - config.warmup_steps, 1)
    return config.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


def batch_schedule(config: SFTConfig, epoch: int) -> list[tuple[int, list[int]]]:
    """The batches of one epoch as ``(demo set index, episode indices)``, in training order.

    Each demo set's episodes are shuffled and cut into batches of ``batch_size`` (so a batch holds
    one game and its prompts share a long prefix), then the batches of all sets are interleaved in a
    seeded random order. A pure function of the config and the epoch, so a resumed run replays it.
    """
    rng = np.random.default_rng([config.seed, epoch])
    batches = []
    for k, demos in enumerate(config.demos):
        order = rng.permutation(demos.num_episodes)
        batches.extend((k, [int(i) for i in order[s: s + config.batch_size]])
                       for s in range(0, demos.num_episodes, config.batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def shared_prefix_length(examples: Sequence[Example]) -> int:
    """Tokens at the start that every example has in common and that no loss touches.

    Capped one token before the first masked token, so the logits of every trained token come
    from the part each example runs on its own.
    """
    first = examples[0].input_ids
    length = min(len(e.input_ids) for e in examples)
    for e in examples:
        length = min(length, e.loss_mask.index(1) - 1 if 1 in e.loss_mask else len(e.loss_mask))
        same = next((t for t in range(length) if e.input_ids[t] != first[t]), length)
        length = min(length, same)
    return max(length, 0)


def prefix_to_share(examples: Sequence[Example], share_prefix: bool = True) -> int:
    """How many leading tokens :func:`batch_nll` runs once for the whole batch; 0 for none.

    The common prefix (:func:`shared_prefix_length`) is shared only when it is at least as long as
    the mean remainder: a remainder that runs on a cache needs an attention mask, and a long masked
    pass costs more than running its example whole with the plain causal kernel.
    """
    if not share_prefix or len(examples) < 2:
        return 0
    prefix = shared_prefix_length(examples)
    mean_rest = sum(len(e.input_ids) for e in examples) / len(examples) - prefix
    return prefix if prefix >= max(2, mean_rest) else 0


def batch_nll(model: Any, examples: Sequence[Example], share_prefix: bool = True) -> tuple[torch.Tensor, int]:
    """Token-mean negative log-likelihood of a batch's trained tokens, and their number.

    Each example runs on its own, unpadded, so no work goes to padding; with ``share_prefix`` the
    prefix of :func:`prefix_to_share` runs once and every example's remainder runs on its key/value
    cache, which carries the gradients back into it. Either way the loss and gradients are those of
    one padded forward of the batch (up to float rounding). Scored by the trainer's own
    :func:`~ragen_train.loss.token_logprobs`, so SFT and RL score a token the same way.
    """
    from transformers import DynamicCache

    device = next(model.parameters()).device
    prefix = prefix_to_share(examples, share_prefix)
    tokens = sum(sum(e.loss_mask) for e in examples)
    head = None
    if prefix:
        cache = model(input_ids=torch.tensor([examples[0].input_ids[:prefix]], device=device), use_cache=True)
        head = [(layer.keys, layer.values) for layer in cache.past_key_values.layers]
    loss = torch.zeros((), device=device)
    for e in examples:
        ids = torch.tensor([e.input_ids], device=device)
        mask = torch.tensor([e.loss_mask], dtype=torch.float32, device=device)
        if head is None:
            logits = model(input_ids=ids, use_cache=False).logits
        else:  # a fresh cache each time: a forward appends the example's own keys to the one it is given
            logits = model(input_ids=ids[:, prefix:], past_key_values=DynamicCache(head), use_cache=True).logits
        loss = loss + aggregate(-token_logprobs(logits, ids, start=prefix), mask, "token-mean", denominator=tokens)
    return loss, tokens


def _demo_seeds(out: Path, config: SFTConfig, *, fresh: bool) -> list[list[int]]:
    """Each demonstration set's level seeds (:func:`~ragen_train.demos.level_seeds`), kept in ``out`` so that a
    resumed run (whose settings were checked equal to the saved ones) reads them instead of generating every
    level again to find its split."""
    path = out / "level_seeds.json"
    if not fresh and path.is_file():
        seeds = json.loads(path.read_text())
        if [len(s) for s in seeds] == [d.num_episodes for d in config.demos]:
            return seeds
    seeds = [level_seeds(d) for d in config.demos]
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(seeds) + "\n")
    partial.replace(path)
    return seeds


def run_sft(config: SFTConfig, max_steps: int | None = None, device: str = "cpu") -> Path:
    """Play the demos, fine-tune, save the checkpoint and logs to ``config.out``; returns that path.

    Resumes from ``out/resume`` when an earlier run of the same config left one there. With
    ``max_steps``, stops after that many steps of this call, saves the resumable state and returns
    (a run in chunks; the final checkpoint is written by the call that reaches the last step).
    ``device`` is where the model trains (demonstrations are played on the CPU); like ``max_steps`` it
    belongs to the call, not the run, so a run started on one device may be resumed on another.
    """
    from transformers import AutoModelForCausalLM

    dev = torch_device(device)  # a missing device fails here, before anything is written
    out = Path(config.out)
    settings = config.to_dict()
    saved = out / "sft_config.json"
    resume = _recover_resume(out / "resume")
    progress = json.loads((resume / "progress.json").read_text()) if (resume / "progress.json").is_file() else None
    if progress is not None and json.loads(saved.read_text()) != json.loads(json.dumps(settings)):
        raise ValueError(f"{out} holds a run with other settings (see {saved}); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(settings, indent=2) + "\n")
    model_path = _resolve_model(config, out) if progress is None else resume

    tokenizer = load_tokenizer(model_path)
    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32).to(dev)
    seeds = _demo_seeds(out, config, fresh=progress is None)
    schedules = [batch_schedule(config, e) for e in range(config.epochs)]
    total = sum(len(s) for s in schedules)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    step = 0
    if progress is None:  # a fresh run: logs of an unfinished earlier one in this directory go
        (out / "sft_metrics.csv").unlink(missing_ok=True)
        (out / "demo_records.jsonl").unlink(missing_ok=True)
    else:
        # read onto the CPU: load_state_dict moves each state to its parameter's device
        optimizer.load_state_dict(torch.load(resume / "optimizer.pt", weights_only=True, map_location="cpu"))
        step = int(progress["step"])
        print(f"resuming {out} at step {step}/{total}", flush=True)
    _truncate_records(out / "demo_records.jsonl", step)
    _truncate_metrics(out / "sft_metrics.csv", step)
    model.train()
    began_run, episodes_run, last_loss = time.perf_counter(), 0, float("nan")
    with open(out / "sft_metrics.csv", "a", newline="") as handle, \
            open(out / "demo_records.jsonl", "a") as record_file:
        writer = csv.writer(handle)
        if step == 0:
            writer.writerow(["step", "epoch", "game", "loss", "lr", "grad_norm", "tokens", "seconds"])
        stop = total if max_steps is None else min(total, step + max_steps)
        for position in range(step, stop):
            epoch, (k, indices) = _locate(schedules, position)
            began = time.perf_counter()
            demos = [(i, play_demo(config.demos[k], i, seeds[k][i])) for i in indices]
            examples = iter(tokenize_demos([d for _, d in demos if d is not None], tokenizer, config.max_seq_len,
                                           config.drop_long))
            kept: list[tuple[Demo, Example]] = []
            for i, d in demos:
                example = None if d is None else next(examples)
                line: dict[str, Any] = {"step": position, "set": k, "index": i}
                if d is None:
                    line["dropped"] = True
                elif example is None:
                    line["dropped"] = "too_long"
                else:
                    line.update(d.record)
                    kept.append((d, example))
                record_file.write(json.dumps(_summary_record(line)) + "\n")
            lr = learning_rate(position, total, config)
            if kept:
                loss, tokens = batch_nll(model, [example for _, example in kept], config.share_prefix)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip).item()
                optimizer.step()
                last_loss = loss.item()
                writer.writerow([position, epoch, config.demos[k].env, f"{loss.item():.6f}", f"{lr:.3e}",
                                 f"{grad_norm:.4f}", tokens, f"{time.perf_counter() - began:.3f}"])
                handle.flush()  # a long run can be watched (and a crash leaves its curve)
            episodes_run += len(indices)
            step = position + 1
            if step % config.log_every == 0 or step == total:
                rate = episodes_run / (time.perf_counter() - began_run)
                left = (total - step) * config.batch_size / max(rate, 1e-9)
                print(f"step {step}/{total} epoch {epoch} {config.demos[k].env} loss {last_loss:.4f} "
                      f"{rate:.1f} episodes/s, ~{left / 60:.0f} min left", flush=True)
            if step % config.checkpoint_every == 0 and step < stop:
                record_file.flush()
                _save_resume(model, tokenizer, optimizer, step, resume)
    if step < total:
        _save_resume(model, tokenizer, optimizer, step, resume)
        print(f"stopped at step {step}/{total}; run the same command again to continue", flush=True)
        return out
    summary = _demo_summary(out / "demo_records.jsonl")
    (out / "demos_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    _save_resume(model, tokenizer, optimizer, step, resume)
    print(f"SFT checkpoint written to {out}", flush=True)
    return out


def _locate(schedules: Sequence[Sequence[tuple[int, list[int]]]], position: int) -> tuple[int, tuple[int, list[int]]]:
    """The epoch and batch at a global step."""
    for epoch, schedule in enumerate(schedules):
        if position < len(schedule):
            return epoch, schedule[position]
        position -= len(schedule)
    raise IndexError(position)


def _save_resume(model: Any, tokenizer: Any, optimizer: torch.optim.Optimizer, step: int, resume: Path) -> None:
    """Write the weights, optimizer state and step into a new folder, then swap it in for ``resume``: a kill at any
    point leaves the last whole save to resume from (:func:`_recover_resume`), never a torn one or none."""
    partial, previous = resume.with_name(resume.name + ".partial"), resume.with_name(resume.name + ".previous")
    for stale in (partial, previous):
        shutil.rmtree(stale, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    torch.save(optimizer.state_dict(), partial / "optimizer.pt")
    (partial / "progress.json").write_text(json.dumps({"step": step}) + "\n")
    had_one = resume.exists()
    if had_one:
        resume.rename(previous)
    partial.rename(resume)
    if had_one:
        shutil.rmtree(previous)  # not before the new save is in place


def _recover_resume(resume: Path) -> Path:
    """``resume``, put back from the save before it when a kill fell between :func:`_save_resume`'s two renames."""
    previous = resume.with_name(resume.name + ".previous")
    if not resume.exists() and (previous / "progress.json").is_file():
        previous.rename(resume)
    return resume


def _summary_record(line: dict[str, Any]) -> dict[str, Any]:
    """The fields of an episode record that the demo summary needs (the full record holds the transcript)."""
    keep = ("step", "set", "index", "dropped", "success", "total_reward", "num_turns", "num_actions",
            "detour_turns")
    return {k: line[k] for k in keep if k in line}


def _truncate_records(path: Path, step: int) -> None:
    """Drop demo records of steps at or after ``step`` (played after the last resumable save), and a line torn by a
    kill."""
    if path.is_file():
        rewrite_jsonl(path, [x for x in read_jsonl(path) if x["step"] < step])


def _truncate_metrics(path: Path, step: int) -> None:
    """Drop metric rows of steps at or after ``step`` (written after the last resumable save)."""
    if not path.is_file():
        return
    rows = path.read_text().splitlines(keepends=True)
    path.write_text(rows[0] + "".join(r for r in rows[1:] if int(r.split(",", 1)[0]) < step) if rows else "")


def checkpoint_dir(model: str) -> Path | None:
    """The checkpoint directory ``model`` names (``default``: the embedded model), or None for ``tiny``; a ValueError
    when it is none of these."""
    if model == "tiny":
        return None
    path = Path(resolve_model_path(model))
    if not (path / "config.json").is_file():
        raise ValueError(f"--model {model!r} is neither 'tiny', 'default' nor a transformers checkpoint directory")
    return path


def _resolve_model(config: SFTConfig, out: Path) -> Path:
    """The checkpoint to start from: ``config.model``, or a fresh tiny one built under ``out/init``."""
    path = checkpoint_dir(config.model)
    if path is not None:
        return path
    init = out / "init"
    shutil.rmtree(init, ignore_errors=True)
    # heads of size 64 (vLLM's CPU attention needs >= 64) and a 2x MLP, the default tiny shape's ratios
    return build_tiny_checkpoint(init, seed=config.seed, hidden_size=config.tiny_hidden_size,
                                 num_layers=config.tiny_num_layers, num_heads=max(1, config.tiny_hidden_size // 64),
                                 intermediate_size=2 * config.tiny_hidden_size)


def _demo_summary(path: Path) -> dict[str, Any]:
    """Counts and means over a run's demonstrations, each once: a later epoch replays the same demonstration (the
    same set, index and level seed), so only its first record counts. ``episodes`` are those trained on."""
    first: dict[tuple[int, int], dict[str, Any]] = {}
    for record in read_jsonl(path):
        first.setdefault((record["set"], record["index"]), record)
    kept = [r for r in first.values() if not r.get("dropped")]
    if not kept:
        raise ValueError("no demonstrations were kept; with successful_only=True, play more episodes")
    return {
        "episodes": len(kept),
        "dropped_too_long": sum(r.get("dropped") == "too_long" for r in first.values()),
        "success_rate": float(np.mean([r["success"] for r in kept])),
        "mean_reward": float(np.mean([r["total_reward"] for r in kept])),
        "mean_turns": float(np.mean([r["num_turns"] for r in kept])),
        "mean_actions": float(np.mean([r["num_actions"] for r in kept])),
    }


#: Worked examples at the end of ``ragen-train sft --help`` (a test parses each and runs the config ones).
EXAMPLES = (
    ("teach the tiny model the answer format on Bandit",
     "ragen-train sft --model tiny --env bandit --mode format --episodes 512 --epochs 2 --lr 2e-3 "
     "--out runs/sft/bandit-format"),
    ("one model for three games, with a demonstration count per game (resolved config only)",
     "ragen-train sft --env simple_sokoban,frozenlake,bandit --episodes 32000,8000,1000 --out runs/sft/multi "
     "--print-config"),
    ("a mixture with one game's config changed: a lake without slipping (resolved config only)",
     "ragen-train sft --env simple_sokoban,frozenlake --episodes 64,64 --env-config frozenlake:is_slippery=false "
     "--out runs/sft/mixed --print-config"),
    ("every config field with its default, and the game config of Sokoban",
     "ragen-train sft --help-config --env sokoban"),
)


def build_parser() -> argparse.ArgumentParser:
    """The ``ragen-train sft`` command line."""
    p = argparse.ArgumentParser(
        prog="ragen-train sft", formatter_class=HelpFormatter, epilog=examples(EXAMPLES), allow_abbrev=False,
        description="Supervised warm start on demonstration episodes, played through the text protocol and trained "
                    "on exactly the tokens the policy later generates. Writes a transformers checkpoint to --out, "
                    "with sft_config.json, sft_metrics.csv and demos_summary.json; the same command again resumes.")
    d, dd = SFTConfig(), DemoConfig()
    docs = field_docs(SFTConfig)
    p.add_argument("--model", default=d.model,
                   help="checkpoint directory, 'default' (the embedded model) or 'tiny' (a fresh tiny model)")
    p.add_argument("--out", default=None, help="output directory for the fine-tuned checkpoint (required)")
    p.add_argument("--env", default=dd.env, action=GivenOnce,
                   help="game preset, or several comma-separated for one model of all (bandit,frozenlake,...)")
    p.add_argument("--mode", default=dd.mode, choices=DEMO_MODES, help="oracle play or format-only random play")
    p.add_argument("--episodes", default=str(dd.num_episodes), action=GivenOnce,
                   help="demonstration episodes to play: one count for every game, or one per --env game")
    p.add_argument("--thought", default=dd.thought, choices=THOUGHT_STYLES,
                   help="inside <think>: describe (where things are), templated (short true reasoning: where things "
                        "are, how the goal lies, what the moves do), grounded (templated without what the moves "
                        "do), or none")
    p.add_argument("--demo-seed", default=str(dd.seed), action=GivenOnce,
                   help="seed of the demonstrations' levels: one for every game, or one per --env game (games that "
                        "share a level generator, such as frozenlake and frozenlake_det, play the same levels under "
                        "one seed)")
    p.add_argument("--detour-turns", default=str(dd.detour_turns), action=GivenOnce,
                   help="Sokoban only: open each demonstration with up to N turns of a walk over free floor and "
                        "back, kept as history but out of the loss; one N for every game, or one per --env game")
    p.add_argument("--answer-space", action="store_true",
                   help="write every answer after a space (<answer> Tiger</answer>), so a name is spelled in the "
                        "tokens it has after a space in the prompt and the thought; every game of the run")
    p.add_argument("--successful-only", action="store_true", help="keep only demonstrations that succeed")
    p.add_argument("--protocol", action="append", default=[], metavar="KEY=VALUE",
                   help="text-protocol field, e.g. max_turns=3 (YAML values, dotted keys: the grammar of "
                        "ragen-eval --protocol and ragen-train protocol.KEY=VALUE), or a mapping '{\"max_turns\": 3}'")
    p.add_argument("--env-config", action="append", default=[], metavar="[ENV:]KEY=VALUE",
                   help="game-config field, e.g. height=6, or a mapping '{\"height\": 6}'; with several --env "
                        "games, name the one it sets: frozenlake:is_slippery=false")
    p.add_argument("--epochs", type=int, default=d.epochs, help=field_help(docs, "epochs"))
    p.add_argument("--batch-size", type=int, default=d.batch_size, help=field_help(docs, "batch_size"))
    p.add_argument("--lr", type=float, default=d.lr, help=field_help(docs, "lr"))
    p.add_argument("--weight-decay", type=float, default=d.weight_decay, help=field_help(docs, "weight_decay"))
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps, help=field_help(docs, "warmup_steps"))
    p.add_argument("--max-seq-len", type=int, default=d.max_seq_len, help=field_help(docs, "max_seq_len"))
    p.add_argument("--drop-long", action="store_true", help=field_help(docs, "drop_long"))
    p.add_argument("--seed", type=int, default=d.seed, help="tiny-model init and example order")
    p.add_argument("--tiny-hidden-size", type=int, default=d.tiny_hidden_size,
                   help=field_help(docs, "tiny_hidden_size"))
    p.add_argument("--tiny-num-layers", type=int, default=d.tiny_num_layers, help=field_help(docs, "tiny_num_layers"))
    p.add_argument("--no-share-prefix", dest="share_prefix", action="store_false",
                   help="run every episode whole, never sharing a prompt prefix (same loss)")
    p.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every,
                   help="save a resumable state every N steps; the same command again resumes")
    p.add_argument("--log-every", type=int, default=d.log_every, help="print progress every N steps")
    p.add_argument("--max-steps", type=int, default=None,
                   help="stop (resumably) after this many steps of this invocation; not part of the run's config")
    p.add_argument("--device", default="cpu",
                   help="torch device the model trains on (cpu, cuda, cuda:1, ...); not part of the run's config, so "
                        "a run may be resumed on another device")
    p.add_argument("--help-config", action="store_true",
                   help="list every field of the run's config (SFTConfig, DemoConfig, and the game config of "
                        "each --env) with its default and help, and exit")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved config (as sft_config.json stores it) and exit")
    return p


def config_from_args(argv: Sequence[str] | None = None) -> SFTConfig:
    """Parse ``ragen-train sft`` arguments into an :class:`SFTConfig`; bad input exits 2 (:func:`bad_input`)."""
    parser = build_parser()
    a = parser.parse_args(argv)
    if a.out is None:
        bad_input(parser, "the following arguments are required: --out")
    envs = a.env.split(",")
    if len(set(envs)) != len(envs) or not all(envs):
        bad_input(parser, f"--env {a.env!r} names a game twice or has an empty name")
    counts = per_game_counts(parser, "--episodes", a.episodes, len(envs), 1, "one positive count")
    detours = per_game_counts(parser, "--detour-turns", a.detour_turns, len(envs), 0, "one count (0 or more)")
    demo_seeds = per_game_counts(parser, "--demo-seed", a.demo_seed, len(envs), 0, "one seed (0 or more)")
    try:
        protocol, env_configs = parse_flag(a.protocol, "--protocol"), demo_env_configs(a.env_config, envs)
        # each game's demo set gets its own seed stream, so adding a game leaves the others' levels alone
        demos = [DemoConfig(env=env, mode=a.mode, num_episodes=n, seed=seed, thought=a.thought,
                            successful_only=a.successful_only, protocol=protocol, env_config=env_config,
                            detour_turns=detour, answer_space=a.answer_space)
                 for env, n, seed, env_config, detour in zip(envs, counts, demo_seeds, env_configs, detours)]
        return SFTConfig(model=a.model, out=a.out, demos=demos, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr,
                         weight_decay=a.weight_decay, warmup_steps=a.warmup_steps, max_seq_len=a.max_seq_len,
                         drop_long=a.drop_long, seed=a.seed, tiny_hidden_size=a.tiny_hidden_size,
                         tiny_num_layers=a.tiny_num_layers,
                         share_prefix=a.share_prefix, checkpoint_every=a.checkpoint_every, log_every=a.log_every)
    except (ValueError, TypeError) as error:
        bad_input(parser, str(error))


def per_game_counts(parser: argparse.ArgumentParser, flag: str, text: str, games: int, minimum: int,
                    what: str) -> list[int]:
    """``flag``'s counts for ``games`` ``--env`` games: one count that every game takes, or a comma-separated count
    per game, each at least ``minimum``; anything else exits 2 saying the flag must be ``what``, or one per game."""
    items = text.split(",")
    if len(items) not in (1, games) or not all(i.strip().isdigit() and int(i) >= minimum for i in items):
        bad_input(parser, f"{flag} {text!r} must be {what}, or one per --env game ({games})")
    return [int(i) for i in items] * (games if len(items) == 1 else 1)


def demo_env_configs(items: Sequence[str], envs: Sequence[str]) -> list[dict[str, Any]]:
    """Each ``--env`` game's config overrides from ``--env-config`` items, in ``envs``' order: ``KEY=VALUE`` (or a
    mapping) in a one-game run; ``ENV:KEY=VALUE`` (or ``ENV:{...}``) for one game, the only form in a mixture
    (the grammar of ``ragen-eval --env-config``). Raises ValueError for a plain item in a mixture or an ``ENV``
    that is not one of ``envs``."""
    named = []
    for item in items:
        if item.lstrip().startswith("{") or ":" not in item.partition("=")[0]:  # a plain item, for the one game
            if len(envs) > 1:
                raise ValueError(f"--env-config {item!r} overrides one game's config; in a mixture name the game: "
                                 f"--env-config ENV:KEY=VALUE, ENV one of {list(envs)}")
            item = f"{envs[0]}:{item}"
        named.append(item)
    per_env = parse_game_flag(named)
    unknown = sorted(set(per_env) - set(envs))
    if unknown:
        raise ValueError(f"--env-config names {unknown}, not among the --env games {list(envs)}")
    return [per_env.get(env, {}) for env in envs]


def bad_input(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Exit 2 with one line, ``ragen-train sft: error: MESSAGE``: how ``ragen-eval`` and ``ragen-train`` report
    a bad value (argparse's ``error`` would print the whole usage block first)."""
    parser.exit(2, f"{parser.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ragen-train sft`` (called by :mod:`ragen_train.cli`).

    Bad input exits 2 with one line on stderr (:func:`bad_input`) before ``--out`` is created.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.help_config:
        print(config_help(SFTConfig) + "\n" + config_help(DemoConfig, "demos[]."))
        envs = args.env.split(",")
        try:
            games = [game_config_help(env, overrides, "demos[].env_config.")
                     for env, overrides in zip(envs, demo_env_configs(args.env_config, envs))]
        except (ValueError, TypeError) as error:
            bad_input(parser, str(error))
        flag = "--env-config KEY=VALUE" if len(envs) == 1 else "--env-config {env}:KEY=VALUE"
        for env, text in zip(envs, games):
            print(f"game config of {env} ({flag.format(env=env)}), with the preset's values:\n{text}")
        return 0
    config = config_from_args(argv)
    if args.print_config:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    if args.max_steps is not None and args.max_steps < 1:
        bad_input(parser, f"--max-steps must be a positive int, got {args.max_steps}")
    try:
        check_runnable(config)
        run_sft(config, args.max_steps, args.device)
    except (ValueError, OSError) as error:  # OSError: permissions, a full disk (as ragen-eval reports them)
        bad_input(parser, str(error))
    return 0


def check_runnable(config: SFTConfig) -> None:
    """Raise ValueError for a run that cannot start: ``out`` at or under a file, or a ``model`` that is neither
    ``tiny`` nor a checkpoint (:func:`run_sft` makes ``out`` before it loads the model, so this comes first)."""
    for place in (Path(config.out), *Path(config.out).parents):
        if place.exists() and not place.is_dir():
            raise ValueError(f"--out {config.out}: {place} is a file, not a directory")
    checkpoint_dir(config.model)
