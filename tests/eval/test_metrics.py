"""Metrics from hand-built records (numbers checked by hand) and from real episodes."""

from __future__ import annotations

import asyncio

import pytest

from ragen_eval.metrics import (
    count_pretokens,
    count_words,
    episode_metrics,
    failure_category,
    optimal_steps,
    paired_comparison,
)
from ragen_eval.summary import summarize


def _turn(actions=("Up",), executed=None, format_ok=True, think="a b c", infos=None, finish_reason="stop",
          reasoning=None, state_after=None, completion=None):
    executed = list(actions) if executed is None else executed
    return {"actions_parsed": list(actions), "actions_executed": executed, "format_ok": format_ok, "think": think,
            "reasoning": reasoning, "finish_reason": finish_reason,
            "infos": infos if infos is not None else [{"action_is_valid": True, "action_is_effective": True}] * len(executed),
            "state_after": state_after or {}, "completion": completion or {}}


def _record(env="sokoban", seed=0, success=True, turns=None, certificate=None, reward=1.0, end_reason=None, **kw):
    return {"env": env, "seed": seed, "success": success, "total_reward": reward,
            "certificate": certificate if certificate is not None else _typed({"moves": 4, "actions": [0, 1, 2, 3]}, 4),
            "turns": turns if turns is not None else [_turn(("Up", "Down"))],
            "end_reason": end_reason or ("success" if success else "max_turns"), **kw}


def test_word_and_token_counts():
    assert count_words("  I think,  therefore\nI am. ") == 5
    assert count_words(None) == 0
    # GPT-2 pre-tokenizer pieces: "I", " think", ",", " therefore", " I", " am", "."
    assert count_pretokens("I think, therefore I am.") == 7
    assert count_pretokens("box at (3, 4)") == 7  # box, at, (, 3, ",", 4, )


def _typed(extras, steps, actions=None, probability=1.0):
    """A certificate's dict form: a game's extras with the typed fields beside them."""
    return {**extras, "optimal_steps": steps, "optimal_actions": actions, "optimal_success_probability": probability}


def test_optimal_steps_reads_every_game_certificate():
    assert optimal_steps(_typed({"solution": ["Right", "Up"], "actions": [3, 0], "moves": 2, "pushes": 1}, 2,
                                [3, 0])) == 2
    assert optimal_steps(_typed({"shortest_path_length": 6, "shortest_path": [1, 0, 0, 3, 3, 2]}, 6, None, 0.4)) == 6
    assert optimal_steps(_typed({"arms": [], "shortest_path_length": 1}, 1, [0])) == 1
    assert optimal_steps({}) is None and optimal_steps(None) is None
    # the typed field is read, never a game's own keys
    assert optimal_steps(_typed({"moves": 9, "shortest_path_length": 9}, None)) is None
    with pytest.raises(ValueError, match="optimal_steps"):
        optimal_steps({"moves": 2, "solution": ["Right", "Up"]})


def test_efficiency_is_optimum_over_actions_on_successes_only():
    turns = [_turn(("Up", "Up", "Left")), _turn(("Down", "Right", "Right"))]  # 6 actions for a 4-move level
    m = episode_metrics(_record(turns=turns))
    assert m["efficiency"] == pytest.approx(4 / 6)
    assert m["actions"] == 6 and m["actions_per_turn"] == 3.0
    assert episode_metrics(_record(success=False, turns=turns))["efficiency"] is None


def test_think_text_counts_provider_reasoning_once():
    same = _turn(think="let me see now", reasoning="let me see now")
    both = _turn(think="short", reasoning="long hidden chain of thought")
    assert episode_metrics(_record(turns=[same]))["think_words"] == 4
    assert episode_metrics(_record(turns=[both]))["think_words"] == 6
    usage = _turn(completion={"reasoning_tokens": 120, "completion_tokens": 150})
    m = episode_metrics(_record(turns=[usage, usage]))
    assert m["provider_reasoning_tokens"] == 240 and m["completion_tokens"] == 300
    assert episode_metrics(_record())["provider_reasoning_tokens"] is None


def test_failure_categories():
    lake = {"holes": [[1, 1]], "player": [1, 1]}
    slip = _turn(infos=[{"action_is_valid": True, "action_is_effective": True, "slipped": True}], state_after=lake)
    chose = _turn(infos=[{"action_is_valid": True, "action_is_effective": True, "slipped": False}], state_after=lake)
    stuck = _turn(infos=[{"action_is_valid": True, "action_is_effective": True, "deadlock": True}])
    wall = _turn(infos=[{"action_is_valid": True, "action_is_effective": False}])
    bad = _turn(actions=(), format_ok=False)
    cut = _turn(actions=(), format_ok=False, finish_reason="length")
    cases = {
        "hole_after_slip": _record(env="frozenlake", success=False, turns=[slip], end_reason="failure"),
        "hole_by_choice": _record(env="frozenlake", success=False, turns=[chose], end_reason="failure"),
        "deadlock": _record(success=False, turns=[wall, stuck]),
        "invalid_or_noop": _record(success=False, turns=[wall, _turn()]),
        "format_error": _record(success=False, turns=[bad, wall]),
        "truncated": _record(success=False, turns=[cut, bad]),
        "out_of_budget": _record(success=False, turns=[_turn(), _turn()]),
        "error": _record(success=False, turns=[cut], error="HTTP 500", end_reason="error"),
        "wrong_choice": _record(env="bandit", success=False, turns=[_turn()], end_reason="failure"),
    }
    for expected, record in cases.items():
        assert failure_category(record) == expected, expected
    assert failure_category(_record()) is None


def test_summarize_per_env_and_overall(monkeypatch):
    # These hand-built turns carry no game state, so leave thought-state consistency out here.
    monkeypatch.setattr("ragen_eval.summary._consistency_functions", lambda: None)
    records = [_record(seed=i, success=i < 3, reward=float(i)) for i in range(4)]
    records += [_record(env="bandit", seed=i, success=i == 0, reward=0.5,
                        turns=[_turn(("Dragon",), think="pick dragon")]) for i in range(2)]
    records[1]["turns"] = [_turn(actions=(), format_ok=False), _turn(("Up", "Down"))]
    summary = summarize(records, ["sokoban", "bandit"])
    sok, ban, overall = summary["per_env"]["sokoban"], summary["per_env"]["bandit"], summary["overall"]
    assert (sok["episodes"], sok["successes"], sok["success_rate"]) == (4, 3, 0.75)
    assert sok["mean_reward"] == pytest.approx(1.5)
    assert sok["format_error_rate"] == pytest.approx(1 / 5)  # one bad turn of five
    assert ban["success_rate"] == 0.5 and ban["think_words_per_turn"] == 2.0
    assert overall["episodes"] == 6 and overall["success_rate"] == pytest.approx(4 / 6)
    assert overall["macro_success_rate"] == pytest.approx((0.75 + 0.5) / 2)
    assert sok["success_ci95"][0] < 0.75 < sok["success_ci95"][1]
    assert sok["failures"] == {"out_of_budget": 1}
    with pytest.raises(ValueError, match="not among"):
        summarize(records, ["sokoban"])


def test_paired_comparison_pairs_on_env_and_seed():
    a = [_record(seed=i, success=True) for i in range(20)]
    b = [_record(seed=i, success=i % 4 == 0) for i in reversed(range(20))]
    result = paired_comparison(a, b)
    assert result["overall"]["pairs"] == 20
    assert result["overall"]["mcnemar"]["a_only"] == 15 and result["overall"]["mcnemar"]["b_only"] == 0
    assert result["overall"]["mcnemar"]["p_value"] == pytest.approx(2 * 0.5**15)
    with pytest.raises(ValueError, match="share no"):
        paired_comparison(a, [_record(seed=99)])
    # Four samples of a level (ragen-train's rollouts) once kept only the last of each level, silently.
    samples = [{**_record(seed=i, success=k != 3), "sample": k} for i in range(4) for k in range(4)]
    with pytest.raises(ValueError, match="run A holds several episodes of level sokoban:0"):
        paired_comparison(samples, a)


def test_metrics_on_real_oracle_episodes():
    from ragen_envs.text import TextEpisode

    from ragen_eval.agents.builtin import OracleAgent

    agent = OracleAgent()
    records = []
    for seed in range(200_000_000, 200_000_010):
        episode = TextEpisode("sokoban", seed)
        while not episode.done:
            completion = asyncio.run(agent.act(episode.messages, episode=episode))[0]
            episode.step(completion.text, finish_reason=completion.finish_reason)
        records.append(episode.record())
    summary = summarize(records)
    sokoban = summary["per_env"]["sokoban"]
    solved = [r for r in records if r["success"]]
    # The oracle plays the certificate, so every solved level is solved in exactly the optimal moves.
    assert sokoban["efficiency"] == 1.0
    assert all(r["num_actions"] == r["certificate"]["moves"] for r in solved)
    assert sokoban["format_error_rate"] == 0.0
    assert sokoban["successes"] == sum(r["certificate"]["moves"] <= r["protocol"]["max_actions_per_episode"]
                                       for r in records)
    # Thought-state consistency (ragen_eval.consistency) is aggregated per env and overall.
    from ragen_eval import consistency

    expected = consistency.aggregate([consistency.score_episode(r) for r in records])
    assert sokoban["consistency"] == expected == summary["overall"]["consistency"]


def test_results_table_shows_provider_reasoning_only_when_reported(monkeypatch):
    from ragen_eval.results_table import results_table

    monkeypatch.setattr("ragen_eval.summary._consistency_functions", lambda: None)
    head = {"model": "m", "backend": "openai", "split": "test", "episodes_done": 1, "episodes_expected": 1}
    plain = results_table({**head, **summarize([_record()])})
    usage = _turn(completion={"reasoning_tokens": 90})
    reported = results_table({**head, **summarize([_record(turns=[usage, usage])])})
    assert "provider reasoning" not in plain
    assert "provider reasoning tok/turn" in reported and "90.0" in reported
