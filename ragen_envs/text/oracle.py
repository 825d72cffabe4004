"""Turn a known solution (e.g. a certificate's optimal moves) into well-formed replies, turn by turn."""

from __future__ import annotations

from collections.abc import Sequence

from ragen_envs.text.config import RAGEN_BUDGETS, ProtocolConfig
from ragen_envs.text.parser import format_reply


def oracle_responses(
    solution: Sequence[str | int],
    config: ProtocolConfig | None = None,
    action_names: Sequence[str] | None = None,
) -> list[str]:
    """One reply per turn that plays ``solution`` in chunks of ``config.max_actions_per_turn``.

    ``solution`` holds action names, or action ids when ``action_names`` (the game's) is given. The
    replies follow ``config``'s answer format (think or no-think, separator); feed them to
    ``TextEpisode.step`` in order. Used by the harness's oracle agent and for supervised demos.
    """
    config = config or ProtocolConfig()
    if isinstance(solution, (str, bytes)):
        raise TypeError(f"solution must be a sequence of actions, not one string: {solution!r:.80}")
    names = []
    for action in solution:
        if isinstance(action, str) and action.strip():
            names.append(action)
        elif isinstance(action, int) and not isinstance(action, bool) and action_names is not None:
            if not 0 <= action < len(action_names):
                raise ValueError(f"action id {action} is outside 0..{len(action_names) - 1}")
            names.append(action_names[action])
        else:
            raise TypeError(
                f"solution items must be action names, or action ids together with action_names; got {action!r}"
            )
    per_turn = config.max_actions_per_turn or RAGEN_BUDGETS["max_actions_per_turn"]
    replies = []
    for start in range(0, len(names), per_turn):
        chunk = names[start : start + per_turn]
        thought = f"Following the known solution, moves {start + 1}-{start + len(chunk)}: {', '.join(chunk)}."
        replies.append(format_reply(chunk, config.action_separator, thought if config.think else None))
    return replies
