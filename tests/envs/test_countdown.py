"""Countdown: solvable levels whose certificate makes the target, expressions that read back as they
evaluate, and the answer format through the text protocol."""

from __future__ import annotations

import ast
import math
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.countdown import CountdownConfig, generate
from ragen_envs.countdown import env as countdown_env
from ragen_envs.countdown.expressions import evaluate, templates, write
from ragen_envs.deadline import DeadlineExceeded, time_limit
from ragen_envs.text import TextEpisode


def ast_value(text: str) -> Fraction | None:
    """The value of an arithmetic expression, read by Python's parser (not the game's), in exact fractions."""
    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant):
            return Fraction(node.value)
        ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a / b}
        assert isinstance(node, ast.BinOp)
        return ops[type(node.op)](value(node.left), value(node.right))
    try:
        return value(ast.parse(text.replace("x", "*"), mode="eval").body)
    except ZeroDivisionError:
        return None


def literals(text: str) -> Counter:
    return Counter(n.value for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Constant))


@pytest.mark.parametrize("count", [2, 3, 4])
def test_the_templates_are_every_tree_once(count):
    # n! leaf orders x Catalan(n-1) shapes x 4^(n-1) operators
    catalan = math.comb(2 * (count - 1), count - 1) // count
    assert len(templates(count)) == math.factorial(count) * catalan * 4 ** (count - 1)
    names = [write(t, (2, 3, 5, 7)[:count]) for t in templates(count)]
    assert len(set(names)) == len(names)  # distinct numbers: every template reads differently


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), count=st.integers(2, 4), max_number=st.integers(1, 30))
def test_every_certificate_evaluates_to_the_target_using_each_number_once(seed, count, max_number):
    config = CountdownConfig(count=count, max_number=max_number)
    level = generate(config, seed)
    assert generate(config, seed) == level  # a pure function of (config, seed)
    solution = write(templates(count)[level.solution], level.numbers)
    assert ast_value(solution) == level.target and 1 <= level.target <= config.max_target
    assert literals(solution) == Counter(level.numbers) and list(level.numbers) == sorted(level.numbers)


@settings(max_examples=200, deadline=None)
@given(numbers=st.lists(st.integers(0, 12), min_size=4, max_size=4), pick=st.integers(0, 7679))
def test_a_written_expression_reads_back_as_it_evaluates(numbers, pick):
    template = templates(4)[pick]
    assert ast_value(write(template, tuple(numbers))) == evaluate(template, tuple(numbers))
    assert ast_value(write(template, tuple(numbers), "", "x")) == evaluate(template, tuple(numbers))


def test_the_certificate_wins_and_a_wrong_equation_scores_zero_without_penalty():
    env = ragen_envs.make("countdown").unwrapped
    for seed in range(20):
        _, info = env.reset(seed=seed)
        _, reward, terminated, _, step = env.step(info["certificate"]["optimal_actions"][0])
        assert reward == 1.0 and terminated and step["success"]
        wrong = next(i for i, t in enumerate(env.shapes) if evaluate(t, env.level.numbers) not in (env.level.target, None))
        env.reset(seed=seed)
        _, reward, terminated, _, step = env.step(wrong)
        assert (reward, terminated, step["success"], step["action_is_valid"]) == (0.0, True, False, True)


@pytest.mark.parametrize("spelling", [lambda s: s, lambda s: s.replace(" ", ""), lambda s: s.replace("*", "x")])
def test_the_text_protocol_reads_the_usual_spellings(spelling):
    for seed in range(5):
        episode = TextEpisode("countdown", seed, env_config={"count": 4, "max_number": 25})
        solution = episode.certificate["solution"]
        turn = episode.step(f"<think>t</think><answer>{spelling(solution)}</answer>")
        assert turn["format_ok"] and episode.success and turn["reward"] == 1.0


def test_a_non_expression_is_a_format_error_and_the_prompt_lists_no_expressions():
    episode = TextEpisode("countdown", 0, env_config={"count": 4})
    assert episode.certificate["solution"] not in episode.messages[-1]["content"]
    turn = episode.step("<think>t</think><answer>12 + 12</answer>")  # not every number
    assert not turn["format_ok"] and turn["penalty"] < 0


def test_a_division_by_zero_is_an_invalid_action():
    env = ragen_envs.make("countdown", config={"count": 2}).unwrapped
    env.reset(options={"level": type(generate(env.config, 0))((0, 5), 5, 0)})
    divide = env.action_names.index("5 / 0")
    _, reward, terminated, _, info = env.step(divide)
    assert (reward, terminated, info["action_is_valid"]) == (0.0, True, False)


@pytest.mark.parametrize("bad", [{"count": 5}, {"count": 1}, {"max_number": 0}])
def test_bad_configs_are_one_clear_error(bad):
    with pytest.raises(ValueError, match="CountdownConfig"):
        CountdownConfig(**bad)


def test_a_config_that_can_hardly_make_a_target_ends_in_a_clear_error_and_obeys_a_time_limit(monkeypatch):
    """Numbers up to a billion almost never make the target 1: generation gives up instead of looping forever,
    and a server's time_limit stops it sooner."""
    hopeless = CountdownConfig(max_number=10**9, max_target=1)
    with pytest.raises(DeadlineExceeded):
        with time_limit(0.05):
            generate(hopeless, 0)
    monkeypatch.setattr(countdown_env, "MAX_DRAWS", 50)
    with pytest.raises(RuntimeError, match="no Countdown level with a whole target in 1..1 found in 50 draws"):
        generate(hopeless, 0)
    assert generate(CountdownConfig(), 0) == generate(CountdownConfig(), 0)  # a preset's level is still found
