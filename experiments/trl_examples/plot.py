"""Draw docs/images/trl_examples.png from the committed curves of the two TRL examples.

    python experiments/trl_examples/plot.py

Reads ``rollout_func.csv`` and ``environment_factory.csv`` beside this script (``step,reward,success``, one
row per GRPO step, as ``examples/trl_grpo_bandit.py --curve`` and ``examples/trl_tools_bandit.py --curve``
write them) and plots the mean episode reward and the success rate of each against the step.
"""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "docs" / "images" / "trl_examples.png"
RUNS = {"rollout_func (text protocol)": "rollout_func.csv", "environment_factory (tool calls)":
        "environment_factory.csv"}


def read_curve(path: Path) -> dict[str, list[float]]:
    """Columns of one curve CSV as floats."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {key: [float(row[key]) for row in rows] for key in ("step", "reward", "success")}


def main() -> None:
    """Plot reward and success per step for both hooks, side by side."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), constrained_layout=True)
    for label, name in RUNS.items():
        curve = read_curve(HERE / name)
        axes[0].plot(curve["step"], curve["reward"], marker=".", label=label)
        axes[1].plot(curve["step"], curve["success"], marker=".", label=label)
    axes[0].set(xlabel="GRPO step", ylabel="mean episode reward", title="Bandit: mean episode reward")
    axes[1].set(xlabel="GRPO step", ylabel="success (higher-EV arm)", title="Bandit: success", ylim=(-0.02, 1.02))
    axes[1].legend(loc="lower right", fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
