"""Tiny-model baselines on the CPU, end to end: SFT warm starts, StarPO and StarPO-S, test-split evaluation.

For each game (Bandit, FrozenLake 4x4, SimpleSokoban), from a tiny random model:

1. ``format-sft``: SFT on format-only demonstrations (random valid actions);
2. ``starpo`` and ``starpo-s``: RL from the format-only checkpoint (``ragen_train.trainer``);
3. ``oracle-sft``: SFT on oracle demonstrations, for comparison;
4. every model evaluated on the test split through ``ragen-eval --backend hf``.

Every stage is skipped when its output already exists, so a rerun resumes. Results go to
``<out>/results.json``. ``--docs`` also writes the compact outputs to ``experiments/baselines/starpo/``
(``results.json`` and, per RL run, ``config.yaml`` and the per-step metrics the table and curves read),
then the table (``experiments/baselines/results.md``) and the learning curves from those copies alone;
``--from-docs`` redraws the table and curves from the committed copies without any run.

    python experiments/baselines/run_baselines.py --out runs/baselines --docs
    python experiments/baselines/run_baselines.py --games bandit --out runs/baselines   # one game
    python experiments/baselines/run_baselines.py --from-docs                            # redraw the table and curves
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "baselines"))
from collapse_summary import export as export_run  # noqa: E402

from ragen_train.run_log import upgrade_row  # noqa: E402

DOCS = REPO / "experiments" / "baselines"
#: The committed compact outputs: ``results.json`` and ``<game>/<preset>/`` copies of the RL runs.
COMPACT = DOCS / "starpo"


@dataclass(frozen=True)
class GameSpec:
    """Budgets of one game's baselines, sized so every stage runs in minutes on 2 shared CPU cores."""

    env: str
    format_episodes: int
    oracle_episodes: int
    sft_epochs: int
    rl_steps: int
    env_groups: int
    group_size: int
    max_new_tokens: int
    eval_episodes: int
    oracle_successful_only: bool = False
    """Keep only successful oracle episodes: right where failure means the plan did not fit the budget
    (Sokoban), wrong where it means bad luck (slippery FrozenLake: the moves were still optimal)."""
    rl_overrides: tuple[str, ...] = field(default_factory=tuple)
    oracle_epochs: int | None = None
    """Epochs of the oracle SFT (None: ``sft_epochs``)."""
    oracle_hidden_size: int = 128
    """Width of the oracle SFT's tiny model (heads of 64, MLP 2x wide); the format SFT keeps 128."""
    oracle_num_layers: int = 2
    """Depth of the oracle SFT's tiny model."""


GAMES: dict[str, GameSpec] = {
    "bandit": GameSpec("bandit", format_episodes=512, oracle_episodes=512, sft_epochs=2, rl_steps=100,
                       env_groups=8, group_size=8, max_new_tokens=40, eval_episodes=128,
                       rl_overrides=("actor_lr=5e-4",)),  # one-turn game: the CI test's rate
    "frozenlake": GameSpec("frozenlake", format_episodes=768, oracle_episodes=768, sft_epochs=3, rl_steps=40,
                           env_groups=8, group_size=8, max_new_tokens=56, eval_episodes=256),
    # Sokoban's oracle SFT gets more demonstrations and a wider, deeper model than the other games'
    "simple_sokoban": GameSpec("simple_sokoban", format_episodes=768, oracle_episodes=2400, sft_epochs=3,
                               rl_steps=10, env_groups=8, group_size=8, max_new_tokens=64, eval_episodes=256,
                               oracle_successful_only=True, oracle_epochs=4, oracle_hidden_size=192,
                               oracle_num_layers=4),
}

#: Learning rates for the tiny models (RAGEN's 1e-6 / 1e-5 are for 0.5B+ models and barely move these).
#: The presets' 4 optimizer steps per RL step stay, whatever the filter keeps, so the clip acts in both.
TINY_RL = ("actor_lr=2e-4", "critic_lr=1e-3", "micro_batch_size=8", "eval_every=20", "eval_episodes=64")
MODEL_ORDER = ("format-sft", "+starpo", "+starpo-s", "oracle-sft")
#: ragen-eval's default (0.5) and the rollouts' (1.0). Not greedy: argmax decoding hides a 50/50
#: Bandit policy behind whichever arm its first token happens to prefer.
EVAL_TEMPERATURES = (0.5, 1.0)


def sft_stage(spec: GameSpec, mode: str, out: Path, seed: int) -> Path:
    """SFT a fresh tiny model on ``mode`` demonstrations; returns the checkpoint directory."""
    from ragen_train.demos import DemoConfig
    from ragen_train.sft import SFTConfig, run_sft

    if (out / "model.safetensors").is_file():
        return out
    episodes = spec.oracle_episodes if mode == "oracle" else spec.format_episodes
    demos = DemoConfig(env=spec.env, mode=mode, num_episodes=episodes, seed=seed,
                       successful_only=mode == "oracle" and spec.oracle_successful_only)
    oracle = mode == "oracle"
    epochs = spec.oracle_epochs if oracle and spec.oracle_epochs is not None else spec.sft_epochs
    return run_sft(SFTConfig(model="tiny", out=str(out), demos=demos, epochs=epochs, lr=2e-3, seed=seed,
                             tiny_hidden_size=spec.oracle_hidden_size if oracle else 128,
                             tiny_num_layers=spec.oracle_num_layers if oracle else 2))


def rl_stage(spec: GameSpec, preset: str, start: Path, runs: Path, seed: int) -> Path:
    """StarPO or StarPO-S from ``start``; returns the run directory (checkpoints under ``checkpoints/``)."""
    from ragen_train.checkpoint import latest_checkpoint
    from ragen_train.config import load_config
    from ragen_train.trainer import train

    run_dir = runs / preset
    if _final_checkpoint(run_dir, spec.rl_steps) is not None:
        return run_dir
    overrides = [f"preset={preset}", f"env={spec.env}", f"model={start}", f"seed={seed}",
                 f"total_steps={spec.rl_steps}", f"env_groups={spec.env_groups}", f"group_size={spec.group_size}",
                 f"max_new_tokens={spec.max_new_tokens}", f"output_dir={runs}", f"run_name={preset}",
                 "save_every=5", "plot_every=5", *TINY_RL, *spec.rl_overrides]
    train(load_config(None, overrides))
    if latest_checkpoint(run_dir) is None:
        raise RuntimeError(f"{preset} run in {run_dir} finished without a checkpoint")
    return run_dir


def _final_checkpoint(run_dir: Path, steps: int) -> Path | None:
    from ragen_train.checkpoint import latest_checkpoint

    ckpt = latest_checkpoint(run_dir) if run_dir.is_dir() else None
    if ckpt is None:
        return None
    rows = _read_csv(run_dir / "metrics.csv")
    return ckpt if rows and int(rows[-1]["step"]) >= steps else None


def eval_stage(model: Path, spec: GameSpec, out: Path, name: str, temperature: float) -> dict[str, Any]:
    """``ragen-eval`` on the test split (it resumes by itself); returns success, reward, format errors."""
    cmd = [sys.executable, "-m", "ragen_eval.cli", "evaluate", "--model", str(model), "--backend", "hf",
           "--env", spec.env, "--split", "test", "--episodes", str(spec.eval_episodes),
           "--temperature", str(temperature), "--sampling-seed", "0", "--max-tokens", str(spec.max_new_tokens),
           "--out", str(out), "--run-name", name, "--no-progress"]
    subprocess.run(cmd, check=True, cwd=REPO)
    overall = json.loads((out / name / "summary.json").read_text())["overall"]  # ragen-eval's own numbers
    return {
        "command": " ".join(["ragen-eval", *cmd[3:]]),
        "episodes": overall["episodes"],
        "success": overall["success_rate"],
        "reward": overall["mean_reward"],
        "format_error_rate": overall["format_error_rate"],
    }


def run_game(spec: GameSpec, out: Path, seed: int, rl: bool = True) -> dict[str, Any]:
    """Every stage of one game (``rl=False``: the two SFT models only); returns its results."""
    game_dir = out / spec.env
    results: dict[str, Any] = {"spec": asdict(spec), "models": {}}
    models: dict[str, Path | None] = {}
    for mode in ("format", "oracle"):
        models[f"{mode}-sft"] = sft_stage(spec, mode, game_dir / f"{mode}-sft", seed)
    for preset in ("starpo", "starpo-s") if rl else ():
        run_dir = rl_stage(spec, preset, models["format-sft"], game_dir / "rl", seed)
        models[f"+{preset}"] = _final_checkpoint(run_dir, spec.rl_steps)
    for name, path in models.items():
        results["models"][name] = {"path": str(path)}
        for temperature in EVAL_TEMPERATURES:
            # the first runs (before two temperatures) are named without a suffix; keep resuming them
            run_name = name.strip("+") if temperature == 1.0 else f"{name.strip('+')}__t{temperature}"
            results["models"][name][f"t{temperature}"] = eval_stage(path, spec, game_dir / "eval", run_name,
                                                                    temperature)
    return results


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return [upgrade_row(row) for row in csv.DictReader(handle)]


def export_compact(results: dict[str, Any], out: Path) -> None:
    """Copy what the docs read into :data:`COMPACT`: the results without machine paths, and each RL
    run's config and per-step metrics."""
    COMPACT.mkdir(parents=True, exist_ok=True)
    portable = json.loads(json.dumps(results))
    for game, res in portable.items():
        for model in res["models"].values():
            model.pop("path", None)  # a checkpoint folder of the machine that ran it
            for evaluation in model.values():
                if isinstance(evaluation, dict):
                    evaluation["command"] = evaluation["command"].replace(str(out), "runs/baselines")
        for preset in ("starpo", "starpo-s"):
            run_dir = out / game / "rl" / preset
            if (run_dir / "metrics.csv").is_file():
                export_run(run_dir, COMPACT / game)
    (COMPACT / "results.json").write_text(json.dumps(portable, indent=2) + "\n")


def write_docs(results: dict[str, Any], out: Path) -> None:
    """The results table (Markdown) and one learning-curve figure per game, under experiments/baselines/, from
    ``results`` and the RL runs' metrics under ``out/<game>/<preset>/``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    DOCS.mkdir(parents=True, exist_ok=True)
    lines = ["<!-- generated by experiments/baselines/run_baselines.py --docs (or --from-docs); do not edit -->", "",
             "Test split through `ragen-eval --backend hf`: success rate, and the format-error rate of turns,",
             "at sampling temperature 0.5 (ragen-eval's default) and 1.0 (the rollouts').", "",
             "| game | model | episodes | success @0.5 | success @1.0 | format err @0.5 | format err @1.0 |",
             "|---|---|---|---|---|---|---|"]
    for game, res in results.items():
        for name in MODEL_ORDER:
            if name not in res["models"]:
                continue
            low, high = (res["models"][name][f"t{t}"] for t in EVAL_TEMPERATURES)
            lines.append(f"| {game} | {name} | {low['episodes']} | {low['success']:.3f} | {high['success']:.3f} | "
                         f"{low['format_error_rate']:.3f} | {high['format_error_rate']:.3f} |")
    lines += ["", "Collapse alerts during RL (steps that raised one, and the first alert):", ""]
    for game in results:
        for preset in ("starpo", "starpo-s"):
            rows = [r for r in _read_csv(out / game / preset / "metrics.csv") if r.get("alerts")]
            first = f"; first: {rows[0]['alerts']}" if rows else ""
            lines.append(f"- {game} {preset}: {', '.join(r['step'] for r in rows) or 'none'}{first}")
    lines += ["", "Mean seconds per RL step (rollout + update; 2 CPU cores shared with other jobs):", ""]
    for game in results:
        for preset in ("starpo", "starpo-s"):
            rows = _read_csv(out / game / preset / "metrics.csv")
            if rows:
                mean = sum(float(r["time/rollout_s"]) + float(r["time/update_s"]) for r in rows) / len(rows)
                lines.append(f"- {game} {preset}: {mean:.1f} s over {len(rows)} steps")
    (DOCS / "results.md").write_text("\n".join(lines) + "\n")

    for game in results:
        if not any((out / game / preset / "metrics.csv").is_file() for preset in ("starpo", "starpo-s")):
            continue
        # success first; then the Echo Trap's signs: falling spread and entropy, spiking gradients
        keys = ("rollout/success_rate", "eval/success_rate", "rollout/format_error_rate", "rollout/in_group_std",
                "losses/entropy", "losses/grad_norm_actor")
        fig, axes = plt.subplots(2, 3, figsize=(13, 6.4))
        for preset in ("starpo", "starpo-s"):
            rows = _read_csv(out / game / preset / "metrics.csv")
            if not rows:
                continue
            for ax, key in zip(axes.flat, keys):
                points = [(int(r["step"]), float(r[key])) for r in rows if r.get(key) not in (None, "")]
                if points:
                    ax.plot(*zip(*points), marker="o", ms=3 if key != "eval/success_rate" else 5, label=preset)
                ax.set_title(key + (" (64 val episodes, T=0.5)" if key == "eval/success_rate" else ""))
                ax.set_xlabel("step")
        axes.flat[0].legend()
        fig.suptitle(f"{game}: RL from the format-only SFT start (rollouts on train seeds at T=1, and validation)")
        fig.tight_layout()
        fig.savefig(DOCS / f"{game}_curves.png", dpi=90)
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run the baselines for the chosen games and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(GAMES), help=f"comma-separated subset of {list(GAMES)}")
    parser.add_argument("--out", default="runs/baselines", help="directory for checkpoints, runs and evaluations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docs", action="store_true", help="write experiments/baselines/results.md and the curves")
    parser.add_argument("--sft-only", action="store_true", help="only the two SFT models and their evaluation")
    parser.add_argument("--from-docs", action="store_true",
                        help="only redraw experiments/baselines/results.md and the curves from experiments/baselines/starpo/")
    args = parser.parse_args(argv)
    if args.from_docs:
        if not (COMPACT / "results.json").is_file():
            parser.error(f"{COMPACT / 'results.json'} does not exist; run with --docs first")
        write_docs(json.loads((COMPACT / "results.json").read_text()), COMPACT)
        return 0
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    unknown = set(games) - set(GAMES)
    if unknown:
        parser.error(f"unknown games {sorted(unknown)}; choose from {list(GAMES)}")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    for game in games:
        result = run_game(GAMES[game], out, args.seed, rl=not args.sft_only)
        # re-read before writing: runs for other games may have added theirs meanwhile
        results = json.loads(results_path.read_text()) if results_path.is_file() else {}
        results[game] = result
        results_path.write_text(json.dumps(results, indent=2) + "\n")
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    if args.docs:
        export_compact(results, out)
        write_docs(json.loads((COMPACT / "results.json").read_text()), COMPACT)
    print(json.dumps({g: {m: {t: round(e["success"], 3) for t, e in v.items() if isinstance(e, dict)}
                          for m, v in r["models"].items()} for g, r in results.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
