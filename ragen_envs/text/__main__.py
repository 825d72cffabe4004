"""Print the chat a model would see: ``python -m ragen_envs.text simple_sokoban --seed 0``.

Optional replies (``--reply``, repeatable) are played first, so later turns can be inspected too.
"""

from __future__ import annotations

import argparse

from ragen_envs.images import image_digest, png_from_data_url
from ragen_envs.text.config import CONTEXT_MODES, ProtocolConfig
from ragen_envs.text.episode import TextEpisode
from ragen_envs.text_game import OBSERVATION_FORMATS


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print every message of the chat as it stands."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.text", description=__doc__.splitlines()[0])
    parser.add_argument("env", help="preset name (simple_sokoban, frozenlake, bandit, ...) or Gymnasium id")
    parser.add_argument("--seed", type=int, default=0, help="level seed passed to reset")
    parser.add_argument("--format", default="grid", choices=OBSERVATION_FORMATS, help="observation format")
    parser.add_argument("--context", default="full", choices=CONTEXT_MODES, help="context mode")
    parser.add_argument("--no-think", action="store_true", help="accept <answer> without <think>")
    parser.add_argument("--reply", action="append", default=[], help="a model reply to play before printing")
    args = parser.parse_args(argv)
    config = ProtocolConfig(observation_format=args.format, context=args.context, think=not args.no_think)
    try:  # an unknown game, a bad seed or a config no level fits: one line and exit status 2, not a traceback
        episode = TextEpisode(args.env, args.seed, config)
    except (ValueError, TypeError, RuntimeError) as error:
        parser.error(str(error))
    for reply in args.reply:
        if not episode.done:
            episode.step(reply)
    for message in episode.messages:
        print(f"--- {message['role']} ---")
        content = message["content"]
        if isinstance(content, list):  # image observations: the text parts, each picture by its digest
            content = "".join(
                part["text"] if part["type"] == "text"
                else f"[image {image_digest(png_from_data_url(part['image_url']['url']))}]" for part in content)
        print(content)
    if episode.done:
        print(f"--- episode over: {episode.end_reason}, total reward {episode.total_reward:g} ---")


if __name__ == "__main__":
    main()
