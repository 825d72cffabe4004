"""The oracle of ``openenv.yaml``: plays a running server with each level's certified optimal actions.

    python -m ragen_envs.openenv_server.oracle http://127.0.0.1:8000 [--env sokoban] [--episodes 16]

The server must run with ``--reveal-certificate`` (the certificate is the solution). Levels are the
first test-split seeds (``ragen_envs.splits``). Each turn sends the certificate's next actions, as many
as a turn allows; exits 1 unless every level whose certificate promises a sure win is won. The same
oracle as ``ragen-eval --model oracle``, over OpenEnv's client.
"""

from __future__ import annotations

import argparse
import sys

from openenv.core.generic_client import GenericEnvClient

from ragen_envs.splits import split_seeds


def play(url: str, env: str, seed: int) -> tuple[bool, float, bool]:
    """One episode: (won, total reward, whether the certificate promised a sure win)."""
    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(env=env, seed=seed)
        certificate = result.observation["certificate"]
        if certificate is None:
            raise SystemExit("the server sends no certificate: start it with --reveal-certificate")
        names = result.observation["info"]["action_names"]
        plan = [names[a] for a in certificate["optimal_actions"] or []]
        sure = certificate["optimal_actions"] is not None and certificate["optimal_success_probability"] == 1.0
        per_turn = result.observation["info"]["max_actions_per_turn"]
        while not result.done and plan:
            result = client.step({"actions": plan[:per_turn]})
            plan = plan[per_turn:]
        info = result.observation["info"]
        return bool(info["success"]), float(info["total_reward"]), sure


def main(argv: list[str] | None = None) -> int:
    """Play ``--episodes`` test levels; returns 0 when every sure win was won."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.openenv_server.oracle",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server's base URL")
    parser.add_argument("--env", default="sokoban", help="preset to play")
    parser.add_argument("--episodes", type=int, default=16, help="test-split levels to play")
    args = parser.parse_args(argv)
    missed = []
    rewards = []
    for seed in split_seeds("test", args.episodes, env=args.env):
        won, reward, sure = play(args.url, args.env, seed)
        rewards.append(reward)
        if sure and not won:
            missed.append(seed)
    print(f"oracle: {args.episodes - len(missed)}/{args.episodes} won on {args.env}, "
          f"reward min {min(rewards):.2f}, max {max(rewards):.2f}")
    if missed:
        print(f"oracle: lost certified wins on seeds {missed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
