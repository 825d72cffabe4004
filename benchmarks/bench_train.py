"""Training speed of ragen-train on the CPU against TRL's GRPOTrainer, in interleaved A/B pairs.

Both sides train the tiny model (``ragen_train.tiny``, hidden 128, 2 layers) on the same batch shape
(P prompts x N completions of single-turn Bandit, TRL's GRPOTrainer being single-turn), one
optimizer step per batch at the same learning rate, same max new tokens, GRPO advantages, no
filter, no critic, no KL. Each run is a fresh subprocess of this script on the same checkpoint with
the same torch thread count, timed from inside: ragen-train from its ``metrics.jsonl``, TRL by a
trainer callback. The first step of every run is a warm-up left out of its medians.

The machines are shared and noisy, so one invocation runs ``--pairs`` A/B pairs, alternating which
side goes first (ours-TRL, TRL-ours, ...) so that a drift in load does not always favour one side,
and reports the ratio TRL / ragen-train per pair (median step wall time and CPU time) with its
median and range over the pairs. Run:

    python benchmarks/bench_train.py --pairs 5 --steps 4 --json docs/benchmarks/train.json

``--trl-python`` names another Python that has ``trl`` (e.g. a venv made with
``python -m venv --system-site-packages /tmp/venv-trl && /tmp/venv-trl/bin/pip install trl``);
by default TRL runs in this interpreter.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = "bandit"
SIDES = ("ours", "trl")
LABELS = {"ours": "ragen-train", "trl": "TRL GRPO"}
#: Prints the versions that matter to the timings, as JSON, in the Python that runs a side.
VERSION_PROBE = ("import json, sys, torch, transformers{trl}; print(json.dumps({{'python': sys.version.split()[0], "
                 "'torch': torch.__version__, 'transformers': transformers.__version__{trl_version}}}))")


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
    """One TRL GRPOTrainer run of ``steps`` optimizer steps; median step time (runs in the TRL Python)."""
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


def versions(python: str, with_trl: bool) -> dict[str, str]:
    """Versions of Python, torch, transformers (and trl) in ``python``; RuntimeError if they do not import."""
    code = VERSION_PROBE.format(trl=", trl" if with_trl else "",
                                trl_version=", 'trl': trl.__version__" if with_trl else "")
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    except OSError as error:  # not a runnable file: the same clear message as a Python without trl
        raise RuntimeError(f"{python}: {error.strerror}") from error
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{python}: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def side_order(pair: int) -> tuple[str, str]:
    """The sides of pair ``pair`` (0-based) in run order: ours first in even pairs, TRL first in odd ones."""
    return SIDES if pair % 2 == 0 else SIDES[::-1]


def run_side(side: str, python: str, model_dir: Path, shape: argparse.Namespace) -> dict:
    """One side in a fresh subprocess of this script; its timings (RuntimeError with its stderr if it fails)."""
    command = [python, __file__, "--only", side, "--model-dir", str(model_dir), "--threads", str(shape.threads),
               "--groups", str(shape.groups), "--size", str(shape.size), "--new-tokens", str(shape.new_tokens),
               "--steps", str(shape.steps)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    # Libraries may print to stdout too; the result is the last line.
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_pair(pair: int, python: dict[str, str], model_dir: Path, shape: argparse.Namespace) -> dict:
    """Pair ``pair`` (0-based): both sides in alternating order, and the ratios TRL / ours."""
    record: dict = {"pair": pair + 1, "first": side_order(pair)[0], "load_average_before": os.getloadavg()[0]}
    for side in side_order(pair):
        record[side] = run_side(side, python[side], model_dir, shape)
    record["ratio_wall"] = record["trl"]["step_s"] / record["ours"]["step_s"]
    record["ratio_cpu"] = record["trl"]["step_cpu_s"] / record["ours"]["step_cpu_s"]
    return record


def spread(values: list[float]) -> dict[str, float]:
    """Median, smallest and largest of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(pairs: list[dict]) -> dict[str, dict[str, float]]:
    """Median and range over pairs of the per-pair ratios TRL / ours, wall and CPU."""
    return {key: spread([p[key] for p in pairs]) for key in ("ratio_wall", "ratio_cpu")}


def compact(value: object) -> object:
    """``value`` with every float rounded to 4 decimals, for a JSON file a reader can scan."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {key: compact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [compact(item) for item in value]
    return value


#: Columns of the pairs table; times are each run's median seconds per step.
TABLE_HEADER = "pair  first  ours wall  ours CPU  TRL wall  TRL CPU  TRL/ours wall  TRL/ours CPU  load"


def pair_row(record: dict) -> str:
    """One line of the pairs table."""
    ours, trl = record["ours"], record["trl"]
    return (f"{record['pair']:>4}  {record['first']:>5}  {ours['step_s']:>9.2f}  {ours['step_cpu_s']:>8.2f}  "
            f"{trl['step_s']:>8.2f}  {trl['step_cpu_s']:>7.2f}  {record['ratio_wall']:>12.2f}x  "
            f"{record['ratio_cpu']:>11.2f}x  {record['load_average_before']:>4.1f}")


def summary_lines(summary: dict[str, dict[str, float]], pairs: int) -> list[str]:
    """The median ratio and its range over the pairs, wall and CPU."""
    return [f"TRL / ragen-train, {name} time per step: median {r['median']:.2f}x "
            f"(range {r['min']:.2f}-{r['max']:.2f}x) over {pairs} pairs"
            for name, r in (("wall", summary["ratio_wall"]), ("CPU", summary["ratio_cpu"]))]


def run_child(a: argparse.Namespace) -> int:
    """Inside a side's subprocess: time that side and print its result as one JSON line."""
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    bench = bench_ours if a.only == "ours" else bench_trl
    with tempfile.TemporaryDirectory() as tmp:
        result = bench(Path(a.model_dir), Path(tmp), a.groups, a.size, a.new_tokens, a.steps)
    # Read back after the run: proves neither side changed the thread count it was given.
    result["threads"] = torch.get_num_threads()
    print(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Time ragen-train and TRL in ``--pairs`` interleaved pairs of subprocesses; print the ratios."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=5, help="interleaved ours/TRL pairs (>= 1)")
    p.add_argument("--groups", type=int, default=8, help="P prompts per step")
    p.add_argument("--size", type=int, default=8, help="N responses per prompt")
    p.add_argument("--new-tokens", type=int, default=40, help="max new tokens per response")
    p.add_argument("--steps", type=int, default=4, help="training steps per run (>= 2; the first is a warm-up)")
    p.add_argument("--trl-python", default=None, help="a Python with trl installed (default: this one)")
    p.add_argument("--threads", type=int, default=None, help="torch threads for both sides (default: torch's)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--only", choices=SIDES, default=None, help=argparse.SUPPRESS)
    p.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.pairs < 1:
        p.error(f"--pairs must be >= 1 (got {a.pairs})")
    if a.steps < 2:
        p.error(f"--steps must be >= 2: the first step of each run is a warm-up (got {a.steps})")
    if a.threads is not None and a.threads < 1:
        p.error(f"--threads must be >= 1 (got {a.threads})")
    if a.only:
        return run_child(a)

    python = {"ours": sys.executable, "trl": a.trl_python or sys.executable}
    try:
        found = {"ours": versions(python["ours"], with_trl=False), "trl": versions(python["trl"], with_trl=True)}
    except RuntimeError as error:
        p.error(f"trl does not import ({error}); install it in this Python, or pass --trl-python PYTHON "
                "with a Python that has it (see the module docstring)")

    import torch

    from ragen_train.tiny import build_tiny_checkpoint

    a.threads = a.threads or torch.get_num_threads()
    print(f"batch: {a.groups} prompts x {a.size} responses, <= {a.new_tokens} new tokens, {ENV}, tiny model, CPU, "
          f"{a.steps} steps per run (first one a warm-up), {a.threads} torch threads, {a.pairs} pairs; "
          "times are each run's median seconds per step", flush=True)
    load_before = os.getloadavg()
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_checkpoint(Path(tmp) / "tiny", seed=0)
        print(TABLE_HEADER, flush=True)
        for pair in range(a.pairs):
            pairs.append(measure_pair(pair, python, model_dir, a))
            print(pair_row(pairs[-1]), flush=True)
    summary = summarise(pairs)
    print("\n".join(summary_lines(summary, len(pairs))))
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shape": {"env": ENV, "groups": a.groups, "size": a.size, "new_tokens": a.new_tokens, "steps": a.steps,
                  "warmup_steps": 1, "threads": a.threads},
        "versions": found, "cpu_count": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "pairs": pairs, **summary,
    }
    if a.json:
        a.json.write_text(json.dumps(compact(report), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
