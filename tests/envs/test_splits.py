"""Splits disjoint by level content: no test level is ever a train level, whatever the seed count."""

from __future__ import annotations

import hashlib
import json
import pathlib

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs import PRESETS, split_seeds
from ragen_envs.splits import SPLIT_OFFSETS, SPLIT_SIZE, LevelSplitter, level_split, seed_range_split

GOLDEN = pathlib.Path(__file__).parent / "data" / "splits_golden.json"
ALL = [p.name for p in PRESETS]
# Presets whose generators repeat levels within a few thousand seeds: where seed ranges alone leaked.
SMALL_SPACES = ["sokoban", "simple_sokoban", "simple_sokoban_hard", "frozenlake", "frozenlake_det",
                "bandit_heldout", "bandit_reversed"]
# Slow generators (boxoban: ~50 levels/s here) are checked on fewer train seeds; see docs/envs.md.
TRAIN_SEEDS_CHECKED = {"larger_sokoban": 20_000, "larger_sokoban_hard": 10_000, "frozenlake_8x8": 50_000,
                       "boxoban": 2_000, "boxoban_hard": 1_000, "sudoku": 50_000, "sudoku_9x9": 2_000,
                       "rubiks_2x2": 20_000, "rubiks_2x2_hard": 20_000}


def start_texts(env_name: str, seeds) -> list[str]:
    """The start of each seed's level read through plain Gymnasium (not through ragen_envs.splits)."""
    env = gym.make(ragen_envs.get_preset(env_name).env_id).unwrapped
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        state = env.state_dict()
        if state["game"] == "bandit":
            out.append(json.dumps(sorted((a["name"], a["low_risk"]) for a in state["arms"])))
        else:
            out.append("\n".join(state["rows"]))
    return out


def bucket(key: bytes) -> int:
    """The hash bucket computed here from the documented rule (blake2b, 8 bytes, big-endian, mod 100)."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8, person=b"ragen-split-v1").digest(), "big") % 100


def test_level_split_follows_the_documented_buckets() -> None:
    keys = [f"level {i}".encode() for i in range(3000)]
    expected = ["train" if bucket(k) < 80 else "val" if bucket(k) < 90 else "test" for k in keys]
    assert [level_split(k) for k in keys] == expected
    shares = {s: expected.count(s) / len(keys) for s in ("train", "val", "test")}
    assert abs(shares["train"] - 0.8) < 0.03 and abs(shares["test"] - 0.1) < 0.02
    assert level_split(None) is None


def test_the_old_seed_ranges_did_leak() -> None:
    """The failure this module exists for: without the content rule, test levels were train levels."""
    train = set(start_texts("simple_sokoban", range(0, 5000)))
    test = start_texts("simple_sokoban", range(SPLIT_OFFSETS["test"], SPLIT_OFFSETS["test"] + 200))
    assert sum(t in train for t in test) > 20


@pytest.mark.parametrize("env", SMALL_SPACES)
def test_no_test_level_among_5k_train_seeds(env: str) -> None:
    splitter = LevelSplitter(env)
    train_seeds = [s for s in range(5000) if splitter.belongs("train", s)]
    assert 0.6 * 5000 < len(train_seeds) < 0.95 * 5000
    # levels read independently of the splitter, compared as text
    test = set(start_texts(env, split_seeds("test", 128, env=env)))
    assert test.isdisjoint(start_texts(env, train_seeds))


@pytest.mark.slow
# Visual presets play their text preset's levels (tests/envs/test_visual_presets.py), so they are not walked again.
@pytest.mark.parametrize("env", [p.name for p in PRESETS if p.name != "bandit" and not p.visual])
def test_first_512_test_levels_are_not_among_100k_train_seeds(env: str) -> None:
    splitter = LevelSplitter(env)
    test_seeds = splitter.seeds("test", 512)
    test_keys = {splitter.level_key(s) for s in test_seeds}
    assert all(level_split(k) == "test" for k in test_keys)
    limit = TRAIN_SEEDS_CHECKED.get(env, 100_000)
    train_keys = {splitter.level_key(s) for s in splitter.seeds("train", int(0.8 * limit))}
    assert not test_keys & train_keys
    # and the same for val, which picks checkpoints
    assert not {splitter.level_key(s) for s in splitter.seeds("val", 128)} & train_keys


def test_bandit_shares_its_single_level_and_holds_out_name_sets() -> None:
    # RAGEN's bandit draws one pair of names, so every split plays it: the seed ranges alone.
    assert split_seeds("test", 5, env="bandit") == list(range(SPLIT_OFFSETS["test"], SPLIT_OFFSETS["test"] + 5))
    heldout = LevelSplitter("bandit_heldout")
    test_pairs = set(start_texts("bandit_heldout", heldout.seeds("test", 64)))
    train_pairs = set(start_texts("bandit_heldout", heldout.seeds("train", 2000)))
    assert test_pairs and not test_pairs & train_pairs
    # The name set decides the level, not the order: both orders of a test pair are test levels.
    assert len(test_pairs) < 64


@pytest.mark.parametrize("env", ["simple_sokoban", "frozenlake", "bandit_reversed", "larger_sokoban"])
def test_split_seeds_keeps_exactly_the_split_levels_in_order(env: str) -> None:
    seeds = split_seeds("val", 40, start=1000, env=env)
    base = SPLIT_OFFSETS["val"] + 1000
    walked = range(base, seeds[-1] + 1)
    splitter = LevelSplitter(env)
    assert seeds == [s for s in walked if level_split(splitter.level_key(s)) == "val"]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 3 * SPLIT_SIZE - 1), env=st.sampled_from(["simple_sokoban", "frozenlake_det", "bandit_heldout"]))
def test_a_seed_belongs_to_exactly_its_range_split_or_none(seed: int, env: str) -> None:
    splitter = LevelSplitter(env)
    member = [s for s in SPLIT_OFFSETS if splitter.belongs(s, seed)]
    level = level_split(splitter.level_key(seed))
    assert member == ([seed_range_split(seed)] if level == seed_range_split(seed) else [])


@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, 2**31 - 1), b=st.integers(0, 60))
def test_equal_keys_exactly_for_equal_starts(a: int, b: int) -> None:
    for env in ("simple_sokoban", "frozenlake", "bandit_heldout"):
        splitter = LevelSplitter(env)
        # b is small so that the pair often meets the same level in these small spaces
        same_key = splitter.level_key(a) == splitter.level_key(b)
        text_a, text_b = start_texts(env, [a, b])
        assert same_key == (text_a == text_b)


def test_presets_sharing_a_generator_agree_on_every_split() -> None:
    det, slippery = LevelSplitter("frozenlake_det"), LevelSplitter("frozenlake")
    assert split_seeds("test", 50, env="frozenlake") == split_seeds("test", 50, env="frozenlake_det")
    assert all(det.split_of(s) == slippery.split_of(s) for s in range(500))


def test_env_config_overrides_change_the_levels_and_so_the_seeds() -> None:
    plain = split_seeds("test", 30, env="frozenlake")
    wider = split_seeds("test", 30, env="frozenlake", env_config={"height": 5, "width": 5})
    assert plain != wider
    splitter = LevelSplitter("frozenlake", {"height": 5, "width": 5})
    assert all(level_split(splitter.level_key(s)) == "test" for s in wider)


def test_golden_split_seeds_match_committed_file() -> None:
    """Pins the split rule: a change to the hash or to a level key moves levels between splits."""
    golden = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(ALL)
    for env, by_split in golden.items():
        for split, seeds in by_split.items():
            assert split_seeds(split, len(seeds), env=env) == seeds, (env, split)


@pytest.mark.parametrize("bad", [
    dict(split="dev", n=3),
    dict(split="test", n=-1),
    dict(split="test", n=3, start=SPLIT_SIZE),
])
def test_bad_arguments_are_one_clear_error(bad: dict) -> None:
    with pytest.raises(ValueError, match="split"):
        split_seeds(env="simple_sokoban", **bad)


def test_a_split_without_levels_says_so_instead_of_walking_forever() -> None:
    # A lake of two cells has two levels (SG and GS); their hashes cannot fill all three splits.
    splitter = LevelSplitter("frozenlake", {"height": 1, "width": 2})
    keys = {splitter.level_key(s) for s in range(50)}
    assert keys == {b"frozenlake\nSG", b"frozenlake\nGS"}
    splits = {level_split(k) for k in keys}
    empty = next(s for s in SPLIT_OFFSETS if s not in splits)
    with pytest.raises(ValueError, match=f"split '{empty}' of frozenlake kept only 0 of 1"):
        split_seeds(empty, 1, env="frozenlake", env_config={"height": 1, "width": 2})
