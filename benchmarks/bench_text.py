"""Speed of the text protocol against the games it wraps.

For each game, 256 episodes are played in lockstep through ``EpisodeBatch`` with scripted replies
(random valid actions, a few malformed replies), timing ``prompts()`` + ``step()`` per turn. The
peer is the game itself: the very same actions are then replayed straight into fresh envs with
``env.step``, turn by turn across the batch (the same access pattern), and timed. The text layer's
cost per executed action is (text time - game time) / actions, and the goal is that it stays under
5x the game's cost per action. The game's own text
hooks (``state_dict``, ``observation_text``), which the protocol calls once after every turn that
executed an action, are timed separately so that their share is visible.

Times are CPU time of this process (``time.process_time``), so that other work on a shared machine
does not count against either side.

    python benchmarks/bench_text.py [--episodes 256] [--repeats 3] [--games sokoban,frozenlake,bandit]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragen_envs.text import EpisodeBatch, ProtocolConfig, make_env

GOAL_RATIO = 5.0


def scripted_replies(names: tuple[str, ...], count: int, per_turn: int, rng: np.random.Generator) -> list[str]:
    """Replies with 1..per_turn random valid actions; one in ten breaks the format."""
    replies = []
    for _ in range(count):
        if rng.random() < 0.1:
            replies.append("I think I should move, but I forgot the tags.")
            continue
        actions = [names[i] for i in rng.integers(0, len(names), size=int(rng.integers(1, per_turn + 1)))]
        answer = " || ".join(actions)
        replies.append(f"<think>Let me look at the board and plan a few moves.</think><answer>{answer}</answer>")
    return replies


def time_text_layer(game: str, seeds: list[int], seed: int) -> tuple[float, int, int, list[dict]]:
    """Seconds spent in prompts()+step() for a whole batch, turns played, actions executed, records."""
    batch = EpisodeBatch(game, seeds, ProtocolConfig())
    names = batch.episodes[0].game.action_names
    per_turn = batch.episodes[0].config.max_actions_per_turn
    rng = np.random.default_rng(seed)
    turns = 0
    elapsed = 0.0
    while not batch.done:
        replies = scripted_replies(names, len(batch.active), per_turn, rng)
        start = time.process_time()
        batch.prompts()
        batch.step(replies)
        elapsed += time.process_time() - start
        turns += len(replies)
    records = batch.records()
    return elapsed, turns, sum(r["num_actions"] for r in records), records


def time_game_only(game: str, records: list[dict]) -> tuple[float, float]:
    """The peer: CPU seconds in ``env.step`` replaying the same actions into fresh envs, turn by turn
    across the batch as the protocol does, and seconds in the game's own text hooks (``state_dict`` +
    ``observation_text``, which the protocol calls after every turn that moved)."""
    envs = [make_env(game, record["env_config"]) for record in records]
    plans = []
    for env, record in zip(envs, records):
        env.reset(seed=record["seed"])
        index = {name: i for i, name in enumerate(env.unwrapped.action_names)}
        plans.append([[index[name] for name in turn["actions_executed"]] for turn in record["turns"]])
    step_s = hooks_s = 0.0
    for turn in range(max(len(plan) for plan in plans)):
        for env, plan in zip(envs, plans):
            if turn >= len(plan):
                continue
            start = time.process_time()
            for action in plan[turn]:
                env.step(action)
            middle = time.process_time()
            if plan[turn]:
                env.unwrapped.state_dict()
                env.unwrapped.observation_text("grid")
            hooks_s += time.process_time() - middle
            step_s += middle - start
    for env in envs:
        env.close()
    return step_s, hooks_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=256, help="episodes per batch")
    parser.add_argument("--repeats", type=int, default=3, help="runs per game; the fastest of each side is reported")
    parser.add_argument("--games", default="sokoban,frozenlake,bandit", help="comma-separated presets")
    args = parser.parse_args()
    print("| game | turns | actions | text turns/s | text us/action | game step us/action | game hooks us/turn "
          f"| text-layer cost / game cost | same without the hooks | goal <= {GOAL_RATIO:g} |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for game in args.games.split(","):
        # Every repeat plays the same seeds with the same replies, so the work is identical and the
        # fastest time of each side is the least disturbed by other load on the machine.
        seeds = list(range(args.episodes))
        text_s = step_s = hooks_s = float("inf")
        for _ in range(args.repeats):
            text_run, turns, actions, records = time_text_layer(game, seeds, 0)
            step_run, hooks_run = time_game_only(game, records)
            text_s, step_s, hooks_s = min(text_s, text_run), min(step_s, step_run), min(hooks_s, hooks_run)
        overhead = (text_s - step_s) / step_s
        own = (text_s - step_s - hooks_s) / step_s
        print(f"| {game} | {turns} | {actions} | {turns / text_s:,.0f} | {1e6 * text_s / actions:.1f} | "
              f"{1e6 * step_s / actions:.1f} | {1e6 * hooks_s / turns:.1f} | {overhead:.2f}x | {own:.2f}x | "
              f"{'ok' if overhead <= GOAL_RATIO else 'MISSED'} |")


if __name__ == "__main__":
    main()
