"""Level generation: determinism (golden hashes, separate processes), certificates, band, errors."""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs.sokoban import GenerationError, SokobanConfig, format_level, generate, solve
from ragen_envs.sokoban.deadlocks import dead_mask
from ragen_envs.sokoban.level import Board

GOLDEN = pathlib.Path(__file__).parent / "data" / "sokoban_golden.json"
GOLDEN_CONFIGS = {
    "simple": {"height": 6, "width": 6, "num_boxes": 1},
    "larger": {"height": 8, "width": 8, "num_boxes": 2},
    "boxoban": {"height": 10, "width": 10, "num_boxes": 4},
}
GOLDEN_SEEDS = [0, 1, 2, 3, 7, 42, 1000, 123456, 2**31 - 1, 2**32 + 5]


def level_digest(level) -> str:
    """Hash of a level's text and certificate: any change of generator output changes it."""
    payload = format_level(level) + "\n" + json.dumps(level.certificate.to_dict(), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def current_digests() -> dict[str, dict[str, str]]:
    return {name: {str(s): level_digest(generate(cfg, s)) for s in GOLDEN_SEEDS}
            for name, cfg in GOLDEN_CONFIGS.items()}


def replay(level) -> bool:
    """Play the certificate with the rules written out here, independently of the env."""
    boxes, player, targets = set(level.boxes), level.player, set(level.targets)
    steps = {0: (-1, 0), 1: (1, 0), 2: (0, -1), 3: (0, 1)}
    for action in level.certificate.solution:
        dr, dc = steps[action]
        nxt = (player[0] + dr, player[1] + dc)
        assert nxt not in level.walls
        if nxt in boxes:
            dest = (nxt[0] + dr, nxt[1] + dc)
            assert dest not in level.walls and dest not in boxes
            boxes = (boxes - {nxt}) | {dest}
        player = nxt
    return boxes == targets


def test_golden_hashes_match_committed_file():
    assert current_digests() == json.loads(GOLDEN.read_text())


def test_same_levels_in_a_separate_process():
    code = (
        "import json, sys; sys.path.insert(0, %r); from test_sokoban_generate import current_digests; "
        "print(json.dumps(current_digests()))" % str(pathlib.Path(__file__).parent)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == current_digests()


@pytest.mark.parametrize("cfg", list(GOLDEN_CONFIGS.values()) + [{"height": 7, "width": 7, "num_boxes": 2}])
def test_every_level_replays_its_certificate_and_solver_agrees(cfg):
    for seed in range(25):
        level = generate(cfg, seed)
        cert = level.certificate
        assert replay(level), seed
        assert cert.pushes >= 1 and cert.moves == len(cert.solution)
        pushes = 0  # count the pushes of the certificate independently
        boxes, player = set(level.boxes), level.player
        for a in cert.solution:
            dr, dc = {0: (-1, 0), 1: (1, 0), 2: (0, -1), 3: (0, 1)}[a]
            player = (player[0] + dr, player[1] + dc)
            if player in boxes:
                pushes += 1
                boxes = (boxes - {player}) | {(player[0] + dr, player[1] + dc)}
        assert pushes == cert.pushes
        result = solve(level)
        assert result.solved and result.moves == cert.moves, seed


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**40), lo=st.integers(1, 4), width=st.integers(0, 3),
       selection=st.sampled_from(["hardest", "spread"]))
def test_certificate_lies_in_the_band(seed, lo, width, selection):
    cfg = SokobanConfig(height=7, width=7, num_boxes=2, min_pushes=lo, max_pushes=lo + width,
                        start_selection=selection)
    level = generate(cfg, seed)
    assert lo <= level.certificate.pushes <= lo + width
    assert level.certificate.moves == solve(level).moves  # the band filters levels, never shortens searches
    assert level.seed == seed
    board = Board.of(level)
    assert not board.boxes & dead_mask(board.floor, board.targets, level.width)


@pytest.mark.parametrize(("max_pushes", "seed"), [(2, 57), (4, 31)])
def test_a_push_band_keeps_the_certificate_optimal(max_pushes, seed):
    """A push cap inside the reverse search once certified 12 moves (2 pushes) for a level solved in 10 (4
    pushes), and handed out a level whose fewest-move solutions lie outside the band."""
    level = generate({"height": 8, "width": 8, "num_boxes": 2, "max_pushes": max_pushes}, seed)
    assert level.certificate.moves == solve(level).moves and level.certificate.pushes <= max_pushes


def test_generate_accepts_a_dict_and_is_repeatable():
    a = generate({"height": 8, "width": 8, "num_boxes": 2}, 5)
    assert a == generate(SokobanConfig(height=8, width=8, num_boxes=2), 5)
    assert (a.height, a.width, len(a.boxes)) == (8, 8, 2)
    border = {(r, c) for r in range(8) for c in range(8) if r in (0, 7) or c in (0, 7)}
    assert border <= a.walls


def test_hardest_selection_is_harder_than_spread():
    hardest = [generate({"height": 8, "width": 8, "num_boxes": 2}, s).certificate.pushes for s in range(40)]
    spread = [generate({"height": 8, "width": 8, "num_boxes": 2, "start_selection": "spread"}, s).certificate.pushes
              for s in range(40)]
    assert sum(hardest) > sum(spread)


def test_impossible_band_ends_in_a_clear_error():
    cfg = SokobanConfig(height=5, width=5, num_boxes=1, min_pushes=40, max_attempts=5)
    with pytest.raises(GenerationError, match="40..any pushes found in 5 attempts"):
        generate(cfg, 0)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"height": 4, "width": 4, "num_boxes": 4}, "more boxes than the floor can hold"),
        ({"num_boxes": 0}, "num_boxes must be at least 1"),
        ({"min_pushes": 3, "max_pushes": 2}, "difficulty band is empty"),
        ({"height": 2}, "at least 3x3"),
        ({"height": 6.0}, "height must be an int"),
        ({"p_change_direction": 2}, "p_change_direction"),
        ({"start_selection": "easiest"}, "start_selection must be 'hardest' or 'spread'"),
    ],
)
def test_bad_config_raises_naming_the_problem(fields, message):
    with pytest.raises((ValueError, TypeError), match=message):
        SokobanConfig(**fields)


def test_unknown_config_key_and_bad_seed():
    with pytest.raises(ValueError, match="unknown SokobanConfig field"):
        SokobanConfig.from_dict({"boxes": 2})
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        generate(None, -1)
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        generate(None, "3")
