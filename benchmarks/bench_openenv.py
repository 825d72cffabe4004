"""Turns per second over OpenEnv's ``/ws``: our server against in-process play and OpenEnv's echo server.

Four players, each timed on the same scripted turns at 1, 64 and 256 concurrent sessions:

- ``ragen``: ``python -m ragen_envs.openenv_server`` (Sokoban, the default preset), a server process
  on loopback; this process is the client, one WebSocket per session, all sessions in flight at once;
- ``inproc``: ``EpisodeBatch`` on the same seeds and replies, in this process, no server at all;
- ``echo``: OpenEnv's reference environment (the echo environment ``openenv init`` writes), served by
  the same ``create_app`` and the same uvicorn settings and collector tuning (``app.serve``), same
  client; its turns do no game work. Its ``step`` is synchronous, so OpenEnv runs each one in a
  thread pool;
- ``echo_loop``: the same echo with ``step_async`` (as our environment has), so its steps run on the
  event loop: the floor of what any environment served this way costs.

A measurement resets every session untimed (level generation is the same cost in or out of a server),
then times five turns of every session, all sessions in flight at once; with fewer sessions it repeats
this (256 / sessions cycles), so every measurement plays about the same number of turns. The client
connects as OpenEnv's ``EnvClient`` does (``websockets``, per-message deflate offered; the servers
decline it) and takes the server's defaults (chat "new", no records). Two figures:
turns/s (turns played / wall seconds of the timed turns), and CPU per turn, the server process's CPU
time (``/proc``) over the timed turns, or this process's for in-process play; CPU time does not count
other work on a shared machine, so the cost ratio (ragen server CPU / in-process CPU per turn) holds on
a busy machine where wall-clock figures do not. Players alternate in rounds (``--pairs``, at least 5)
and the report gives medians and ranges over rounds. The client shares the machine's cores with the
server, as a trainer on the same host would.

    python benchmarks/bench_openenv.py [--sessions 1,64,256] [--pairs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from collections.abc import Iterator
from pathlib import Path

from websockets.asyncio.client import connect

from ragen_envs.text import EpisodeBatch

GOAL_TURNS_PER_S = 2000
GOAL_COST_RATIO = 3.0
TURNS = 5
REPLIES = ["<think>push it</think><answer>Up || Left</answer>", "<think>around</think><answer>Down</answer>",
           "<think>again</think><answer>Right || Up</answer>", "no tags at all", "<think>on</think><answer>Left</answer>"]
ECHO_RUNNER = """
import socket, sys
sys.path.insert(0, sys.argv[1])
from openenv.core.env_server.http_server import create_app
from benchecho.models import BenchechoAction, BenchechoObservation
from benchecho.server.benchecho_environment import BenchechoEnvironment
from ragen_envs.openenv_server.app import serve
class OnTheLoop(BenchechoEnvironment):
    async def step_async(self, action, timeout_s=None, **kwargs):
        return self.step(action)
app = create_app(OnTheLoop if sys.argv[3] == "loop" else BenchechoEnvironment, BenchechoAction,
                 BenchechoObservation, env_name="benchecho", max_concurrent_envs=int(sys.argv[2]))
sock = socket.create_server(("127.0.0.1", 0), backlog=2048)
print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
serve(app, sock)
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server(argv: list[str]) -> Iterator[tuple[str, int]]:
    """A server subprocess; yields its ws:// URL and pid once it prints its ``listening on`` line."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise SystemExit(f"server did not start: {argv}")
        yield line.rsplit(" ", 1)[1].strip().replace("http://", "ws://") + "/ws", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _over_ws(url: str, pid: int, sessions: int, cycles: int, echo: bool) -> tuple[float, float, int]:
    sockets = [await connect(url, max_size=None) for _ in range(sessions)]
    actions = [json.dumps({"type": "step", "data": {"message" if echo else "reply": r}}) for r in REPLIES[:TURNS]]

    async def play(ws) -> int:
        for played, action in enumerate(actions, 1):
            await ws.send(action)
            answer = json.loads(await ws.recv())
            if answer["type"] != "observation":
                raise RuntimeError(f"server refused a step: {answer['data']}")
            if answer["data"]["done"]:
                return played
        return len(actions)

    async def reset(ws, seed: int) -> None:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        json.loads(await ws.recv())

    wall = cpu = 0.0
    turns = 0
    try:
        for cycle in range(cycles):
            await asyncio.gather(*(reset(ws, 1000 + cycle * sessions + i) for i, ws in enumerate(sockets)))
            cpu -= cpu_seconds(pid)
            began = time.perf_counter()
            turns += sum(await asyncio.gather(*(play(ws) for ws in sockets)))
            wall += time.perf_counter() - began
            cpu += cpu_seconds(pid)
    finally:
        for ws in sockets:
            await ws.close()
    return turns / wall, cpu / turns, turns


def over_ws(server_: tuple[str, int], sessions: int, cycles: int, echo: bool = False) -> tuple[float, float]:
    """(turns per second, server CPU seconds per turn) of ``sessions`` concurrent sockets, ``cycles`` times."""
    tps, cpu, _ = asyncio.run(_over_ws(*server_, sessions, cycles, echo))
    return tps, cpu


def in_process(sessions: int, cycles: int) -> tuple[float, float]:
    """(turns per second, CPU seconds per turn) of ``EpisodeBatch`` on the same seeds and replies."""
    wall = cpu = 0.0
    turns = 0
    for cycle in range(cycles):
        batch = EpisodeBatch("sokoban", [1000 + cycle * sessions + i for i in range(sessions)])
        began, began_cpu = time.perf_counter(), time.process_time()
        for reply in REPLIES[:TURNS]:
            if batch.done:
                break
            batch.prompts()
            turns += len(batch.step([reply] * len(batch.active)))
        wall += time.perf_counter() - began
        cpu += time.process_time() - began_cpu
    return turns / wall, cpu / turns


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,64,256", help="comma-separated concurrent session counts")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved rounds (at least 5)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.sessions.split(",")]
    if args.pairs < 5:
        parser.error("--pairs must be at least 5")
    most = max(counts)
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(Path(sys.executable).with_name("openenv")), "init", "benchecho", "--output-dir", tmp],
                       check=True, capture_output=True)
        ragen = stack.enter_context(server([sys.executable, "-m", "ragen_envs.openenv_server", "--port", "0",
                                            "--max-sessions", str(most), "--max-sessions-per-client", str(most),
                                            "--max-connections", str(2 * most)]))
        echo = stack.enter_context(server([sys.executable, "-c", ECHO_RUNNER, tmp, str(most), "pool"]))
        echo_loop = stack.enter_context(server([sys.executable, "-c", ECHO_RUNNER, tmp, str(most), "loop"]))
        rows = []
        for sessions in counts:
            cycles = max(1, most // sessions)  # about the same number of turns in every measurement
            figures: dict[str, list[tuple[float, float]]] = {"ragen": [], "inproc": [], "echo": [], "echo_loop": []}
            for round_ in range(args.pairs):
                players = [("ragen", lambda: over_ws(ragen, sessions, cycles)),
                           ("inproc", lambda: in_process(sessions, cycles)),
                           ("echo", lambda: over_ws(echo, sessions, cycles, echo=True)),
                           ("echo_loop", lambda: over_ws(echo_loop, sessions, cycles, echo=True))]
                first = round_ % len(players)
                for name, play in players[first:] + players[:first]:  # rotate who goes first
                    figures[name].append(play())
                print(f"sessions {sessions} round {round_ + 1}: " + ", ".join(
                    f"{k} {v[-1][0]:,.0f} turns/s {v[-1][1] * 1e6:,.0f} us CPU/turn" for k, v in figures.items()),
                    file=sys.stderr, flush=True)
            rows.append((sessions, figures))
    print("| sessions | ragen over /ws: turns/s | in-process: turns/s | echo: turns/s | echo on the loop: turns/s "
          "| CPU per turn (us): ragen server / in-process / echo / echo on the loop "
          "| CPU per turn / in-process: ragen | echo | echo on the loop |")
    print("|---|---|---|---|---|---|---|---|---|")

    def spread(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}, {max(values):{fmt}}]"

    def ratios(figures: dict[str, list[tuple[float, float]]], name: str) -> list[float]:
        return [f[1] / i[1] for f, i in zip(figures[name], figures["inproc"])]  # round by round

    for sessions, figures in rows:
        tps = {k: [f[0] for f in v] for k, v in figures.items()}
        cpu = {k: statistics.median(f[1] * 1e6 for f in v) for k, v in figures.items()}
        print(f"| {sessions} | {spread(tps['ragen'], ',.0f')} | {spread(tps['inproc'], ',.0f')} | "
              f"{spread(tps['echo'], ',.0f')} | {spread(tps['echo_loop'], ',.0f')} | {cpu['ragen']:,.0f} / "
              f"{cpu['inproc']:,.0f} / {cpu['echo']:,.0f} / {cpu['echo_loop']:,.0f} | "
              + " | ".join(f"{spread(ratios(figures, name), '.1f')}x" for name in ("ragen", "echo", "echo_loop"))
              + " |")
    sessions, figures = rows[-1]
    ragen_tps = statistics.median(f[0] for f in figures["ragen"])
    print(f"\ngoal at {sessions} sessions: >= {GOAL_TURNS_PER_S:,} turns/s (median {ragen_tps:,.0f}); "
          f"server CPU per turn <= {GOAL_COST_RATIO:g}x in-process (median {statistics.median(ratios(figures, 'ragen')):.1f}x; "
          f"OpenEnv's floor, echo on the loop: {statistics.median(ratios(figures, 'echo_loop')):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
