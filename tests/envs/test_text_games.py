"""The text protocol on the real games: scripted wins and losses, the oracle, replay, transcripts, GIFs."""

from __future__ import annotations

import importlib.util
import json
from collections import deque

import pytest

from ragen_envs.text import EpisodeBatch, ProtocolConfig, TextEpisode, oracle_responses, replay, to_markdown

# The games are developed alongside this layer; each block runs once its game exists.
HAS_SOKOBAN = importlib.util.find_spec("ragen_envs.sokoban.env") is not None
HAS_FROZEN_LAKE = importlib.util.find_spec("ragen_envs.frozen_lake.env") is not None
HAS_BANDIT = importlib.util.find_spec("ragen_envs.bandit.env") is not None
needs_sokoban = pytest.mark.skipif(not HAS_SOKOBAN, reason="ragen_envs.sokoban.env not written yet")
needs_frozen_lake = pytest.mark.skipif(not HAS_FROZEN_LAKE, reason="ragen_envs.frozen_lake.env not written yet")
needs_bandit = pytest.mark.skipif(not HAS_BANDIT, reason="ragen_envs.bandit.env not written yet")

MOVES = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}


def play(episode, replies):
    for reply in replies:
        if episode.done:
            break
        episode.step(reply)
    return episode


def solution_names(episode):
    """The certificate's optimal actions as names (each game stores them its own way)."""
    cert, names = episode.certificate, episode.game.action_names
    if "solution" in cert:
        return list(cert["solution"])
    return [names[i] for i in cert["shortest_path"]]


def bfs_to(state, targets):
    """Moves from the player to the nearest cell in ``targets`` over non-hole cells (FrozenLake rows)."""
    rows = state["rows"]
    start = tuple(state["player"])
    queue, seen = deque([(start, [])]), {start}
    while queue:
        (r, c), path = queue.popleft()
        if (r, c) in targets:
            return path
        for name, (dr, dc) in MOVES.items():
            nr, nc = r + dr, c + dc
            if 0 <= nr < len(rows) and 0 <= nc < len(rows[0]) and (nr, nc) not in seen:
                if rows[nr][nc] != "H" or (nr, nc) in targets:
                    seen.add((nr, nc))
                    queue.append(((nr, nc), path + [name]))
    return None


def assert_accounts(record):
    assert record["total_reward"] == pytest.approx(sum(t["reward"] + t["penalty"] for t in record["turns"]))
    assert record["num_actions"] == sum(len(t["actions_executed"]) for t in record["turns"])
    for a, b in zip(record["turns"], record["turns"][1:]):
        assert a["state_after"] == b["state_before"]


@needs_frozen_lake
def test_frozenlake_oracle_wins_every_level_winnable_within_budget():
    wins = 0
    for seed in range(40):
        episode = TextEpisode("frozenlake_det", seed)
        plan = solution_names(episode)
        play(episode, oracle_responses(plan, episode.config))
        if len(plan) <= episode.config.max_actions_per_episode:
            assert episode.success and episode.end_reason == "success", seed
            assert episode.num_actions == len(plan) and episode.total_reward == pytest.approx(1.0)
            wins += 1
        else:
            assert episode.end_reason == "max_actions"
    assert wins > 0


@needs_frozen_lake
def test_frozenlake_walking_into_a_hole_is_a_failure():
    for seed in range(10):
        episode = TextEpisode("frozenlake_det", seed)
        holes = {tuple(h) for h in episode.game.state_dict()["holes"]}
        path = bfs_to(episode.game.state_dict(), holes)
        if path is None or len(path) > 10:
            continue
        play(episode, oracle_responses(path, episode.config))
        assert episode.end_reason == "failure" and not episode.success
        assert episode.record()["turns"][-1]["state_after"]["player"] in [list(h) for h in holes]
        assert_accounts(episode.record())
        return
    pytest.fail("no seed in 0..9 has a hole reachable within 10 moves")


@needs_frozen_lake
@pytest.mark.parametrize("fmt", ["grid", "coords", "grid+coords"])
def test_frozenlake_slippery_replay_reproduces_every_state(fmt):
    config = ProtocolConfig(observation_format=fmt, context="last_k", context_k=1)
    replies = ["<think>go</think><answer>Down || Right || Down || Right || Up</answer>", "oops",
               "<think>x</think><answer>Left || Down || Right</answer>"] * 2
    for seed in range(5):
        record = json.loads(json.dumps(play(TextEpisode("frozenlake", seed, config), replies).record()))
        assert_accounts(record)
        assert replay(record).record()["turns"] == record["turns"]


@needs_frozen_lake
def test_frozenlake_new_vocabulary_is_a_config_change():
    vocab = {"player": "A", "hole": "#", "frozen": "."}
    episode = TextEpisode("frozenlake_det", 1, ProtocolConfig(symbols=vocab))
    first = episode.messages[1]["content"]
    observation = episode.game.observation_text("grid", vocab, 0)
    assert observation in first and "A" in observation and "P" not in observation


@needs_sokoban
@pytest.mark.parametrize("preset", ["simple_sokoban", "larger_sokoban"])
def test_sokoban_oracle_wins_every_level_winnable_within_budget(preset):
    checked = 0
    for seed in range(30):
        episode = TextEpisode(preset, seed)
        plan = solution_names(episode)
        play(episode, oracle_responses(plan, episode.config))
        record = episode.record()
        assert_accounts(record)
        if len(plan) <= episode.config.max_actions_per_episode:
            assert episode.success and episode.end_reason == "success", seed
            checked += 1
        else:
            assert not episode.success and episode.end_reason == "max_actions"
    assert checked >= 5


@needs_sokoban
def test_sokoban_wandering_runs_out_of_actions():
    episode = TextEpisode("simple_sokoban", 3)
    play(episode, ["<think>dance</think><answer>Left || Right || Left || Right || Left</answer>"] * 5)
    assert episode.end_reason in ("max_actions", "failure") and not episode.success
    assert episode.num_actions <= episode.config.max_actions_per_episode == 20 and episode.total_reward < 0
    assert_accounts(episode.record())
    record = json.loads(json.dumps(episode.record()))
    assert replay(record).record()["turns"] == record["turns"]


@needs_bandit
def test_bandit_best_arm_wins_other_arm_fails_and_replays():
    for seed in range(6):
        for pick_best in (True, False):
            episode = TextEpisode("bandit", seed)
            assert episode.config.max_turns == 1 and episode.config.max_actions_per_episode == 1
            best = episode.certificate["best_arm_names"]
            name = best[0] if pick_best else next(n for n in episode.game.action_names if n not in best)
            turn = episode.step(oracle_responses([name], episode.config)[0])
            assert episode.done and turn["actions_executed"] == [name]
            assert episode.success == pick_best
            assert episode.end_reason == ("success" if pick_best else "failure")
            record = json.loads(json.dumps(episode.record()))
            assert_accounts(record)
            assert replay(record).record()["turns"] == record["turns"]
    bad = TextEpisode("bandit", 0)
    bad.step("<answer>whatever</answer>")
    assert bad.done and bad.end_reason == "max_turns" and bad.total_reward == pytest.approx(-0.1)


@needs_frozen_lake
def test_batch_of_real_episodes_matches_single_episodes():
    batch = EpisodeBatch("frozenlake", range(8))
    replies = ["<think>t</think><answer>Right || Down</answer>", "<answer>Up</answer>"]
    step = 0
    while not batch.done:
        batch.step([replies[(step + i) % 2] for i in range(len(batch.active))])
        step += 1
    for record in batch.records():
        assert replay(json.loads(json.dumps(record))).record() == record


@needs_frozen_lake
def test_markdown_and_gif(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    from ragen_envs.text import save_episode_gif

    episode = TextEpisode("frozenlake_det", 2)
    plan = " || ".join(solution_names(episode))
    play(episode, ["nope", f"<think>I follow the path.</think><answer>{plan}</answer>"])
    record = json.loads(json.dumps(episode.record()))
    markdown = to_markdown(record)
    assert "## Turn 1" in markdown and "I follow the path." in markdown and "## Turn 2" in markdown
    path = save_episode_gif(record, tmp_path / "episode.gif")
    with Image.open(path) as gif:
        executed = sum(len(t["actions_executed"]) for t in record["turns"])
        # start frame, one frame per turn, one per executed action, end frame
        assert gif.n_frames == 2 + len(record["turns"]) + executed
        assert gif.size[0] > episode.game.config.width * 32


@pytest.mark.parametrize(
    "preset",
    [p for p, ok in (("simple_sokoban", HAS_SOKOBAN), ("frozenlake", HAS_FROZEN_LAKE), ("bandit", HAS_BANDIT)) if ok],
)
def test_state_dicts_are_fresh_plain_json(preset):
    """The protocol stores state_dict() as given, so it must be plain JSON and never alias game state."""
    episode = TextEpisode(preset, 7)
    state = episode.game.state_dict()
    snapshot = json.loads(json.dumps(state))
    assert snapshot == state
    first = episode.game.action_names[0]
    episode.step(f"<think>t</think><answer>{first}</answer>")
    assert state == snapshot  # stepping did not change the dict handed out before


def test_command_line_prints_the_chat():
    import subprocess
    import sys

    preset = "frozenlake" if HAS_FROZEN_LAKE else "bandit"
    out = subprocess.run(
        [sys.executable, "-m", "ragen_envs.text", preset, "--seed", "1", "--context", "single",
         "--reply", "<answer>nothing</answer>"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    assert out.startswith("--- system ---") and "--- user ---" in out
