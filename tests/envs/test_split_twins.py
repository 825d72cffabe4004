"""experiments/split_twins/twins.py: the crop that finds shifted and framed twins, checked on hand-made rooms."""

from __future__ import annotations

from ragen_envs.splits import LevelSplitter
from tests.script_modules import load_script

twins = load_script("experiments/split_twins/twins.py")

ROOM = "######\n### .#\n### @#\n### $#\n###  #\n######"
SHIFTED = "######\n# .###\n# @###\n# $###\n#  ###\n######"
FRAMED = "#######\n#######\n#### .#\n#### @#\n#### $#\n####  #\n#######"


def test_a_shifted_or_framed_room_crops_to_the_same_grid_and_another_room_does_not():
    crop = "####\n# .#\n# @#\n# $#\n#  #\n####"
    assert twins.cropped(ROOM) == twins.cropped(SHIFTED) == twins.cropped(FRAMED) == crop
    box_lower = "######\n### .#\n### @#\n###  #\n### $#\n######"
    assert twins.cropped(box_lower) != twins.cropped(ROOM)


def test_twins_are_counted_only_where_the_grids_differ():
    """A test level equal to a train level is impossible by the split rule; every twin found differs in its grid."""
    row = twins.twins("simple_sokoban", 40, 2_000)
    assert 0 < row["distinct_test_levels"] <= 40 and row["test_levels_with_a_twin"] <= row["distinct_test_levels"]
    if row["example"] is not None:
        example = row["example"]
        assert example["train"] != example["test"]
        assert twins.cropped(example["train"]) == twins.cropped(example["test"])
        assert LevelSplitter("simple_sokoban").split_of(example["train_seed"]) == "train"
