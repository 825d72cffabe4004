"""Regenerate this directory: play random, oracle and the embedded default model, then write the leaderboard.

    python leaderboards/generate.py                       # random, oracle, default (what is committed)
    python leaderboards/generate.py runs/my-model__openai__test ...   # add evaluated runs
    python leaderboards/generate.py --rewrite             # only rewrite tables and plots from leaderboard.json

The three play every default env (sokoban, frozenlake, bandit) on the test split, 256 levels each
(the harness default), into runs/leaderboard/; random and oracle also play the newer games
(:data:`MORE_GAMES`) as runs of their own, so the default model's row keeps the envs it was trained
on; the default model is ``--model default``, the tiny
multi-game checkpoint in ragen_eval/default_model/, played in process by the hf backend. Extra runs
on other levels get their random and oracle baselines played into runs/leaderboard/baselines/
first (the ``ragen-eval baselines`` step); then the leaderboard, which only reads run directories,
ranks them all. runs/ is not committed; rerunning resumes and skips finished episodes. Each run's
config.json and summary.json are copied to leaderboards/runs/ so the committed tables can be traced
to exact settings and package versions. ``--rewrite`` plays nothing: it rebuilds the tables and plots
from the figures leaderboard.json already holds (after a change to how they are laid out).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from ragen_eval.cli import evaluate, play_baselines
from ragen_eval.config import BUILTIN_MODELS, DEFAULT_ENVS, EvalConfig
from ragen_eval.embedded_model import DEFAULT_MODEL
from ragen_eval.leaderboard import build_leaderboard, load_leaderboard, write_leaderboard
from ragen_eval.run_dir import CONFIG_FILE, SUMMARY_FILE
from ragen_eval.summary import summary_of

HERE = Path(__file__).resolve().parent
#: Games beyond the default envs that random and oracle play, in runs named ``*__games``.
MORE_GAMES = ("countdown", "sudoku", "sudoku_9x9", "rubiks_2x2", "rubiks_2x2_hard")


def main(argv: list[str] | None = None) -> int:
    """Play the three models (random and oracle also on MORE_GAMES) and the extra runs' baselines, then build
    the leaderboard next to this script."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="extra run directories to rank")
    parser.add_argument("--episodes", type=int, default=256, help="levels per env for random, oracle and default")
    parser.add_argument("--runs-dir", default="runs/leaderboard", help="where the baseline runs are played")
    parser.add_argument("--out", default=str(HERE), help="output directory (default: this directory)")
    parser.add_argument("--rewrite", action="store_true",
                        help="rebuild the tables and plots from OUT/leaderboard.json; plays and reads no run")
    args = parser.parse_args(argv)
    if args.rewrite:
        if args.runs:
            parser.error("--rewrite takes no run directories")
        paths = write_leaderboard(load_leaderboard(Path(args.out) / "leaderboard.json"), args.out)
        print(paths["markdown"].read_text())
        return 0
    run_dirs = []
    for model in (*BUILTIN_MODELS, DEFAULT_MODEL):
        config = EvalConfig(model=model, envs=list(DEFAULT_ENVS), episodes=args.episodes, split="test")
        path = Path(args.runs_dir) / config.run_name()
        evaluate(config, path, progress=sys.stderr.isatty())
        run_dirs.append(path)
    extra = [Path(r) for r in args.runs]
    # Step 1 plays; step 2 only reads. The three runs above are baselines of the default levels already.
    if extra:
        extra += play_baselines([*run_dirs, *extra], Path(args.runs_dir) / "baselines", progress=sys.stderr.isatty())
    for model in BUILTIN_MODELS:  # the newer games' baselines are these two runs themselves
        config = EvalConfig(model=model, envs=list(MORE_GAMES), episodes=args.episodes, split="test")
        path = Path(args.runs_dir) / f"{config.run_name()}__games"
        evaluate(config, path, progress=sys.stderr.isatty())
        run_dirs.append(path)
    out = Path(args.out)
    board = build_leaderboard({path: summary_of(path) for path in [*run_dirs, *extra]})
    paths = write_leaderboard(board, out)
    provenance = out / "runs"
    shutil.rmtree(provenance, ignore_errors=True)
    for row in board.rows:
        target = provenance / Path(row["run"]).name
        target.mkdir(parents=True)
        for name in (CONFIG_FILE, SUMMARY_FILE):
            shutil.copyfile(Path(row["run"]) / name, target / name)
    print(paths["markdown"].read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
