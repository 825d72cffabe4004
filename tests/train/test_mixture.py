"""Game mixtures: the config grammar, each step's groups, per-game filtering, and per-game metrics that add up."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragen_train.config import MixtureGame, load_config
from ragen_train.filtering import select_by_game, select_groups

MIXTURE = "env=[{name: bandit, groups: 2}, {name: frozenlake, groups: 1, env_config: {is_slippery: false}}]"


def test_mixture_grammar_and_errors():
    config = load_config(None, ["env=[bandit, {name: frozenlake, groups: 3}]", "env_groups=2"])
    assert config.games() == [MixtureGame("bandit", 2, {}), MixtureGame("frozenlake", 3, {})]
    assert config.num_groups == 5
    one = load_config(None, ["env=frozenlake", "env_config.is_slippery=false", "env_groups=4"])
    assert one.games() == [MixtureGame("frozenlake", 4, {"is_slippery": False})] and one.num_groups == 4
    for bad, message in [
        (["env=[bandit, frozenlake]", "env_config.is_slippery=false"], "each entry its own"),
        (["env=[bandit, bandit]"], "each game once"),
        (["env=[{name: bandit, group: 2}]"], "unknown mixture keys"),
        (["env=[{name: bandit, groups: 0}]"], "groups must be a positive int"),
        (["env=[{name: frozenlake, env_config: {heigth: 3}}]"], "heigth"),
        (["env=[]"], "non-empty list"),
        (["env=[sokobann]"], "sokobann"),
    ]:
        with pytest.raises((ValueError, TypeError), match=message):
            load_config(None, bad)


def test_per_game_filter_is_select_groups_within_each_game():
    rewards = np.array([[10, 0, 10, 0], [0, 0, 0, 10], [1, 0, 1, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]],
                       dtype=float)
    games = ["sokoban", "sokoban", "sokoban", "bandit", "bandit", "bandit"]
    per_game = select_by_game(rewards, games, keep_ratio=0.34)
    expected = [g for g in select_groups(rewards[:3], keep_ratio=0.34).kept] + \
        [3 + g for g in select_groups(rewards[3:], keep_ratio=0.34).kept]
    assert per_game.kept == tuple(expected) == (0, 3)
    # pooled, Sokoban's tenfold rewards take the whole budget of two groups
    assert select_groups(rewards, keep_ratio=0.34).kept == (0, 1)
    assert per_game.num_by_spread == 2 and per_game.spreads == select_groups(rewards).spreads


@pytest.mark.slow
def test_a_mixture_run_follows_the_mixture_and_its_metrics_add_up(tiny_model_dir, tmp_path):
    from ragen_train.run_log import read_metrics
    from ragen_train.trainer import step_seeds, train

    config = load_config(None, [
        f"model={tiny_model_dir}", MIXTURE, "group_size=2", "max_new_tokens=8", "protocol.max_turns=2",
        "total_steps=2", f"output_dir={tmp_path}", "plot_every=0", "ppo_mini_batch_size=6", "micro_batch_size=3",
        "save_rollouts=true", "eval_every=2", "eval_episodes=2", "rollout_filter_ratio=0.5",
        "collapse_signals_replies=1"])
    run = train(config)
    assert run.name == "bandit+frozenlake__starpo-s__0"
    rows = read_metrics(run / "metrics.jsonl")
    for step, row in enumerate(rows):
        records = [json.loads(line) for line in
                   (run / "rollouts" / f"step_{step + 1:06d}" / "episodes.jsonl").read_text().splitlines()]
        seeds = step_seeds(config, step)
        # two Bandit groups, then one FrozenLake group, each of group_size members on its group's seed
        assert [(r["env"], r["seed"], r["group"]) for r in records] == [
            (env, seeds[g], g) for g, env in enumerate(["bandit", "bandit", "frozenlake"]) for _ in range(2)]
        assert records[-1]["env_config"]["is_slippery"] is False
        games = {"bandit": 2, "frozenlake": 1}
        episodes = {game: row[f"rollout/{game}/episodes"] for game in games}
        assert episodes == {"bandit": 4, "frozenlake": 2} and row["rollout/episodes"] == 6
        for key in ("success_rate", "mean_reward", "overflowed"):  # per episode
            pooled = sum(episodes[g] * row[f"rollout/{g}/{key}"] for g in games) / 6
            assert row[f"rollout/{key}"] == pytest.approx(pooled), key
        turns = {g: episodes[g] * row[f"rollout/{g}/mean_turns"] for g in games}
        for key in ("format_error_rate", "completion_tokens_per_turn"):  # per turn
            pooled = sum(turns[g] * row[f"rollout/{g}/{key}"] for g in games) / sum(turns.values())
            assert row[f"rollout/{key}"] == pytest.approx(pooled), key
        for key in ("in_group_std", "kept_fraction"):  # per group
            pooled = sum(n * row[f"rollout/{g}/{key}"] for g, n in games.items()) / 3
            assert row[f"rollout/{key}"] == pytest.approx(pooled), key
        # per game, half of Bandit's two groups and FrozenLake's one group (at least one each)
        assert (row["rollout/bandit/kept_fraction"], row["rollout/frozenlake/kept_fraction"]) == (0.5, 1.0)
        assert {"rollout/reply_mi", "losses/policy_loss"} <= set(row)
    last = rows[-1]
    assert last["eval/bandit/episodes"] == last["eval/frozenlake/episodes"] == 2 and last["eval/episodes"] == 4
    assert last["eval/success_rate"] == pytest.approx(
        (last["eval/bandit/success_rate"] + last["eval/frozenlake/success_rate"]) / 2)
