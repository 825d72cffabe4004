"""scripts/level_space.py: its estimator against hand counts, and the committed table against its JSON."""

from __future__ import annotations

import json
from collections import Counter

from tests.script_modules import REPO, load_script

level_space = load_script("scripts/level_space.py")


def test_chao1_matches_hand_counts():
    # 3 distinct levels: two seen once (f1 = 2), one seen twice (f2 = 1): 3 + 2*2 / (2*1) = 5
    assert level_space.chao1(Counter({"a": 1, "b": 1, "c": 2})) == 5
    # every level seen at least twice: the sample holds the whole space
    assert level_space.chao1(Counter({"a": 2, "b": 3})) == 2


def _row(distinct, once, twice, sampled=1000):
    return {"sampled_seeds": sampled, "distinct_in_sample": distinct, "seen_once": once, "seen_twice": twice,
            "chao1_estimate": 123, "split_seeds_test_512_seconds": 1.0,
            "old_overlap_512_test_range_vs_20k_train_range": 0, "overlap_512_test_split_vs_sampled_train_split": 0}


def test_table_says_when_the_estimate_rests_on_nothing_or_little():
    table = level_space.table({"never_twice": _row(1000, 1000, 0), "few_twice": _row(990, 980, 10),
                               "many_twice": _row(500, 200, 150)})
    rows = {line.split("|")[1].strip(" `"): line for line in table.splitlines()[2:]}
    assert "> 1,000 | no level repeated among 1,000 seeds" in rows["never_twice"]
    assert "~123" in rows["few_twice"] and "only 10 twice (rough)" in rows["few_twice"]
    assert "~123" in rows["many_twice"] and "rough" not in rows["many_twice"]


def test_committed_table_is_the_committed_json():
    report = json.loads((REPO / "docs" / "envs" / "level_space.json").read_text())
    doc = (REPO / "docs" / "envs.md").read_text()
    assert f"{level_space.TABLE_BEGIN}\n{level_space.table(report)}\n{level_space.TABLE_END}" in doc


def test_exact_countdown_and_cube_counts_match_hand_counts():
    # 2 numbers from 1..3, targets 1..10: (1,1) 1 2; (1,2) 1 2 3; (1,3) 2 3 4; (2,2) 1 4; (2,3) 1 5 6; (3,3) 1 6 9
    countdown = level_space.countdown_levels_exact({"count": 2, "max_number": 3, "max_target": 10})
    assert countdown["total"] == 16 == countdown["train"] + countdown["val"] + countdown["test"]
    # the 2x2 cube in face turns: 9 states one turn from solved, 54 two turns (published distance counts)
    cube = level_space.cube_levels_exact({"min_distance": 1, "max_distance": 2})
    assert cube["total"] == 63 == cube["train"] + cube["val"] + cube["test"]
    assert level_space.cube_levels_exact({"min_distance": 5, "max_distance": 8}, split_up_to=4)["total"] == \
        9992 + 50136 + 227536 + 870072
