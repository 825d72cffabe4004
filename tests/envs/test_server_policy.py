"""`ClientPolicy`: what a server's clients may ask, checked call by call (the servers' own tests go over HTTP).

Level files are written here from levels our generator makes; every episode the policy opens is compared
with an in-process :class:`TextEpisode` built directly.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from ragen_envs.deadline import DeadlineExceeded, check_deadline, time_limit
from ragen_envs.server.policy import (DEFAULT_ENV_CONFIG_LIMITS, ClientPolicy, PolicyError, add_policy_arguments,
                                      check_bind, policy_from_args, token_matches)
from ragen_envs.sokoban import SokobanConfig, format_boxoban, generate
from ragen_envs.sokoban import level_files
from ragen_envs.text import TextEpisode

#: The issue's probe: a 30x30 room with 8 boxes and budgets that kept a server busy for minutes.
HOSTILE = {"height": 30, "width": 30, "num_boxes": 8, "search_budget": 10_000_000, "max_attempts": 1_000_000}
pytestmark = pytest.mark.usefixtures("fresh_level_sets")  # level sets load from disk in every test


@pytest.fixture
def level_dir(tmp_path) -> Path:
    """A levels directory with a three-level file and a two-file subdirectory, and a secret file outside it."""
    levels = [generate(SokobanConfig(height=6, width=6, num_boxes=1), seed) for seed in range(5)]
    root = tmp_path / "levels"
    (root / "pack").mkdir(parents=True)
    (root / "three.txt").write_text(format_boxoban(levels[:3]), encoding="utf-8")
    (root / "pack" / "a.txt").write_text(format_boxoban(levels[3:4]), encoding="utf-8")
    (root / "pack" / "b.txt").write_text(format_boxoban(levels[4:]), encoding="utf-8")
    (tmp_path / "secret.txt").write_text(format_boxoban(levels[:1]), encoding="utf-8")
    return root


def _refused(status: int, words: str, call, *args, **kwargs) -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == status, str(caught.value)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    return caught.value


def test_presets_play_as_in_process_and_overrides_are_refused_by_default():
    policy = ClientPolicy()
    episode = policy.open_episode("simple_sokoban", 5, {"max_turns": 3})
    assert episode.messages == TextEpisode("simple_sokoban", 5, {"max_turns": 3}).messages
    _refused(403, "presets as they are", policy.open_episode, "simple_sokoban", 5, env_config={"height": 7})
    _refused(403, "not open to clients", policy.open_episode, "simple_sokoban", 5, env_config={"levels": "/etc/passwd"})
    _refused(400, "unknown environment", policy.open_episode, "CartPole-v1")
    _refused(400, "seed must be", policy.open_episode, "bandit", -1)
    _refused(400, "seed must be", policy.open_episode, "bandit", True)
    _refused(403, "protocol field 'extra'", policy.open_episode, "bandit", 1, {"extra": {"a": 1}})
    # Twice -1e308 is -inf: the server once sent "total_reward": -Infinity, which is not JSON.
    _refused(403, "format_penalty=-1e+308 is under this server's limit of -1000", policy.open_episode, "bandit", 1,
             {"format_penalty": -1e308})
    _refused(403, "over this server's limit of 50", policy.open_episode, "bandit", 1, {"max_turns": 51})
    _refused(403, "8192", policy.open_episode, "bandit", 1, {"system_prompt": "x" * 8193})
    _refused(400, "finite", policy.open_episode, "bandit", 1, {"format_penalty": float("nan")})
    _refused(400, "max_turn", policy.open_episode, "bandit", 1, {"max_turns": "3"})


def test_opened_overrides_play_within_their_ceilings():
    policy = ClientPolicy(env_config_limits=DEFAULT_ENV_CONFIG_LIMITS)
    config = {"height": 7, "width": 7, "num_boxes": 2}
    episode = policy.open_episode("sokoban", 3, env_config=config)
    assert episode.messages == TextEpisode("sokoban", 3, env_config=config).messages
    _refused(403, "env_config.height=30 is over this server's limit of 10", policy.open_episode, "sokoban", 3,
             env_config=HOSTILE)
    _refused(403, "search_budget=10000000 is over this server's limit of 20000", policy.open_episode, "sokoban", 3,
             env_config={"search_budget": 10_000_000})
    _refused(403, "arm_names holds a text of 40", policy.open_episode, "bandit", 1,
             env_config={"arm_names": ["a" * 40, "b"]})
    _refused(400, "SokobanConfig.height must be an int", policy.open_episode, "sokoban", 1, env_config={"height": "9"})


def test_generation_past_the_budget_is_stopped_with_a_422():
    # An operator who opened every field without a ceiling still gets the work stopped at the deadline.
    unbounded = {game: {name: None for name in limits} for game, limits in DEFAULT_ENV_CONFIG_LIMITS.items()}
    policy = ClientPolicy(env_config_limits=unbounded, generation_timeout_s=0.5)
    start = time.monotonic()
    _refused(422, "budget of 0.5s", policy.open_episode, "sokoban", 1, env_config=HOSTILE)
    assert time.monotonic() - start < 3.0
    assert policy.open_episode("sokoban", 1).done is False  # the builder slot was given back


def test_builds_beyond_the_concurrency_cap_wait_then_get_a_503():
    policy = ClientPolicy(max_concurrent_generations=1, generation_timeout_s=0.3)
    policy._builds.acquire()  # stands for a build in progress: the only builder is busy
    try:
        _refused(503, "1 episode builders stayed busy", policy.open_episode, "bandit", 1)
    finally:
        policy._builds.release()
    assert policy.open_episode("bandit", 1).done is False


def test_a_deadline_stops_only_work_inside_its_block():
    check_deadline()  # no block: nothing to stop
    with pytest.raises(DeadlineExceeded, match="0.05s"):
        with time_limit(0.05):
            time.sleep(0.1)
            check_deadline()
    check_deadline()
    with time_limit(10):
        with time_limit(0.01):  # the inner, earlier deadline wins
            time.sleep(0.05)
            with pytest.raises(DeadlineExceeded):
                check_deadline()
        check_deadline()
    # A deadline set in one thread does not reach another.
    seen = []
    with time_limit(0.01):
        time.sleep(0.05)
        worker = threading.Thread(target=lambda: seen.append(check_deadline()))
        worker.start()
        worker.join()
    assert seen == [None]


def test_level_sets_are_served_by_name_only(level_dir, tmp_path):
    policy = ClientPolicy(levels_dirs=(level_dir,), cache_dir=tmp_path / "cache")
    assert policy.level_names() == ["pack", "three.txt"]
    episode = policy.open_episode("sokoban", 2, levels="three.txt")
    local = TextEpisode("sokoban", 2, env_config={"levels": str(level_dir / "three.txt")})
    assert episode.messages == local.messages and episode.certificate == local.certificate
    assert episode.env_config["levels"] == "three.txt"  # the server's path is not shown
    assert policy.open_episode("sokoban", 1, levels="pack").game.level_source["file"] == "b.txt"
    for path in (str(tmp_path / "secret.txt"), "/etc/passwd", "../secret.txt", "pack/../../secret.txt", "~/x.txt"):
        _refused(400, "not a path", policy.open_episode, "sokoban", 0, levels=path)
    # A file outside and a missing file get the same answer; so does a link that leads out.
    (level_dir / "out.txt").symlink_to(tmp_path / "secret.txt")
    (level_dir / ".hidden.txt").write_text((level_dir / "three.txt").read_text())
    assert policy.level_names() == ["pack", "three.txt"]
    for name in ("secret.txt", "nothing.txt", "out.txt", "three.txt.certificates.json", ".hidden.txt"):
        _refused(404, f"no level set {name!r} on this server", policy.open_episode, "sokoban", 0, levels=name)
    _refused(400, "Sokoban presets", policy.open_episode, "bandit", 0, levels="three.txt")
    _refused(400, "holds 3 levels", policy.open_episode, "sokoban", 3, levels="three.txt")
    _refused(403, "serves no level files", ClientPolicy().open_episode, "sokoban", 0, levels="three.txt")
    small = ClientPolicy(levels_dirs=(level_dir,), max_level_bytes=50)
    _refused(403, "over this server's limit of 50", small.open_episode, "sokoban", 0, levels="three.txt")


def test_certificates_go_to_the_cache_dir_and_nothing_beside_the_files(level_dir, tmp_path):
    policy = ClientPolicy(levels_dirs=(level_dir,), cache_dir=tmp_path / "cache")
    before = sorted(p.relative_to(level_dir) for p in level_dir.rglob("*"))
    # More sets than the process keeps in memory, in turn, so each is loaded again while others come and go.
    for name in ("three.txt", "pack") * (level_files.MAX_SETS_KEPT + 1):
        policy.open_episode("sokoban", 0, levels=name)
    for extra in range(level_files.MAX_SETS_KEPT + 1):
        (level_dir / f"x{extra}.txt").write_text((level_dir / "pack" / "a.txt").read_text())
        policy.open_episode("sokoban", 0, levels=f"x{extra}.txt")
        (level_dir / f"x{extra}.txt").unlink()
    assert sorted(p.relative_to(level_dir) for p in level_dir.rglob("*")) == before
    assert not (tmp_path / "user_cache").exists()
    cached = sorted((tmp_path / "cache").glob("*.json"))
    assert len(cached) == 3  # three.txt, a.txt and b.txt (the x files hold a.txt's levels)
    assert all(json.loads(p.read_text())["levels"] for p in cached)


def test_a_seedless_reset_on_a_level_set_picks_one_of_its_levels(level_dir, tmp_path):
    policy = ClientPolicy(levels_dirs=(level_dir,), cache_dir=tmp_path / "cache")
    seeds = {policy.open_episode("sokoban", levels="three.txt").seed for _ in range(30)}
    assert seeds == {0, 1, 2}  # every level is drawn, none outside (1 in 10**5 to miss one by chance)
    assert 0 <= policy.open_episode("simple_sokoban").seed < 2**31


def test_binding_beyond_loopback_needs_a_token_and_tokens_compare_exactly():
    for host in ("127.0.0.1", "127.3.2.1", "::1", "localhost"):
        check_bind(host, None)
    for host in ("0.0.0.0", "", "192.168.1.5", "::", "example.org"):
        with pytest.raises(ValueError, match="--auth-token-env"):
            check_bind(host, None)
        check_bind(host, "a-long-secret-token")
    for token in ("s3cret-token", "A-z_0.9~+/==", "x"):
        assert token_matches(ClientPolicy(auth_token=token).auth_token, f"Bearer {token}")
    for token in ("", " ", "s3cret\n", "s3cret ", "\ts3cret", "s3 cret", "s\u00e9cret", "s3cret\x00", "=abc", "a=b"):
        with pytest.raises(ValueError, match="RFC 6750"):
            ClientPolicy(auth_token=token)
    assert token_matches(None, None) and token_matches(None, "Bearer anything")
    assert token_matches("s3cret-token", "Bearer s3cret-token")
    assert token_matches("s3cret-token", "bearer  s3cret-token")
    for header in (None, "", "s3cret-token", "Basic s3cret-token", "Bearer s3cret-toke", "Bearer s3cret-token2",
                   "Bearer", "Bearer \udcff"):
        assert not token_matches("s3cret-token", header)


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_policy_arguments(parser)
    return parser.parse_args(argv)


def test_operator_flags_build_the_policy(monkeypatch, level_dir, tmp_path):
    assert policy_from_args(_args([])) == ClientPolicy()
    monkeypatch.setenv("RAGEN_TEST_TOKEN", "tok-" + "x" * 20)
    policy = policy_from_args(_args([
        "--levels-dir", str(level_dir), "--cache-dir", str(tmp_path / "c"), "--auth-token-env", "RAGEN_TEST_TOKEN",
        "--allow-env-config", "--env-config-limit", "sokoban.height=8", "--env-config-limit", "protocol.max_turns=none",
        "--env-config-limit", "frozenlake.p_frozen=none", "--max-sessions-per-client", "4",
        "--generation-timeout", "2"]))
    assert policy.levels_dirs == (level_dir,) and policy.cache_dir == tmp_path / "c"
    assert policy.auth_token == "tok-" + "x" * 20 and "tok-" not in repr(policy)
    assert policy.env_config_limits["sokoban"]["height"] == 8 and policy.env_config_limits["sokoban"]["width"] == 10
    assert policy.protocol_limits["max_turns"] is None and policy.max_sessions_per_client == 4
    assert policy.generation_timeout_s == 2.0
    monkeypatch.delenv("RAGEN_TEST_TOKEN")
    bad = {
        ("--auth-token-env", "RAGEN_TEST_TOKEN"): "not set",
        ("--env-config-limit", "height=8"): "GAME.FIELD=MAX",
        ("--env-config-limit", "sokoban.height=big"): "a number or 'none'",
        ("--env-config-limit", "sokoban.levels=none"): "--env-config-limit",
        ("--levels-dir", str(tmp_path / "missing")): "--levels-dir",
        ("--max-connections", "0"): "--max-connections",
        ("--generation-timeout", "nan"): "--generation-timeout",
        # Each of these once started a server: 1e10 s overflowed every level-set reset into a 500, and the
        # misspelt limits opened nothing, silently.
        ("--generation-timeout", "1e10"): "--generation-timeout: generation_timeout_s must be a number of seconds in",
        ("--env-config-limit", "sokobn.height=8"): "--env-config-limit: env-config field(s) ['height'] of 'sokobn'",
        ("--env-config-limit", "sokoban.heigth=8"): "--env-config-limit: env-config field(s) ['heigth'] are not",
        ("--env-config-limit", "protocol.bogus=3"): "--env-config-limit: protocol field(s) ['bogus'] in the",
    }
    for argv, words in bad.items():
        with pytest.raises(ValueError, match=re.escape(words)):
            policy_from_args(_args(list(argv)))
    assert os.environ.get("RAGEN_TEST_TOKEN") is None


def test_certifying_a_level_set_past_the_budget_is_stopped(tmp_path):
    levels = [generate(SokobanConfig(height=10, width=10, num_boxes=4), seed) for seed in range(40)]
    (tmp_path / "levels").mkdir()
    (tmp_path / "levels" / "forty.txt").write_text(format_boxoban(levels), encoding="utf-8")
    hurried = ClientPolicy(levels_dirs=(tmp_path / "levels",), cache_dir=tmp_path / "cache", generation_timeout_s=0.05)
    start = time.monotonic()
    _refused(422, "budget of 0.05s", hurried.open_episode, "boxoban", 39, levels="forty.txt")
    assert time.monotonic() - start < 1.0
    patient = ClientPolicy(levels_dirs=(tmp_path / "levels",), cache_dir=tmp_path / "cache")
    episode = patient.open_episode("boxoban", 39, levels="forty.txt")
    assert episode.certificate["moves"] == levels[39].certificate.moves
