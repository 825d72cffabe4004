"""``ragen-train``: StarPO / StarPO-S training, and the SFT warm start.

    ragen-train --config configs/bandit_tiny_starpo_s.yaml --out DIR key=value ...   # RL (this module)
    ragen-train sft --model tiny --env bandit --mode format ...        # SFT (ragen_train.sft)
    torchrun --nproc_per_node 2 -m ragen_train.cli --config FILE       # DDP (gloo on CPU, NCCL on GPU)

``key=value`` overrides any field of :class:`ragen_train.config.TrainConfig` (dotted keys reach into
``env_config`` and ``protocol``, values are YAML scalars: the one grammar of :mod:`ragen_envs.overrides`,
shared with ``ragen-eval`` and ``ragen-train sft``); ``--help-config`` lists them all with their defaults.
``--out DIR`` names the parent directory of run directories, as in ``ragen-eval`` and ``ragen-train sft``
(the ``output_dir`` field; ``output_dir=DIR`` on the command line still works, with a deprecation note).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Sequence

from ragen_envs.config_docs import config_help, game_config_help
from ragen_envs.help_format import HelpFormatter, examples
from ragen_envs.overrides import parse_overrides
from ragen_train.config import TrainConfig, load_config

#: Modules of the ``[train]`` extra that every ragen-train command needs.
TRAIN_MODULES = ("torch", "transformers", "yaml")
#: Worked examples at the end of ``ragen-train --help`` (a test parses each and runs the config ones).
EXAMPLES = (
    ("StarPO-S on Bandit with the bundled tiny model, on the CPU",
     "ragen-train --config configs/bandit_tiny_starpo_s.yaml --out runs/train"),
    ("the same with overrides (they win over the file)",
     "ragen-train --config configs/bandit_tiny_starpo_s.yaml --out runs/train total_steps=50 kl_coef=0.01"),
    ("the resolved config of a FrozenLake run, without running it",
     "ragen-train --config configs/frozenlake_tiny_starpo_s.yaml protocol.max_turns=3 --print-config"),
    ("every config key with its default, and the game config of Sokoban", "ragen-train --help-config env=sokoban"),
    ("the supervised warm start (see ragen-train sft --help)",
     "ragen-train sft --model tiny --env bandit --mode format --episodes 64 --out runs/sft/bandit-format"),
)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the RL entry point."""
    parser = argparse.ArgumentParser(
        prog="ragen-train", formatter_class=HelpFormatter,
        description="StarPO / StarPO-S training of a model on a game. key=value overrides any TrainConfig field "
                    "(dotted keys reach into env_config and protocol; values are YAML scalars); --help-config "
                    "lists them all. Subcommand: ragen-train sft for the supervised warm start.",
        epilog=examples(EXAMPLES) + "\n  # several processes (DDP: gloo on the CPU, NCCL on GPUs)\n"
               "  torchrun --nproc_per_node 2 -m ragen_train.cli --config configs/bandit_tiny_starpo_s.yaml",
        allow_abbrev=False)  # no prefix matching: a shortened or misspelt flag is an error, not another flag
    parser.add_argument("--config", default=None, help="YAML file of TrainConfig fields (see configs/)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="parent directory of run directories: the output_dir field (default: the config's, "
                             f"else {TrainConfig().output_dir})")
    parser.add_argument("--help-config", action="store_true",
                        help="list every config key with default and help, and the game config of env=NAME")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides; they win over the file")
    return parser


def out_overrides(out: str | None, overrides: Sequence[str]) -> list[str]:
    """``overrides`` with ``--out DIR`` as the ``output_dir`` field; the old spelling ``output_dir=DIR`` still
    works, with a deprecation note on stderr, and the two together are a usage error."""
    old = "output_dir" in parse_overrides(overrides)
    if old and out is not None:
        raise ValueError("--out and output_dir= both set the output directory; give only --out")
    if old:
        print("ragen-train: note: output_dir=DIR is deprecated; use --out DIR (the spelling of ragen-eval and "
              "ragen-train sft)", file=sys.stderr)
    # JSON quoting keeps a name such as 2024 or yes a string (the values are YAML)
    return [*overrides, f"output_dir={json.dumps(out)}"] if out is not None else list(overrides)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragen-train`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    missing = [name for name in TRAIN_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        print(f"ragen-train: error: {', '.join(missing)} not installed; install ragen-envs[train]", file=sys.stderr)
        return 2
    # The training modules load torch, so they are imported only after the check above.
    if argv and argv[0] == "sft":
        from ragen_train import sft

        return sft.main(argv[1:])
    # intermixed: key=value overrides may come before and after --out and the other options
    args = build_parser().parse_intermixed_args(argv)
    try:
        overrides = out_overrides(args.out, args.overrides)
        config = load_config(args.config, overrides)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"ragen-train: error: {exc}", file=sys.stderr)
        return 2
    if args.help_config:
        print(config_help(TrainConfig))
        for game in config.games():
            print(f"game config of {game.name} (env_config.KEY=VALUE; in a mixture, the entry's env_config), "
                  "with the preset's values and env_config:")
            print(game_config_help(game.name, game.env_config))
        return 0
    if args.print_config:
        import yaml

        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    from ragen_train.run_dir import RunDirError
    from ragen_train.trainer import check_runnable, train

    try:
        check_runnable(config)
    except (ValueError, FileNotFoundError) as exc:
        print(f"ragen-train: error: {exc}", file=sys.stderr)
        return 2
    try:
        run_dir = train(config)
    except RunDirError as exc:  # every rank raises it; under torchrun, say it once
        if os.environ.get("RANK", "0") == "0":
            print(f"ragen-train: error: {exc}", file=sys.stderr)
        return 2
    if os.environ.get("RANK", "0") == "0":  # under torchrun, say it once
        print(f"run directory: {run_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
