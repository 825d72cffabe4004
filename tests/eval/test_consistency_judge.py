"""The LLM-judge mode, driven by a real in-process Agent that answers fixed text."""

from __future__ import annotations

import asyncio

import pytest

from ragen_eval.agents.base import Agent, Completion, SamplingParams
from ragen_eval.consistency import score_turn
from ragen_eval.consistency.judge import agreement, judge_messages, judge_turn, parse_judge_reply

S1_ROWS = ["######", "#    #", "# $  #", "#   @#", "# .  #", "######"]
S1 = {"game": "sokoban", "height": 6, "width": 6, "rows": S1_ROWS, "player": [3, 4], "boxes": [[2, 2]],
      "targets": [[4, 2]], "walls": [[r, c] for r in range(6) for c in range(6) if S1_ROWS[r][c] == "#"]}
TURN = {"state_before": S1, "think": "I am at (3,4). The box is at (2,3). The target is below the box.",
        "answer": "Up", "actions_executed": ["Up"]}


class ScriptedAgent:
    """An Agent that replies with fixed texts in turn and records the chats it was sent."""

    name = "scripted"

    def __init__(self, *replies: str, error: str | None = None) -> None:
        self.replies, self.error, self.seen = list(replies), error, []

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None):
        self.seen.append(messages)
        if self.error:
            return [Completion(text="", error=self.error)]
        return [Completion(text=self.replies.pop(0), finish_reason="stop")]

    async def aclose(self) -> None:
        return None


def run(coro):
    return asyncio.run(coro)


def test_scripted_agent_is_an_agent():
    assert isinstance(ScriptedAgent("x"), Agent)


def test_judge_sees_state_in_the_declared_base_and_the_thought():
    messages = judge_messages(S1, "I am at (4,5).", game="sokoban", coordinate_base=1, actions=["Up"])
    user = messages[-1]["content"]
    assert "player: (4, 5)" in user and "boxes: (3, 3)" in user and "I am at (4,5)." in user
    assert "1-based" in messages[0]["content"]
    with pytest.raises(ValueError, match="unknown game"):
        judge_messages(S1, "x", game="go")


def test_judge_turn_parses_claims_and_agrees_with_the_rules():
    reply = ('Here you go:\n```json\n{"claims": [\n'
             ' {"text": "I am at (3,4)", "claim": "at(player, 3, 4)", "verdict": true},\n'
             ' {"text": "box is at (2,3)", "claim": "at(box,2,3)", "verdict": true},\n'
             ' {"text": "target is below the box", "claim": "rel(target,box,down)", "verdict": true},\n'
             ' {"text": "nonsense", "claim": "teleport(me)", "verdict": true},\n]}\n```')
    agent = ScriptedAgent(reply)
    judged = run(judge_turn(agent, TURN, game="sokoban"))
    assert judged["error"] is None and judged["dropped"] == 1
    assert [c["canonical"] for c in judged["claims"]] == ["at(player,3,4)", "at(box,2,3)", "rel(target,box,down)"]
    rule = score_turn(TURN, game="sokoban")
    stats = agreement([rule], [judged])
    # Both found all three claims; they disagree on at(box,2,3) (rule: false, judge: true).
    assert (stats["claims_both"], stats["claims_rule_only"], stats["claims_judge_only"]) == (3, 0, 0)
    assert stats["verdict_agreement"] == pytest.approx(2 / 3)
    # kappa: p_o = 2/3; rule says true 2/3, judge 3/3 -> p_e = 2/3 -> (2/3 - 2/3) / (1 - 2/3) = 0
    assert stats["cohen_kappa"] == pytest.approx(0.0)


@pytest.mark.parametrize("reply, expected", [
    ("[{'claim': 'at(box,2,2)', 'verdict': True}]", ["at(box,2,2)"]),
    ('{"claims": []}', []),
    ('blah "claim": "at(box,2,2)", "verdict": false blah', ["at(box,2,2)"]),
])
def test_parse_judge_reply_is_lenient(reply, expected):
    claims, dropped, found = parse_judge_reply(reply)
    assert [c["canonical"] for c in claims] == expected and dropped == 0 and found


@pytest.mark.parametrize("reply", ["I think everything is fine.", "{not json at all", "\x00\x01" * 50])
def test_unusable_replies_give_an_error_not_an_exception(reply):
    judged = run(judge_turn(ScriptedAgent(reply), TURN, game="sokoban"))
    assert judged["claims"] == [] and judged["error"]


def test_failed_request_and_empty_thought():
    failed = run(judge_turn(ScriptedAgent(error="HTTP 500"), TURN, game="sokoban"))
    assert failed["claims"] == [] and failed["error"] == "HTTP 500"
    silent = ScriptedAgent("unused")
    assert run(judge_turn(silent, {**TURN, "think": "  "}, game="sokoban"))["claims"] == []
    assert silent.seen == []


def test_agreement_needs_paired_turns():
    with pytest.raises(ValueError, match="pair them"):
        agreement([{"claims": []}], [])
    empty = agreement([{"claims": []}], [{"claims": []}])
    assert empty["verdict_agreement"] is None and empty["claim_overlap"] is None


def test_judge_over_loopback_http_survives_non_json_and_faulty_replies():
    """A real OpenAI-client agent against ``ragen-eval serve``: its replies are game answers, garbage
    or HTTP faults, never claim JSON, so every judged turn must end with an error and no claims."""
    pytest.importorskip("openai")
    from ragen_eval.agents.openai_agent import OpenAIChatAgent
    from ragen_eval.local_server import local_server

    faults = ["--garbage-rate", "0.4", "--failure-rate", "0.2", "--malformed-rate", "0.2", "--fault-seed", "3"]
    turns = [{**TURN, "think": f"{TURN['think']} Turn {i}."} for i in range(6)]

    async def judge_all(url: str) -> list[dict]:
        agent = OpenAIChatAgent("random", url, max_retries=1, timeout=10.0, backoff_initial=0.01, backoff_max=0.05)
        try:
            return await asyncio.gather(*(judge_turn(agent, t, game="sokoban") for t in turns))
        finally:
            await agent.aclose()

    with local_server("random", faults) as url:
        results = run(judge_all(url))
    assert len(results) == len(turns)
    assert all(r["claims"] == [] and r["error"] for r in results)
