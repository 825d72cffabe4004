"""Where T1's thoughts go wrong: claim accuracy by claim kind and turn of the episode, per val preset.

    python experiments/thinking_model/claims_by_turn.py runs/thinking_model/eval [NAME [LABEL]]

Scores every turn of a model's val evaluations (``NAME-PRESET-val``, written by evaluate.sh; NAME ``t1`` unless
given; presets it has not finished are left out) with the harness's checker
(``ragen_eval.consistency.score_episode``) and pools the claims by kind (position, relation, prediction, status)
for the first turn, the second, and the third and later; and, on the first turn, position accuracy by the object the
claim places (player, box, target, ...), relation accuracy by the thing it places (target, goal, hole), and how the
cell the thought gives the player ("I am at (r, c)") compares with the true one; and from the third turn on,
position accuracy by object again (a moved box or the player against a target, which never moves); and position
accuracy by the prompt's length in tokens, over every turn. Writes
claims_by_turn.json beside this file (LABEL ``t1``) or claims_by_turn-LABEL.json; LABEL is NAME unless given, so a
second scoring of runs that keep an earlier check's NAME (a lineage run again) does not overwrite its data.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ragen_eval.consistency.scoring import aggregate, positions_by_object, relations_by_subject, score_episode
from ragen_eval.jsonl_store import read_jsonl

HERE = Path(__file__).resolve().parent
PRESETS = ("sokoban", "simple_sokoban", "simple_sokoban_hard", "larger_sokoban", "larger_sokoban_hard", "boxoban",
           "boxoban_hard", "frozenlake", "frozenlake_8x8", "frozenlake_det")
TURNS = ("first", "second", "third and later")
KINDS = ("position", "relation", "prediction", "status")
#: Prompt-length bins, in the model's tokens (as the harness counted them), for position accuracy by prompt length;
#: the thinking models' position embeddings and SFT sequences stop at 4,096.
PROMPT_BIN = 1024


def score_evaluation(episodes: Path) -> dict[str, dict[str, Any]]:
    """One pass over the episodes in ``episodes``, keyed as the written JSON is, in its order: ``by_turn``, for each
    turn group each claim kind's count and accuracy; ``positions_first_turn_by_object`` and
    ``relations_first_turn_by_subject``, the first turn's position claims' count and accuracy by the object they place
    (``at(OBJECT, ...)``) and its relation claims' by the thing they place (``rel(THING, ...)``);
    ``player_first_turn``, how the player's cell the first turn's thought states (its ``at(player, ...)`` claim, in
    0-based cells whatever the protocol's coordinate base) compares with the true one, counted over the episodes;
    ``positions_later_turns_by_object``, the third and later turns' position claims by the object they place; and
    ``positions_by_prompt_tokens``, every turn's position claims by the length of its prompt (``"0-1023"``,
    ``"1024-2047"``, ... tokens; turns whose prompt the backend did not count are left out of these bins)."""
    groups: dict[str, list[dict]] = {name: [] for name in TURNS}
    cells: Counter[str] = Counter()
    by_length: dict[int, list[dict]] = {}
    for record in read_jsonl(episodes):
        turns = score_episode(record)["turns"]
        for index, (turn, played) in enumerate(zip(turns, record["turns"])):
            groups[TURNS[min(index, 2)]].append(turn)
            tokens = played["completion"]["prompt_tokens"]
            if tokens is not None:  # agents without a tokenizer (random, scripted) count none
                by_length.setdefault(tokens // PROMPT_BIN, []).append(turn)
        cells[_compare(turns[0], record["turns"][0]["state_before"]["player"])] += 1
    return {"by_turn": {name: {kind: aggregate(turns)["by_kind"][kind] for kind in KINDS}
                        for name, turns in groups.items()},
            "positions_first_turn_by_object": positions_by_object(groups["first"]),
            "relations_first_turn_by_subject": relations_by_subject(groups["first"]),
            "player_first_turn": dict(cells),
            "positions_later_turns_by_object": positions_by_object(groups["third and later"]),
            "positions_by_prompt_tokens": {f"{b * PROMPT_BIN}-{(b + 1) * PROMPT_BIN - 1}":
                                           aggregate(by_length[b])["by_kind"]["position"] for b in sorted(by_length)}}


def _compare(scored_turn: dict, true: list[int]) -> str:
    stated = next((claim["cells"][0] for claim in scored_turn["claims"]
                   if claim["canonical"].startswith("at(player,") and claim["cells"]), None)
    if stated is None:
        return "no claim"
    if stated == list(true):
        return "right"
    return ("right row, wrong column" if stated[0] == true[0] else "right column, wrong row" if stated[1] == true[1]
            else "both wrong")


def _listed(by_thing: dict[str, dict[str, float | int]]) -> str:
    """``thing accuracy (claims)`` for each thing of a ``positions_by_object`` / ``relations_by_subject`` split."""
    return " ".join(f"{thing} {figures['claim_accuracy']:.3f} ({figures['n_claims']})"
                    for thing, figures in by_thing.items())


def main(argv: list[str] | None = None) -> int:
    """Score the evaluations under the given directory and write claims_by_turn[-LABEL].json; 2 if there are none."""
    args = argv if argv is not None else sys.argv[1:]
    runs, name = Path(args[0]), (args[1] if len(args) > 1 else "t1")
    label = args[2] if len(args) > 2 else name
    episodes = {preset: runs / f"{name}-{preset}-val" / "episodes.jsonl" for preset in PRESETS}
    episodes = {preset: path for preset, path in episodes.items() if (path.parent / "summary.json").is_file()}
    if not episodes:  # nothing to score: say so rather than write an empty file
        print(f"claims_by_turn.py: no finished {name}-PRESET-val evaluation of a grid preset under {runs}",
              file=sys.stderr)
        return 2
    scored = {preset: score_evaluation(path) for preset, path in episodes.items()}
    out = {key: {preset: result[key] for preset, result in scored.items()} for key in next(iter(scored.values()))}
    written = HERE / ("claims_by_turn.json" if label == "t1" else f"claims_by_turn-{label}.json")
    written.write_text(json.dumps(out, indent=1) + "\n")
    for preset, groups in out["by_turn"].items():
        cells = [f"{kind[:4]} {g[kind]['claim_accuracy']:.3f} ({g[kind]['n_claims']})" for g in groups.values()
                 for kind in ("position", "relation", "prediction") if g[kind]["n_claims"]]
        print(preset, "|", " ".join(cells), "| first-turn positions:",
              _listed(out["positions_first_turn_by_object"][preset]), "| relations:",
              _listed(out["relations_first_turn_by_subject"][preset]), "| player, first turn:",
              out["player_first_turn"][preset], "| positions, third turn on:",
              _listed(out["positions_later_turns_by_object"][preset]), "| positions by prompt tokens:",
              _listed(out["positions_by_prompt_tokens"][preset]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
