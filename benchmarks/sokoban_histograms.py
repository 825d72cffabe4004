"""Push-count histograms of every Sokoban preset, written into docs/envs/sokoban.md.

    python benchmarks/sokoban_histograms.py [--levels 500] [--peer-python /tmp/venv-peer/bin/python]

For each preset it generates the levels of seeds 0..N-1 and counts the pushes (and moves) of
their certificates. With a peer python (see bench_sokoban.py) it also solves gym-sokoban's 6x6 /
1-box levels with our solver, for comparison. The table replaces the block between the
``histograms`` markers of the doc.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import statistics
import subprocess

from ragen_envs.registration import PRESETS
from ragen_envs.sokoban import generate, parse_level, solve

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "envs" / "sokoban.md"
START, END = "<!-- histograms:start -->", "<!-- histograms:end -->"


# Runs in the peers' venv: gym-sokoban's 6x6 / 1-box levels in standard notation, one JSON list.
PEER_LEVELS = r"""
import json, sys
import numpy as np
from gym_sokoban.envs.room_utils import generate_room
out = []
for seed in range(int(sys.argv[1])):
    np.random.seed(seed)
    try:
        fixed, state, _ = generate_room(dim=(6, 6), num_steps=20, num_boxes=1)
    except Exception:
        continue
    rows = []
    for r in range(6):
        row = ""
        for c in range(6):
            target, thing = fixed[r, c] == 2, state[r, c]
            if thing == 0:
                row += "#"
            elif thing == 5:
                row += "+" if target else "@"
            elif thing in (3, 4):
                row += "*" if target else "$"
            else:
                row += "." if target else " "
        rows.append(row)
    out.append("\n".join(rows))
print(json.dumps(out))
"""


def peer_certificates(peer_python: str, levels: int) -> list:
    """Our solver's certificates for gym-sokoban's 6x6 / 1-box levels of seeds 0..N-1."""
    proc = subprocess.run([peer_python, "-c", PEER_LEVELS, str(levels)], capture_output=True, text=True, check=True)
    texts = json.loads(proc.stdout.strip().splitlines()[-1])
    return [solve(parse_level(text)).certificate for text in texts]


def histogram_table(levels: int, peer_python: str | None) -> str:
    """Markdown: one row per preset, with the share of levels at each push count."""
    presets = [p for p in PRESETS if p.entry_point.endswith(":SokobanEnv")]
    rows = []
    counts_by_preset = {}
    for preset in presets:
        certs = [generate(preset.config, seed).certificate for seed in range(levels)]
        counts_by_preset[preset.name] = (collections.Counter(c.pushes for c in certs), certs)
    names = {p.name: ", ".join(f"{k}={v}" for k, v in p.config.items()) or "defaults" for p in presets}
    if peer_python and pathlib.Path(peer_python).exists():
        certs = peer_certificates(peer_python, levels)
        name = "gym-sokoban 6x6/1 (peer)"
        counts_by_preset[name] = (collections.Counter(c.pushes for c in certs), certs)
        names[name] = f"generate_room, {len(certs)} levels solved by ours"
    top = max(max(c) for c, _ in counts_by_preset.values())
    buckets = list(range(1, min(top, 15) + 1))
    header = "| preset | config | " + " | ".join(str(b) for b in buckets) + (" | 16+ |" if top > 15 else " |")
    header += " <=2 pushes | median pushes | median moves |"
    rows.append(header)
    rows.append("|" + "---|" * (header.count("|") - 1))
    for name, (counts, certs) in counts_by_preset.items():
        n = len(certs)
        cells = [f"{100 * counts.get(b, 0) / n:.0f}%" if counts.get(b) else "" for b in buckets]
        if top > 15:
            over = sum(v for k, v in counts.items() if k > 15)
            cells.append(f"{100 * over / n:.0f}%" if over else "")
        easy = sum(v for k, v in counts.items() if k <= 2) / n
        rows.append(f"| `{name}` | {names[name]} | " + " | ".join(cells)
                    + f" | {100 * easy:.0f}% | {statistics.median(c.pushes for c in certs):g}"
                    + f" | {statistics.median(c.moves for c in certs):g} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", type=int, default=500, help="levels (seeds 0..N-1) per preset")
    parser.add_argument("--peer-python", default="/tmp/venv-peer/bin/python", help="python with gym-sokoban")
    args = parser.parse_args()
    table = histogram_table(args.levels, args.peer_python)
    note = (f"Share of levels by certificate push count, seeds 0..{args.levels - 1} of each preset "
            f"(`python benchmarks/sokoban_histograms.py --levels {args.levels}`).")
    text = DOC.read_text()
    head, rest = text.split(START)
    _, tail = rest.split(END)
    DOC.write_text(f"{head}{START}\n{note}\n\n{table}\n{END}{tail}")
    print(table)


if __name__ == "__main__":
    main()
