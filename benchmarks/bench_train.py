"""Training speed of ragen-train on the CPU, and TRL's GRPOTrainer on the same tiny model and batch.

Measures, for the tiny model (``ragen_train.tiny``, hidden 128, 2 layers) on Bandit:

- ragen-train: rollout tokens/s (sampled tokens / rollout time) and update tokens/s (non-pad
  tokens through forward + backward / update time), and the time of a whole training step;
- TRL ``GRPOTrainer`` (run with ``--trl-python``, a Python that has ``trl``): the time of one
  training step on the same batch shape (P prompts x N completions, one optimizer step, same
  max new tokens, same learning rate, no KL, no critic), timed by a trainer callback.

Both sides play single-turn Bandit (TRL's GRPOTrainer is single-turn), use GRPO advantages and no
filter, and the first step of each is a warm-up left out of the medians. Run:

    python benchmarks/bench_train.py --trl-python /tmp/venv-trl/bin/python --steps 4

(``python -m venv --system-site-packages /tmp/venv-trl && /tmp/venv-trl/bin/pip install trl``
gives that Python without touching the main environment.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "bandit"


def bench_ours(model_dir: Path, out_dir: Path, groups: int, size: int, new_tokens: int, steps: int) -> dict:
    """Run ``steps`` ragen-train steps; return per-step timings and throughputs (warm-up dropped)."""
    from ragen_train.config import load_config
    from ragen_train.run_log import read_metrics
    from ragen_train.trainer import train

    config = load_config(None, [
        f"model={model_dir}", f"output_dir={out_dir}", "run_name=ours", f"env={ENV}", f"total_steps={steps}",
        f"env_groups={groups}", f"group_size={size}", f"max_new_tokens={new_tokens}", "preset=starpo-s",
        "rollout_filter_ratio=1.0", "advantage_estimator=grpo", "critic=none", "kl_coef=0", "entropy_coeff=0",
        "actor_lr=1e-4", f"ppo_mini_batch_size={groups * size}", f"micro_batch_size={min(16, groups * size)}",
        f"rollout_batch_size={groups * size}", "save_every=0", "plot_every=0", "resume=false"])
    train(config)
    rows = read_metrics(out_dir / "ours" / "metrics.jsonl")[1:]
    steps = [r["time/rollout_s"] + r["time/update_s"] for r in rows]
    return {
        "step_s": statistics.median(steps),
        "step_min_s": min(steps),
        "step_cpu_s": statistics.median(r["time/step_cpu_s"] for r in rows),
        "rollout_s": statistics.median(r["time/rollout_s"] for r in rows),
        "update_s": statistics.median(r["time/update_s"] for r in rows),
        "rollout_tokens_per_s": statistics.median(r["time/rollout_tokens_per_s"] for r in rows),
        "update_tokens_per_s": statistics.median(r["time/update_tokens_per_s"] for r in rows),
        "steps_timed": len(rows),
    }


def bench_trl(model_dir: Path, out_dir: Path, groups: int, size: int, new_tokens: int, steps: int) -> dict:
    """One TRL GRPOTrainer run of ``steps`` optimizer steps; median step time (runs inside the TRL Python)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from ragen_envs.text import TextEpisode

    seeds = list(range(groups * steps))
    data = Dataset.from_list([{"prompt": TextEpisode(ENV, s).messages, "seed": s} for s in seeds])

    def reward(completions, seed, **_):
        out = []
        for completion, s in zip(completions, seed):
            episode = TextEpisode(ENV, int(s))
            episode.step(completion[0]["content"] if isinstance(completion, list) else completion)
            out.append(episode.total_reward)
        return out

    stamps: list[tuple[float, float]] = []  # (wall, process CPU) at each step boundary

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append((time.perf_counter(), time.process_time()))

        def on_step_begin(self, args, state, control, **kwargs):
            if not stamps:
                stamps.append((time.perf_counter(), time.process_time()))

    micro = min(16, groups * size)
    args = GRPOConfig(
        output_dir=str(out_dir / "trl"), per_device_train_batch_size=micro,
        gradient_accumulation_steps=groups * size // micro, num_generations=size,
        max_completion_length=new_tokens, learning_rate=1e-4, beta=0.0, temperature=1.0, max_steps=steps,
        logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False, shuffle_dataset=False,
        disable_dropout=True, loss_type="dapo", seed=0)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                          processing_class=tokenizer, callbacks=[Stamp()])
    trainer.train()
    per_step = [b[0] - a[0] for a, b in zip(stamps, stamps[1:])][1:]
    cpu = [b[1] - a[1] for a, b in zip(stamps, stamps[1:])][1:]
    return {"step_s": statistics.median(per_step), "step_min_s": min(per_step),
            "step_cpu_s": statistics.median(cpu), "steps_timed": len(per_step)}


def main(argv: list[str] | None = None) -> int:
    """Time ragen-train, then TRL in a subprocess, and print both and their ratio."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=8, help="P prompts per step")
    p.add_argument("--size", type=int, default=8, help="N responses per prompt")
    p.add_argument("--new-tokens", type=int, default=40, help="max new tokens per response")
    p.add_argument("--steps", type=int, default=4, help="training steps per side (the first is a warm-up)")
    p.add_argument("--trl-python", default=None, help="a Python with trl installed; omit to skip TRL")
    p.add_argument("--only", choices=["ours", "trl"], default=None, help=argparse.SUPPRESS)
    p.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    a = p.parse_args(argv)
    shape = (a.groups, a.size, a.new_tokens, a.steps)

    if a.only == "trl":
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(bench_trl(Path(a.model_dir), Path(tmp), *shape)))
        return 0

    from ragen_train.tiny import build_tiny_checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_checkpoint(Path(tmp) / "tiny", seed=0)
        results = {"shape": {"groups": a.groups, "size": a.size, "new_tokens": a.new_tokens, "env": ENV},
                   "ours": bench_ours(model_dir, Path(tmp), *shape)}
        if a.trl_python:
            proc = subprocess.run([a.trl_python, __file__, "--only", "trl", "--model-dir", str(model_dir),
                                   "--groups", str(a.groups), "--size", str(a.size), "--new-tokens",
                                   str(a.new_tokens), "--steps", str(a.steps)], capture_output=True, text=True)
            if proc.returncode != 0:
                results["trl_error"] = proc.stderr[-2000:]
            else:
                results["trl"] = json.loads(proc.stdout.strip().splitlines()[-1])
    if a.json:
        print(json.dumps(results, indent=2))
        return 0
    ours = results["ours"]
    print(f"batch: {a.groups} prompts x {a.size} responses, <= {a.new_tokens} new tokens, {ENV}, tiny model, CPU")
    print(f"ragen-train  step median {ours['step_s']:.2f} s, min {ours['step_min_s']:.2f} s  (median rollout "
          f"{ours['rollout_s']:.2f} s, update {ours['update_s']:.2f} s)  rollout {ours['rollout_tokens_per_s']:.0f} "
          f"tok/s  update {ours['update_tokens_per_s']:.0f} tok/s  CPU {ours['step_cpu_s']:.2f} s/step")
    if "trl" in results:
        trl = results["trl"]
        print(f"TRL GRPO     step median {trl['step_s']:.2f} s, min {trl['step_min_s']:.2f} s  "
              f"CPU {trl['step_cpu_s']:.2f} s/step")
        print(f"ratio TRL / ragen-train: wall median {trl['step_s'] / ours['step_s']:.2f}x, "
              f"wall min {trl['step_min_s'] / ours['step_min_s']:.2f}x, CPU {trl['step_cpu_s'] / ours['step_cpu_s']:.2f}x")
    elif "trl_error" in results:
        print("TRL failed:\n" + results["trl_error"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
