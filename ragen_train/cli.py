"""``ragen-train``: StarPO / StarPO-S training, and the SFT warm start.

    ragen-train --config configs/bandit_starpo_s.yaml key=value ...   # RL (this module)
    ragen-train sft --model tiny --env bandit --mode format ...        # SFT (ragen_train.sft)
    torchrun --nproc_per_node 2 -m ragen_train.cli --config FILE       # DDP (gloo on CPU, NCCL on GPU)

``key=value`` overrides any field of :class:`ragen_train.config.TrainConfig` (dotted keys reach into
``env_config`` and ``protocol``, values are YAML scalars: the one grammar of :mod:`ragen_envs.overrides`,
shared with ``ragen-eval`` and ``ragen-train sft``); ``--help-config`` lists them all with their defaults.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence

from ragen_envs.config_docs import config_help, game_config_help
from ragen_train.config import TrainConfig, load_config

#: Modules of the ``[train]`` extra that every ragen-train command needs.
TRAIN_MODULES = ("torch", "transformers", "yaml")


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the RL entry point."""
    parser = argparse.ArgumentParser(
        prog="ragen-train", description=__doc__.split("\n\n")[0],
        epilog="Subcommand: `ragen-train sft --help` for the supervised warm start.",
        allow_abbrev=False)  # no prefix matching: a shortened or misspelt flag is an error, not another flag
    parser.add_argument("--config", default=None, help="YAML file of TrainConfig fields (see configs/)")
    parser.add_argument("--help-config", action="store_true",
                        help="list every config key with default and help, and the game config of env=NAME")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides; they win over the file")
    return parser


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
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config, args.overrides)
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
    from ragen_train.trainer import train

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
