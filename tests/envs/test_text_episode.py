"""TextEpisode and EpisodeBatch on a tiny corridor game defined here.

The corridor shows that the text layer needs nothing game-specific: any registered Gymnasium env
that implements TextGame can be played. Its rewards are known in closed form, so every budget,
penalty and reward total below is checked against an independent computation.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_envs.certificate import Certificate
from ragen_envs.text import (
    MAX_REPLY_CHARS,
    EpisodeBatch,
    ProtocolConfig,
    ReplayMismatchError,
    TextEpisode,
    oracle_responses,
    render_prompt,
    replay,
    to_markdown,
)
from ragen_envs.text_game import TextGame

STEP_REWARD = -0.1
GOAL_REWARD = 1.0
PIT_REWARD = -1.0


class Corridor(gym.Env):
    """A 1 x length corridor: a pit at column 0, the goal at the last column, the player in between."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    action_names = ("Left", "Right")
    text_defaults: dict = {}
    symbol_sets = {"corridor": {"pit": "X", "floor": "_", "player": "P", "goal": "G"}}
    certificate = None

    def __init__(self, render_mode=None, config=None, symbols=None):
        self.config = {"length": 6, **(config or {})}
        self.length = self.config["length"]
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(self.length)
        self.render_mode = render_mode
        self.pos = 1

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        level_seed = int(self.np_random.integers(2**31))
        self.pos = int(np.random.default_rng(level_seed).integers(1, self.length - 1))
        steps = len(self.solution())
        self.certificate = Certificate(steps, (1,) * steps, 1.0, {"solution": self.solution()})
        return self.pos, {"level_seed": level_seed, "certificate": self.certificate.to_dict()}

    def solution(self):
        return ["Right"] * (self.length - 1 - self.pos)

    def level_key(self):
        return f"{self.length}:{self.pos}".encode()

    def step(self, action):
        self.pos += 1 if action == 1 else -1
        success = self.pos == self.length - 1
        pit = self.pos == 0
        reward = np.float32(GOAL_REWARD if success else PIT_REWARD if pit else STEP_REWARD)
        info = {"success": np.bool_(success), "action_is_valid": True, "action_is_effective": True,
                "certificate": {"solution": []}}
        return self.pos, reward, success or pit, False, info

    def action_aliases(self):
        return {"l": 0, "west": 0, "r": 1, "east": 1}

    def rules_text(self):
        return "Walk along the corridor to the goal without falling into the pit."

    def legend_text(self, symbols=None, coordinate_base=0):
        s = self._symbols(symbols)
        return (f"{s['pit']} pit, {s['floor']} floor, {s['player']} you, {s['goal']} goal; "
                f"columns start at {coordinate_base}.")

    def _symbols(self, symbols):
        return {"pit": "X", "floor": "_", "player": "P", "goal": "G", **(symbols or {})}

    def observation_text(self, fmt="grid", symbols=None, coordinate_base=0):
        s = self._symbols(symbols)
        cells = [s["pit"]] + [s["floor"]] * (self.length - 2) + [s["goal"]]
        cells[self.pos] = s["player"]
        grid = "".join(cells)
        coords = f"you: (0, {self.pos + coordinate_base}); goal: (0, {self.length - 1 + coordinate_base})"
        return {"grid": grid, "coords": coords, "grid+coords": f"{grid}\n{coords}"}[fmt]

    def state_dict(self):
        return {"game": "corridor", "player": [0, self.pos], "length": self.length}

    def plan_turn(self, turn_actions, actions_left, turns_left):
        return [1] * max(1, min(turn_actions, self.length - 1 - self.pos))

    def render(self):
        return self.observation_text()


ENV_ID = "test/Corridor-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=Corridor)


def start_pos(seed, length=6):
    env = Corridor(config={"length": length})
    env.reset(seed=seed)
    return env.pos


def answer(*names):
    return f"<think>plan</think><answer>{' || '.join(names)}</answer>"


def total_of(record):
    return sum(t["reward"] + t["penalty"] for t in record["turns"])


def test_corridor_is_a_text_game():
    assert isinstance(Corridor(), TextGame)


def test_first_prompt_states_rules_legend_actions_format_and_budget():
    episode = TextEpisode(ENV_ID, seed=3)
    system, user = episode.messages
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    for needle in ("Walk along the corridor", "X pit", "Left, Right", "<think>", "<answer>", '"||"',
                   "at most 5 turn(s)", "up to 5 action(s)", "At most 10 action(s)", "Turn 1 of 5",
                   episode.game.observation_text()):
        assert needle in text, needle
    assert render_prompt(episode.game, episode.config)[1]["content"] in text


def test_scripted_success_accounts_rewards_exactly():
    seed = 11
    needed = 6 - 1 - start_pos(seed)
    episode = TextEpisode(ENV_ID, seed)
    turn = episode.step(answer(*["Right"] * needed))
    assert episode.done and episode.success and episode.end_reason == "success"
    assert turn["actions_executed"] == ["Right"] * needed
    expected = STEP_REWARD * (needed - 1) + GOAL_REWARD
    assert turn["reward"] == pytest.approx(expected) and turn["penalty"] == 0.0
    assert episode.total_reward == pytest.approx(expected)
    assert turn["infos"][-1]["success"] is True and "certificate" not in turn["infos"][-1]


def test_scripted_failure_ends_in_the_pit():
    seed = 11
    pos = start_pos(seed)
    episode = TextEpisode(ENV_ID, seed)
    turn = episode.step(answer(*["Left"] * 5))
    assert episode.done and not episode.success and episode.end_reason == "failure"
    assert turn["actions_executed"] == ["Left"] * pos  # the rest are parsed but never executed
    assert turn["actions_parsed"] == ["Left"] * 5
    assert turn["reward"] == pytest.approx(STEP_REWARD * (pos - 1) + PIT_REWARD)


def test_action_budget_cuts_a_turn_short_and_ends_the_episode():
    config = ProtocolConfig(max_actions_per_episode=7, max_actions_per_turn=5)
    episode = TextEpisode(ENV_ID, 0, config, env_config={"length": 40})
    first = episode.step(answer("Right", "Left"))
    assert first["actions_executed"] == ["Right", "Left"] and not episode.done
    assert "Actions left in the episode: 5 (up to 5 this turn)" in episode.messages[-1]["content"]
    second = episode.step(answer(*["Right", "Left"] * 4))  # 8 parsed: 5 kept, 3 dropped, budget allows 5
    assert second["actions_parsed"] == ["Right", "Left", "Right", "Left", "Right"]
    assert second["actions_dropped"] == ["Left", "Right", "Left"]
    assert second["actions_executed"] == second["actions_parsed"]
    assert episode.done and episode.end_reason == "max_actions" and episode.num_actions == 7
    config = ProtocolConfig(max_actions_per_episode=3, max_actions_per_turn=5)
    episode = TextEpisode(ENV_ID, 0, config, env_config={"length": 40})
    assert episode.step(answer(*["Right", "Left"] * 2))["actions_executed"] == ["Right", "Left", "Right"]
    assert episode.end_reason == "max_actions"


def test_format_errors_take_no_action_and_cost_the_penalty():
    episode = TextEpisode(ENV_ID, 5, env_config={"length": 40})
    before = episode.game.state_dict()
    bad = episode.step("<answer>Right</answer>")  # no <think>
    assert not bad["format_ok"] and bad["actions_executed"] == [] and bad["penalty"] == -0.1 and bad["reward"] == 0.0
    assert bad["state_after"] == before
    nxt = episode.messages[-1]["content"]
    assert "could not be used (missing <think>)" in nxt and "Reward from your last turn: -0.1." in nxt
    trunc = episode.step(answer("Right"), finish_reason="length")
    assert trunc["format_errors"] == ["truncated: the reply hit the length limit"] and trunc["actions_executed"] == []
    for _ in range(3):
        episode.step("no tags at all")
    assert episode.done and episode.end_reason == "max_turns" and episode.num_actions == 0
    assert episode.total_reward == pytest.approx(-0.5)
    with pytest.raises(RuntimeError, match="already finished"):
        episode.step(answer("Right"))


def test_custom_penalty_response_length_and_reasoning():
    config = ProtocolConfig(format_penalty=-0.5, max_response_chars=60)
    episode = TextEpisode(ENV_ID, 5, config, env_config={"length": 40})
    long = episode.step("<think>" + "x" * 100 + "</think><answer>Right</answer>")
    assert long["penalty"] == -0.5 and long["format_errors"][0].startswith("too long")
    turn = episode.step("<answer>Right</answer>", reasoning="provider thoughts")
    assert turn["format_ok"] and turn["think"] == "provider thoughts" and turn["reasoning"] == "provider thoughts"
    assert episode.total_reward == pytest.approx(-0.5 + STEP_REWARD)


def test_a_huge_reply_is_scored_in_full_then_capped_in_the_chat_and_the_record():
    # The answer sits past the cap: only a reply scored before it is cut can find it.
    huge = "<think>" + "x" * (2 * MAX_REPLY_CHARS) + "</think><answer>Right</answer>"
    episode = TextEpisode(ENV_ID, 5, env_config={"length": 40})
    for turn in range(1, 4):
        record = episode.step(huge, reasoning="r" * (MAX_REPLY_CHARS + 1))
        assert record["format_ok"] and record["actions_executed"] == ["Right"]
        assert record["capped"] == {"response": len(huge), "reasoning": MAX_REPLY_CHARS + 1,
                                    "think": 2 * MAX_REPLY_CHARS}
        assert record["response"] == huge[:MAX_REPLY_CHARS] and len(record["think"]) == MAX_REPLY_CHARS
        sent_back = [m["content"] for m in episode.messages if m["role"] == "assistant"]
        assert sent_back == [huge[:MAX_REPLY_CHARS]] * turn  # before: the whole reply, every later turn
    assert len(json.dumps(episode.messages)) < 3 * MAX_REPLY_CHARS + 5_000
    small = episode.step(answer("Right"))
    assert "capped" not in small and episode.history[-1]["content"] == answer("Right")


def test_no_think_mode():
    episode = TextEpisode(ENV_ID, 5, ProtocolConfig(think=False), env_config={"length": 40})
    assert "<think>" not in episode.messages[1]["content"]
    assert episode.step("<answer>Right</answer>")["format_ok"]


@pytest.mark.parametrize("fmt", ["grid", "coords", "grid+coords"])
def test_observation_formats_and_vocabulary_are_config(fmt):
    config = ProtocolConfig(observation_format=fmt, symbols={"player": "@", "pit": "O"}, coordinate_base=1)
    episode = TextEpisode(ENV_ID, 2, config)
    shown = episode.game.observation_text(fmt, {"player": "@", "pit": "O"}, 1)
    assert shown in episode.messages[1]["content"]
    assert "O pit" in episode.messages[1]["content"] and "columns start at 1" in episode.messages[1]["content"]
    assert ("@" in shown) == ("grid" in fmt)


def test_context_modes_keep_the_rules_and_the_right_turns():
    replies = [answer("Right"), answer("Left"), "junk", answer("Right")]
    chats = {}
    for mode in ("full", "last_k", "single"):
        episode = TextEpisode(ENV_ID, 4, ProtocolConfig(context=mode, context_k=1), env_config={"length": 40})
        for reply in replies:
            episode.step(reply)
        chats[mode] = episode.messages
        assert chats[mode][0] == episode.history[0]
        assert len(episode.history) == 2 + 2 * len(replies)
        assert all(m["content"] for m in episode.messages) and "Walk along" in chats[mode][1]["content"]
    assert chats["full"] == episode.history
    assert [m["role"] for m in chats["single"]] == ["system", "user"]
    assert "Turn 5 of 5" in chats["single"][1]["content"]
    assert [m["role"] for m in chats["last_k"]] == ["system", "user", "assistant", "user"]
    assert "Turn 4 of 5" in chats["last_k"][1]["content"] and chats["last_k"][2]["content"] == replies[-1]


def test_record_is_json_and_replays_to_the_same_states():
    episode = TextEpisode(ENV_ID, 8, env_config={"length": 40})
    for reply in (answer("Right", "Right"), "bad", answer("Left", "Right", "Right", "Right", "Left", "Left")):
        episode.step(reply)
    record = json.loads(json.dumps(episode.record()))
    assert record["env"] == ENV_ID and record["env_config"] == {"length": 40}
    assert record["total_reward"] == pytest.approx(total_of(record))
    assert record["num_actions"] == sum(len(t["actions_executed"]) for t in record["turns"])
    again = replay(record)
    assert again.record()["turns"] == record["turns"]
    tampered = json.loads(json.dumps(record))
    tampered["turns"][0]["state_after"]["player"] = [0, 99]
    with pytest.raises(ReplayMismatchError, match="turn 1: state_after"):
        replay(tampered)
    markdown = to_markdown(record)
    assert "## Turn 3" in markdown and "format error: missing <think>" in markdown and "## Final state" in markdown


def test_oracle_replies_win_within_the_budget():
    for seed in range(20):
        episode = TextEpisode(ENV_ID, seed, ProtocolConfig(max_actions_per_turn=2), env_config={"length": 9})
        replies = oracle_responses(episode.certificate["solution"], episode.config)
        assert all(len(r.split("||")) <= 2 for r in replies)
        for reply in replies:
            episode.step(reply)
        assert episode.success and episode.end_reason == "success"
    no_think = oracle_responses(["Right"] * 3, ProtocolConfig(think=False, max_actions_per_turn=2))
    assert no_think == ["<answer>Right || Right</answer>", "<answer>Right</answer>"]
    with pytest.raises(TypeError):
        oracle_responses("Right")


def test_batch_steps_in_lockstep():
    seeds = list(range(6))
    batch = EpisodeBatch(ENV_ID, seeds, env_config={"length": 6})
    assert len(batch.prompts()) == 6
    turns = batch.step([answer(*["Right"] * 5)] * 3 + ["junk"] * 3)
    assert [t["format_ok"] for t in turns] == [True] * 3 + [False] * 3
    assert batch.active == [3, 4, 5] and len(batch.prompts()) == 3
    with pytest.raises(ValueError, match="3 episodes are unfinished"):
        batch.step(["junk"] * 6)
    with pytest.raises(TypeError):
        batch.step("junk")
    # A failed request's None once played the turns before it, leaving the batch out of lockstep.
    with pytest.raises(TypeError, match=r"entry 1 \(episode 4\): response must be a string, got NoneType"):
        batch.step([answer("Left"), None, answer("Left")])
    with pytest.raises(TypeError, match="entry 2 .* reasoning must be a string or None"):
        batch.step([answer("Left")] * 3, reasonings=[None, None, 7])
    assert [e.turn for e in batch.episodes[3:]] == [1, 1, 1]
    while not batch.done:
        batch.step([answer("Left")] * len(batch.active))
    records = batch.records()
    assert [r["seed"] for r in records] == seeds and all(r["end_reason"] for r in records)
    # lockstep gives the same records as playing each episode alone
    alone = TextEpisode(ENV_ID, 4, env_config={"length": 6})
    for turn in records[4]["turns"]:
        alone.step(turn["response"])
    assert alone.record() == records[4]


def test_gymnasium_step_limit_ends_the_episode_as_truncated():
    if "test/ShortCorridor-v0" not in gym.registry:
        gym.register(id="test/ShortCorridor-v0", entry_point=Corridor, max_episode_steps=3)
    episode = TextEpisode("test/ShortCorridor-v0", 0, env_config={"length": 40})
    turn = episode.step(answer("Right", "Left", "Right", "Left", "Right"))
    assert turn["actions_executed"] == ["Right", "Left", "Right"] and turn["done"]
    assert episode.end_reason == "truncated" and not episode.success


class TupleCorridor(Corridor):
    def state_dict(self):
        return {"game": "corridor", "player": (0, self.pos)}


def test_a_game_whose_state_is_not_plain_json_is_refused():
    if "test/TupleCorridor-v0" not in gym.registry:
        gym.register(id="test/TupleCorridor-v0", entry_point=TupleCorridor)
    with pytest.raises(TypeError, match="plain JSON"):
        TextEpisode("test/TupleCorridor-v0", 0)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown environment"):
        TextEpisode("no_such_game", 0)
    with pytest.raises(ValueError, match="seed"):
        TextEpisode(ENV_ID, -1)
    with pytest.raises(TypeError, match="response must be a string"):
        TextEpisode(ENV_ID, 0).step(None)
    with pytest.raises(ValueError, match="context"):
        ProtocolConfig(context="everything")
    with pytest.raises(ValueError, match="max_turns"):
        ProtocolConfig(max_turns=0)
    for penalty in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="format_penalty must be a finite number"):
            ProtocolConfig(format_penalty=penalty)
    with pytest.raises(ValueError, match="unknown field"):
        ProtocolConfig(turn_template="{observation} {mood}")
    with pytest.raises(ValueError, match="unknown ProtocolConfig fields"):
        ProtocolConfig.from_dict({"max_turn": 3})
    config = ProtocolConfig(symbols={"player": "@"}, context="last_k", max_turns=3)
    assert ProtocolConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config



@pytest.mark.parametrize(("fields", "named"), [
    ({"think": "no"}, "think must be True or False"),  # truthy: it once turned think mode on
    ({"context_k": True}, "context_k must be a non-negative integer"),
    ({"max_response_chars": True}, "max_response_chars must be a positive integer"),
    ({"coordinate_base": True}, "coordinate_base must be 0 or 1"),
    ({"coordinate_base": 1.0}, "coordinate_base must be 0 or 1"),
    ({"extra": None}, "extra must be a mapping"),
    ({"extra": {"s": {1}}}, "extra must hold JSON values only"),
])
def test_a_config_from_dict_would_refuse_is_refused_when_built(fields, named):
    """Each was once accepted, played, and written into records that replay() and from_dict then refused."""
    with pytest.raises((TypeError, ValueError), match=named):
        ProtocolConfig(**fields)


@pytest.mark.parametrize(("field", "template"), [
    ("turn_template", "{turns_left:>20000000}"),  # a width: megabytes rendered from a few bytes of config
    ("turn_template", "{actions.__class__.__mro__}"),  # an attribute: reaches into Python objects
    ("turn_template", "{actions[999]}"),
    ("turn_template", "{turn!r}"),
    ("feedback_template", "{errors:d}"),  # a spec that fails on its value: once failed after the turn was played
    ("reward_template", "{reward[40]}"),
    ("reward_template", "{reward:.2f}"),
    ("intro_template", "{0}"),
    ("format_think", "{}"),
])
def test_templates_take_only_bare_placeholders(field, template):
    with pytest.raises(ValueError, match=f"{field} may use only bare"):
        ProtocolConfig(**{field: template})


def test_every_template_renders_as_configured_with_bare_placeholders_and_escaped_braces():
    config = ProtocolConfig(reward_template="{{reward}} = {reward}", feedback_template="bad: {errors}", max_turns=3)
    episode = TextEpisode(ENV_ID, 0, config)
    episode.step("junk")
    assert "bad: missing <think>; missing <answer>\n{reward} = -0.1" in episode.messages[-1]["content"]


_REPLIES = st.sampled_from(
    [answer("Right"), answer("Left"), answer("Right", "Right", "Right"), answer(*["Left", "Right"] * 4),
     "<answer>Right</answer>", "junk", answer("Right", "jump")]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), replies=st.lists(_REPLIES, min_size=1, max_size=6),
       per_turn=st.integers(1, 5), per_episode=st.integers(1, 12), turns=st.integers(1, 5))
def test_budgets_and_totals_hold_for_any_script(seed, replies, per_turn, per_episode, turns):
    config = ProtocolConfig(max_turns=turns, max_actions_per_turn=per_turn, max_actions_per_episode=per_episode)
    episode = TextEpisode(ENV_ID, seed, config, env_config={"length": 8})
    for reply in replies:
        if episode.done:
            break
        episode.step(reply)
    record = json.loads(json.dumps(episode.record()))
    assert record["num_turns"] <= turns and record["num_actions"] <= per_episode
    assert all(len(t["actions_executed"]) <= per_turn for t in record["turns"])
    assert record["total_reward"] == pytest.approx(total_of(record))
    assert all(t["penalty"] == (0.0 if t["format_ok"] else -0.1) for t in record["turns"])
    assert all(t["reward"] == pytest.approx(sum(t["step_rewards"])) for t in record["turns"])
    for a, b in zip(record["turns"], record["turns"][1:]):
        assert a["state_after"] == b["state_before"]
    assert replay(record).record()["turns"] == record["turns"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), replies=st.lists(_REPLIES, min_size=1, max_size=6),
       context=st.sampled_from(["full", "last_k", "single"]), turns=st.integers(1, 5))
def test_history_from_is_the_tail_of_the_history_after_every_turn(seed, replies, context, turns):
    episode = TextEpisode(ENV_ID, seed, ProtocolConfig(context=context, context_k=1, max_turns=turns),
                          env_config={"length": 8})
    for reply in [None, *replies]:
        if reply is not None:
            if episode.done:
                break
            episode.step(reply)
        history = episode.history
        assert [episode.history_from(start) for start in range(len(history) + 2)] == \
               [history[start:] for start in range(len(history) + 2)]
