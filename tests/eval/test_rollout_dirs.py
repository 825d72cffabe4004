"""A training step's saved rollouts (``rollouts/step_N/``) open in the consistency tools like a run does.

The directory is written by ``ragen_train.trainer.save_rollouts`` itself (the code path of
``save_rollouts=true``), from real episodes: a group of two per level, so two records share each
``(env, seed)`` and only their ``sample`` tells them apart. ``ragen-eval judge`` then judges it with a
judge that answers the rules' own claims, so every figure of rule/judge agreement is known exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragen_envs.text import TextEpisode, format_reply, random_actions

from ragen_eval.agents.base import Completion, SamplingParams
from ragen_eval.cli import main
from ragen_eval.consistency import score_turn
from ragen_eval.run_dir import JUDGE_FILE
from ragen_eval.jsonl_store import read_jsonl
from ragen_eval.serve import ServeConfig, serve_in_thread

GROUPS, GROUP_SIZE = 2, 2


def _thought(episode: TextEpisode, sample: int) -> str:
    row, col = episode.game.state_dict()["player"]
    return f"Sample {sample} of level {episode.seed}: I am at ({row}, {col}). A wall is at (0, 0). I will go up."


@pytest.fixture()
def step_dir(tmp_path):
    """``rollouts/step_000001`` of a run, written by the trainer's own ``save_rollouts``."""
    pytest.importorskip("torch")
    from ragen_train.config import load_config
    from ragen_train.rollout import RolloutBatch, Trajectory
    from ragen_train.trainer import save_rollouts, step_seeds

    config = load_config(None, ["env=sokoban", f"env_groups={GROUPS}", f"group_size={GROUP_SIZE}",
                                f"output_dir={tmp_path}", "run_name=r"])
    trajectories = []
    for group, seed in enumerate(step_seeds(config, 0)):
        for sample in range(GROUP_SIZE):  # the members of a group play the same level differently
            episode = TextEpisode(config.env, seed, config=config.protocol)
            rng = np.random.default_rng(sample)
            while not episode.done:
                episode.step(format_reply(random_actions(episode, rng), "||", _thought(episode, sample)))
            trajectories.append(Trajectory(group=group, record=episode.record()))
    batch = RolloutBatch(trajectories, num_groups=GROUPS, group_size=GROUP_SIZE)
    return save_rollouts(batch, [0], config, 1, tmp_path / "r")


class RuleJudge:
    """A judge that answers, for each thought, exactly the claims and verdicts the rules give it."""

    name = "rules"

    def __init__(self, records: list[dict]) -> None:
        self.answers = {}
        for record in records:
            for turn in record["turns"]:
                score = score_turn(turn, game="sokoban")
                self.answers[turn["think"]] = [{"text": c["text"], "claim": c["canonical"], "verdict": c["verdict"]}
                                               for c in score["claims"]]

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None):
        thought = messages[-1]["content"].rpartition("THOUGHT:\n")[2]
        return [Completion(text=json.dumps({"claims": self.answers[thought]}), finish_reason="stop")] * n

    async def aclose(self) -> None:
        return None


def test_ragen_eval_judge_judges_every_sample_of_a_saved_rollout_step(step_dir, capsys):
    episodes = (step_dir / "episodes.jsonl").read_text()
    records = read_jsonl(step_dir / "episodes.jsonl")
    assert len(records) == GROUPS * GROUP_SIZE and not (step_dir / "summary.json").exists()
    assert len({(r["env"], r["seed"]) for r in records}) == GROUPS  # two samples per level

    with serve_in_thread(ServeConfig(port=0, model_name="rules"), RuleJudge(records)) as judge_url:
        capsys.readouterr()  # the server's start-up lines
        code = main(["judge", str(step_dir), "--judge-model", "rules", "--judge-base-url", judge_url,
                     "--no-progress", "--max-retries", "1", "--timeout", "20", "--json"])
    assert code == 0
    judged = json.loads(capsys.readouterr().out)

    assert (step_dir / "episodes.jsonl").read_text() == episodes  # no sample dropped or rewritten
    entries = read_jsonl(step_dir / JUDGE_FILE)
    assert sorted((e["seed"], e["sample"]) for e in entries) == sorted((r["seed"], r["sample"]) for r in records)
    assert all(len(e["turns"]) == len(r["turns"]) for e, r in zip(entries, records))
    assert judged["episodes_done"] == judged["episodes_expected"] == GROUPS * GROUP_SIZE and judged["complete"]
    assert judged["judge"]["episodes_judged"] == GROUPS * GROUP_SIZE and judged["judge"]["complete"]
    agreement = judged["overall"]["judge_agreement"]
    n_claims = sum(len(RuleJudge(records).answers[t["think"]]) for r in records for t in r["turns"])
    assert agreement["n_turns"] == sum(len(r["turns"]) for r in records)
    assert agreement["claims_both"] == n_claims > 0 and agreement["claims_rule_only"] == 0
    assert agreement["claim_overlap"] == 1.0 and agreement["verdict_agreement"] == 1.0

    # The verdicts stay with the step directory: `show` reads the same summary back.
    assert main(["show", str(step_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["judge_agreement"] == agreement


def test_show_prints_every_sample_of_a_level_or_the_one_asked_for(step_dir, capsys):
    records = read_jsonl(step_dir / "episodes.jsonl")
    env, seed = records[0]["env"], records[0]["seed"]
    samples = sorted(r["sample"] for r in records if (r["env"], r["seed"]) == (env, seed))
    assert len(samples) == GROUP_SIZE > 1
    assert main(["show", str(step_dir), "--episode", f"{env}:{seed}"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# ")]
    assert [h.partition(" sample ")[2].partition(":")[0] for h in heads] == [str(s) for s in samples]
    assert main(["show", str(step_dir), "--episode", f"{env}:{seed}:{samples[-1]}"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# ")]
    assert len(heads) == 1 and heads[0].startswith(f"# {env} seed {seed} sample {samples[-1]}:")
    assert main(["show", str(step_dir), "--episode", f"{env}:{seed}:{GROUP_SIZE}"]) == 2  # no such sample

