"""Throughput of the ``ragen-eval`` HTTP path against ``ragen-eval serve --agent random``.

The server runs in its own process with injected latency; the harness (runner, text protocol,
``OpenAIChatAgent`` over the real ``openai`` client, run directory) runs in this one, so this
process's CPU time is the harness's own cost. Two references are timed in the same run:

* ideal: ``concurrency / latency`` turns per second, the most any client can get from the server;
* client only: the same number of chat requests sent straight through ``OpenAIChatAgent`` with the
  same concurrency and no game, which is what the harness adds its work on top of.

The goal (issue 4): with 200 ms latency and concurrency 64 the harness reaches at least 80 % of the
ideal 320 turns/s.

    python benchmarks/bench_eval_http.py                      # 200 ms and 0 ms, concurrency 64
    python benchmarks/bench_eval_http.py --latency 0.2 --episodes 2048

At 0 ms it also times the client alone on each transport the agent supports (aiohttp, httpx).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LISTENING_PREFIX = "ragen-eval serve: listening on "


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "ragen_eval.serve", "--agent", "random", "--port", "0",
                             "--latency", str(latency)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    if not line.startswith(LISTENING_PREFIX):
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    return proc, line[len(LISTENING_PREFIX):].strip()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def harness_run(url: str, envs: list[str], episodes: int, concurrency: int) -> dict[str, float]:
    """One real evaluation through the runner; returns turns, seconds, turns/s and CPU ms per turn."""
    from ragen_eval.cli import evaluate
    from ragen_eval.config import EvalConfig

    config = EvalConfig(model="random", base_urls=[url], envs=envs, episodes=episodes, concurrency=concurrency,
                        timeout=30.0, max_retries=3)
    with tempfile.TemporaryDirectory() as out:
        cpu = time.process_time()
        wall = time.perf_counter()
        _, stats = evaluate(config, Path(out) / "run", progress=False)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
    if stats.errors:
        raise RuntimeError(f"{stats.errors} episodes ended with errors; the benchmark needs a clean run")
    return {"turns": stats.turns, "seconds": wall, "turns_per_second": stats.turns / wall,
            "cpu_ms_per_turn": 1e3 * cpu / stats.turns}


def client_only_run(url: str, requests: int, concurrency: int, http_backend: str = "auto") -> dict[str, float]:
    """``requests`` chat requests through OpenAIChatAgent alone, ``concurrency`` at a time."""
    from ragen_envs.text import TextEpisode

    from ragen_eval.agents.openai_agent import OpenAIChatAgent

    prompt = TextEpisode("sokoban", 0).messages

    async def go() -> tuple[float, float]:
        agent = OpenAIChatAgent("random", [url], None, concurrency=concurrency, timeout=30.0,
                                http_backend=http_backend)
        try:
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(agent.act(prompt) for _ in range(requests)))
            return time.perf_counter() - wall, time.process_time() - cpu
        finally:
            await agent.aclose()

    wall, cpu = asyncio.run(go())
    return {"turns": requests, "seconds": wall, "turns_per_second": requests / wall,
            "cpu_ms_per_turn": 1e3 * cpu / requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, action="append", default=None,
                        help="server latency in seconds (repeatable; default 0.2 and 0)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=1024, help="episodes per env")
    parser.add_argument("--env", default="sokoban", help="comma-separated presets")
    args = parser.parse_args()
    latencies = args.latency or [0.2, 0.0]
    envs = args.env.split(",")

    rows, transports = [], []
    for latency in latencies:
        proc, url = start_server(latency)
        try:
            harness_run(url, envs, min(args.episodes, 2 * args.concurrency), args.concurrency)  # warm-up
            server_cpu = process_cpu_seconds(proc.pid)
            harness = harness_run(url, envs, args.episodes, args.concurrency)
            harness["server_cpu_ms_per_turn"] = 1e3 * (process_cpu_seconds(proc.pid) - server_cpu) / harness["turns"]
            client = client_only_run(url, harness["turns"], args.concurrency)
            if latency == 0:
                transports = [(name, client_only_run(url, harness["turns"], args.concurrency, name))
                              for name in ("aiohttp", "httpx")]
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            proc.stdout.close()
        ideal = args.concurrency / latency if latency > 0 else float("nan")
        rows.append((latency, ideal, harness, client))

    from ragen_eval.agents.openai_agent import OpenAIChatAgent

    probe = OpenAIChatAgent("random", ["http://127.0.0.1:1/v1"])
    asyncio.run(probe.aclose())
    print(f"ragen-eval over HTTP: {args.env}, {args.episodes} episodes per env, concurrency {args.concurrency}, "
          f"server `ragen-eval serve --agent random` in its own process; transport "
          f"{probe.http_backend}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print("| latency | ideal turns/s | harness turns/s | harness / ideal | client-only turns/s | "
          "harness / client-only | harness CPU ms/turn | client-only CPU ms/request | server CPU ms/turn | turns |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for latency, ideal, harness, client in rows:
        ratio = f"{harness['turns_per_second'] / ideal:.1%}" if latency > 0 else "n/a"
        ideal_text = f"{ideal:.0f}" if latency > 0 else "n/a"
        print(f"| {latency * 1e3:.0f} ms | {ideal_text} | {harness['turns_per_second']:.1f} | {ratio} | "
              f"{client['turns_per_second']:.1f} | {harness['turns_per_second'] / client['turns_per_second']:.2f} | "
              f"{harness['cpu_ms_per_turn']:.2f} | {client['cpu_ms_per_turn']:.2f} | "
              f"{harness['server_cpu_ms_per_turn']:.2f} | {harness['turns']} |")
    if transports:
        print("\nclient only at 0 ms, by transport under the openai client (`http_backend`):\n")
        print("| transport | requests/s | client CPU ms/request |")
        print("|---|---|---|")
        for name, result in transports:
            print(f"| {name} | {result['turns_per_second']:.1f} | {result['cpu_ms_per_turn']:.2f} |")
    for latency, ideal, harness, _ in rows:
        if latency == 0.2 and args.concurrency == 64:
            verdict = "PASS" if harness["turns_per_second"] >= 0.8 * ideal else "FAIL"
            print(f"\ngoal: >= 80% of {ideal:.0f} turns/s at 200 ms, concurrency 64: {verdict} "
                  f"({harness['turns_per_second']:.1f} turns/s)")


if __name__ == "__main__":
    main()
