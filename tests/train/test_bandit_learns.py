"""The CI proof that RL learns: from a format-only warm start, StarPO-S finds Bandit's high-EV arm.

The format-only SFT model has seen random arm choices only, so whatever preference it ends with
after RL is RL's own. Success on Bandit means pulling the arm with the higher expected reward
(Dragon: 1.0 with probability 0.25, EV 0.25; Phoenix: 0.1 always). Both models are scored on the
test split through ragen-eval's runner (hf backend) at its default temperature 0.5.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from ragen_eval.agents.base import SamplingParams  # noqa: E402
from ragen_eval.cli import evaluate  # noqa: E402
from ragen_eval.config import EvalConfig  # noqa: E402
from ragen_train.checkpoint import latest_checkpoint  # noqa: E402
from ragen_train.config import load_config  # noqa: E402
from ragen_train.demos import DemoConfig  # noqa: E402
from ragen_train.sft import SFTConfig, run_sft  # noqa: E402
from ragen_train.trainer import train  # noqa: E402

TEST_EPISODES = 128


def _test_success(model_dir, run_path) -> float:
    config = EvalConfig(model=str(model_dir), backend="hf", envs=["bandit"], episodes=TEST_EPISODES, split="test",
                        sampling=SamplingParams(temperature=0.5, max_tokens=40, seed=0), concurrency=TEST_EPISODES)
    summary, _ = evaluate(config, run_path, progress=False)
    return summary["overall"]["success_rate"]


@pytest.mark.slow
def test_starpo_s_learns_the_high_ev_arm(tiny_model_dir, tmp_path):
    warm = run_sft(SFTConfig(model=str(tiny_model_dir), out=str(tmp_path / "format-sft"),
                             demos=DemoConfig(env="bandit", mode="format", num_episodes=512, seed=0),
                             epochs=2, lr=2e-3, seed=0))
    before = _test_success(warm, tmp_path / "eval-before")

    run = train(load_config(None, [
        "preset=starpo-s", "env=bandit", f"model={warm}", f"output_dir={tmp_path}", "run_name=rl",
        "total_steps=12", "env_groups=8", "group_size=8", "max_new_tokens=40", "actor_lr=2.5e-4", "critic_lr=1e-3",
        "micro_batch_size=8", "save_every=0", "plot_every=0"]))
    after = _test_success(latest_checkpoint(run), tmp_path / "eval-after")
    print(f"high-EV arm on {TEST_EPISODES} test episodes: format-only start {before:.3f}, after StarPO-S {after:.3f}")

    assert before < 0.6, f"the format-only start already prefers the high-EV arm ({before:.2f})"
    assert after >= 0.9, f"StarPO-S reached only {after:.2f} high-EV choices on the test split (start {before:.2f})"
