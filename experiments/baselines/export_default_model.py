"""Copy the best tiny Sokoban baseline into ``ragen_eval/default_model/``, the embedded ``ragen-eval`` default.

Picks, among the SimpleSokoban models of a baselines run (``results.json`` of run_baselines.py),
the one with the highest test success, copies its weights (in half precision, so the base wheel
stays small) and tokenizer (only the files a ``transformers`` / vLLM load needs), and writes ``README.md`` and ``provenance.json`` with the exact
commands that reproduce it and the figures it scored.

    python experiments/baselines/export_default_model.py --results runs/baselines/results.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "ragen_eval" / "default_model"
#: What loading the checkpoint needs; optimizer states, critics and logs stay behind.
#: Models are compared at ragen-eval's default sampling temperature, the one the default model is used at.
SELECT_TEMPERATURE = 0.5
FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "chat_template.jinja")
WEIGHTS = "model.safetensors"


def write_half_precision(source: Path, target: Path) -> None:
    """Copy a safetensors file with its float tensors stored as float16 (half the bytes).

    config.json keeps the dtype the model was trained in, and transformers loads to that dtype, so
    the model still computes in float32; greedy replies of the shipped model were unchanged in 23 of 24
    episodes when this was introduced.
    """
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(source), "pt") as f:
        metadata = f.metadata()
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    half = {name: t.to(torch.float16).contiguous() if t.is_floating_point() else t for name, t in tensors.items()}
    save_file(half, str(target), metadata=metadata)
    target.chmod(0o644)  # save_file may create the file private; the package must be readable by all


def install_checkpoint(source: Path) -> None:
    """Replace the embedded model with ``source``'s checkpoint files, the weights in half precision."""
    if TARGET.exists():
        shutil.rmtree(TARGET)
    TARGET.mkdir(parents=True)
    for f in FILES:
        if f == WEIGHTS:
            write_half_precision(source / f, TARGET / f)
        else:
            shutil.copyfile(source / f, TARGET / f)  # plain copy: no private permissions into the package


def main(argv: list[str] | None = None) -> int:
    """Export the best SimpleSokoban model of a baselines run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="runs/baselines/results.json", help="results.json of run_baselines.py")
    parser.add_argument("--game", default="simple_sokoban")
    parser.add_argument("--trained-at", metavar="COMMIT", default=None,
                        help="the commit whose code trained the model, when it is not the current one (the "
                             "reproduce commands then start with a checkout of it)")
    args = parser.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    if args.game not in results:
        parser.error(f"{args.results} has no {args.game!r} results; run run_baselines.py --games {args.game} first")
    models = results[args.game]["models"]
    key = f"t{SELECT_TEMPERATURE}"
    name, entry = max(models.items(), key=lambda item: (item[1][key]["success"], -item[1][key]["format_error_rate"]))
    best = {**entry[key], "path": entry["path"]}
    source = Path(entry["path"])
    missing = [f for f in FILES if not (source / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{source} lacks {missing}; is it a transformers checkpoint?")
    install_checkpoint(source)
    spec = results[args.game]["spec"]
    provenance = {"game": args.game, "stage": name, "source": str(source), "test": {k: best[k] for k in
                  ("success", "reward", "format_error_rate", "episodes")}, "eval_command": best["command"],
                  "spec": spec, "trained_at_commit": args.trained_at}
    (TARGET / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    size_mb = sum((TARGET / f).stat().st_size for f in FILES) / 1e6
    (TARGET / "README.md").write_text(_readme(args.game, name, best, size_mb, spec["max_new_tokens"],
                                              args.trained_at))
    print(f"exported {name} ({source}) to {TARGET}: {size_mb:.1f} MB, test success {best['success']:.3f}")
    return 0


def _readme(game: str, name: str, best: dict, size_mb: float, max_tokens: int, commit: str | None) -> str:
    checkout = "" if commit is None else (
        f"# the code that trained it (later commits changed the tiny tokenizer and the specs)\n"
        f"git worktree add /tmp/ragen-{commit} {commit} && cd /tmp/ragen-{commit}\n")
    return f"""<!-- generated by experiments/baselines/export_default_model.py; do not edit -->
# The embedded default model of `ragen-eval`

A tiny Qwen2-architecture causal LM ({size_mb:.1f} MB, random init, trained only on this machine's CPU):
the best {game} model of the tiny baselines ({name}). See experiments/baselines/README.md for how every baseline
was trained and how they compare.

Test split ({best['episodes']} episodes, temperature {SELECT_TEMPERATURE}): success {best['success']:.3f},
mean reward {best['reward']:.3f}, format-error rate {best['format_error_rate']:.3f}.

Reproduce (from the repository root):

```
{checkout}python experiments/baselines/run_baselines.py --games {game} --out runs/baselines --docs
python experiments/baselines/export_default_model.py --results runs/baselines/results.json --game {game}
ragen-eval evaluate --model ragen_eval/default_model --backend hf --env {game} --split test \\
    --episodes {best['episodes']} --temperature {SELECT_TEMPERATURE} --sampling-seed 0 --max-tokens {max_tokens}
```
"""


if __name__ == "__main__":
    sys.exit(main())
