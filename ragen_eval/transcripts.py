"""Per-episode transcripts for ``ragen-eval show RUN --episode ENV:SEED``.

Each turn shows the observation and the reply, then the thought with every rule-extracted claim
marked TRUE/FALSE (or UNCHECKED) and the cells it refers to, in the coordinate base the agent was
shown (:func:`ragen_eval.consistency.transcript.mark_claims`), whether the thought's plan agrees
with the answer, and, when the run was judged, the judge's claims beside the rules' verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragen_eval.consistency.scoring import score_episode
from ragen_eval.consistency.transcript import mark_claims

_VERDICT = {True: "TRUE", False: "FALSE", None: "UNCHECKED"}


def _plan_line(score: Mapping[str, Any]) -> str | None:
    if score.get("plan") is None:
        return None
    verdict = {True: "agrees with", False: "differs from", None: "cannot be compared with"}[score.get("plan_agrees")]
    return f"plan {score['plan']} {verdict} the answer {score.get('answer_actions')}"


def _judge_lines(judged: Mapping[str, Any], rule_claims: list[Mapping[str, Any]]) -> list[str]:
    if judged.get("error"):
        return [f"judge: no verdicts ({judged['error']})"]
    rules = {c["canonical"]: c["verdict"] for c in rule_claims}
    lines = [f"judge: {len(judged['claims'])} claims" + (f", {judged['dropped']} outside the grammar"
                                                          if judged.get("dropped") else "")]
    for claim in judged["claims"]:
        canonical = claim["canonical"]
        rule = f"rules: {_VERDICT[rules[canonical]]}" if canonical in rules else "rules: not extracted"
        lines.append(f"  [{_VERDICT[claim.get('verdict')]} {claim['canonical']}] {claim.get('text', '')!r} ({rule})")
    return lines


def transcript(record: Mapping[str, Any], judgement: Mapping[str, Any] | None = None) -> str:
    """The episode as text, with its claims marked; ``judgement`` is its ``judge.jsonl`` line, if any."""
    sample = f" sample {record['sample']}" if "sample" in record else ""
    lines = [f"# {record['env']} seed {record['seed']}{sample}: success={record['success']} "
             f"reward={record['total_reward']:.3f} end={record['end_reason']}"
             + (f" error={record['error']}" if record.get("error") else "")]
    turns = record.get("turns") or []
    scores = score_episode(record)["turns"] if turns else []
    judged_turns = judgement["turns"] if judgement is not None else [None] * len(turns)
    base = int((record.get("protocol") or {}).get("coordinate_base", 0))
    for turn, score, judged in zip(turns, scores, judged_turns):
        lines += [f"\n## turn {turn['turn']}", turn["observation"], "\n>>> model:", turn["response"]]
        # The same text score_turn read, so the claims' start/end offsets point into it.
        think = turn.get("think") or turn.get("reasoning") or ""
        if think.strip():
            counts = f"{score['n_true']} true, {score['n_false']} false, {score['n_unverifiable']} unchecked"
            lines += [f"\n>>> thought, claims marked ({counts}; cells {base}-based):",
                      mark_claims(think, score["claims"], base)]
            lines += [x for x in [_plan_line(score)] if x]
            if judged is not None:
                lines += _judge_lines(judged, score["claims"])
        # The turn's reward with its format penalty, so the turns add up to the episode's total_reward.
        earned = turn["reward"] + turn.get("penalty", 0.0)
        lines.append(f"\nexecuted {turn['actions_executed']} reward {earned:+.3f}"
                     + ("" if turn["format_ok"] else f" (format penalty {turn.get('penalty', 0.0):+.3f}) "
                                                     f"format errors {turn['format_errors']}"))
    return "\n".join(lines)
