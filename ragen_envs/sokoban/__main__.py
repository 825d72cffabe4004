"""``python -m ragen_envs.sokoban export``: write certified levels of a preset as a Boxoban-format file.

    python -m ragen_envs.sokoban export --preset boxoban --n 1000 --out boxoban_test.txt [--split test]

writes ``boxoban_test.txt`` (``; 0``, ten rows, a blank line, ``; 1``, ...) and, next to it,
``boxoban_test.txt.certificates.json``: each level's optimal solution, keyed by the file's SHA-256,
with the preset, split and seeds the levels came from. Loading the file as a level set
(``ragen_envs.make("sokoban", levels="boxoban_test.txt")``, ``ragen-eval --levels``) then reads the
certificates instead of solving the levels again. The levels are the first ``n`` seeds of the split
(:func:`ragen_envs.split_seeds`), so a test-split export holds no training level.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

from ragen_envs.progress import Progress
from ragen_envs.registration import get_preset, make
from ragen_envs.sokoban.level_files import write_certificates
from ragen_envs.sokoban.notation import format_boxoban
from ragen_envs.splits import SPLIT_OFFSETS, LevelSplitter


def export(preset: str, n: int, out: str | Path, split: str = "test", start: int = 0) -> Path:
    """Write ``n`` levels of a Sokoban preset (the first seeds of ``split`` from ``start``) to ``out`` in
    Boxoban format, with their certificates alongside; returns the certificate file's path."""
    spec = get_preset(preset)
    if not spec.entry_point.endswith("SokobanEnv"):
        raise ValueError(f"--preset {preset}: not a Sokoban preset")
    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    env = make(spec.name).unwrapped
    levels = []

    def keep(seed: int) -> None:  # the level reset(seed=s) starts, exactly as an evaluation on this split plays it
        env.reset(seed=seed)
        levels.append(env.level)
        bar.advance()

    # Finding a split's seeds generates about ten levels per seed kept (LevelSplitter): minutes for
    # a thousand Boxoban levels, so the walk reports its progress.
    with Progress(f"exporting {spec.name} ({split} split)", n, "levels") as bar:
        seeds = LevelSplitter(spec.name).seeds(split, n, start, kept=keep)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = format_boxoban(levels).encode("utf-8")
    out.write_bytes(data)
    about = {"preset": spec.name, "split": split, "seeds": seeds}
    written = write_certificates(out, hashlib.sha256(data).hexdigest(),
                                 {i: level.certificate for i, level in enumerate(levels)}, about)
    if written is None:
        raise OSError(f"could not write the certificates of {out} (next to it or in the user cache)")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (2 for bad input)."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.sokoban", allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export", allow_abbrev=False, help="write a preset's certified levels as a Boxoban file")
    p.add_argument("--preset", required=True, help="a Sokoban preset, e.g. boxoban")
    p.add_argument("--n", type=int, required=True, help="number of levels")
    p.add_argument("--out", required=True, help="the Boxoban-format file to write")
    p.add_argument("--split", default="test", choices=tuple(SPLIT_OFFSETS), help="seed split the levels come from")
    p.add_argument("--seed-start", type=int, default=0, help="index in the split where the seeds start")
    args = parser.parse_args(argv)
    try:
        certificates = export(args.preset, args.n, args.out, args.split, args.seed_start)
    except (ValueError, OSError) as err:
        print(f"python -m ragen_envs.sokoban export: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.n} levels to {args.out} and their certificates to {certificates}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
