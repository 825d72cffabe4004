"""experiments/thinking_model/bandit_names.py: name copies counted on hand-written first turns."""

from __future__ import annotations

import json
import sys
import types

import pytest

import ragen_envs.bandit as bandit_package
from tests.script_modules import load_script

bandit_names = load_script("experiments/thinking_model/bandit_names.py")


def _record(names: list[str], think: str, answer: str) -> dict:
    """The first arm is the safe one and pays less; the second is risky and pays more."""
    arms = [{"name": name, "expected_reward": 0.1 + 0.15 * i, "variance": 0.1875 * i, "low_risk": not i}
            for i, name in enumerate(names)]
    return {"turns": [{"state_before": {"game": "bandit", "arms": arms}, "think": think, "answer": answer}]}


def test_counts_thoughts_that_copy_both_names_and_answers_from_the_prompt(tmp_path, capsys):
    run = tmp_path / "m-bandit_heldout-val"
    run.mkdir()
    records = [
        _record(["Owl", "Tiger"], "The arms are Tiger and Owl. Tiger is the riskier arm.", "Tiger"),  # either order
        _record(["Owl", "Tiger"], "The arms are Owl and Shark. Shark is the riskier arm.", "Shark"),  # a recalled name
        _record(["Dove", "Kraken"], "The arms are Dove and Kraken.", " Kraken "),  # the harness strips the answer
        _record(["Dove", "Kraken"], "", "Dove"),  # no thought
        _record(["Dove", "Kraken"], "The arms are Dove and Dove.", "Dove"),  # one name twice is not both
    ]
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "names.json"
    assert bandit_names.main([str(run), "--json", str(out)]) == 0
    figures = json.loads(out.read_text())[run.name]
    assert (figures["episodes"], figures["thought_names_right"], figures["answer_in_prompt"]) == (5, 2, 4)
    # checked claims: arms(tiger,owl) and risk(tiger,high) true; arms(owl,shark) false (Shark is no arm, so its
    # risk is no claim); arms(dove,kraken) true; arms(dove,dove) false
    assert (figures["n_claims"], figures["n_true"]) == (5, 3)
    assert (figures["n_claims_without_list"], figures["n_true_without_list"]) == (1, 1)
    assert figures["by_pair"] == {
        "Dove, Kraken": {"episodes": 3, "thought_names_right": 1, "answer_in_prompt": 3},
        "Owl, Tiger": {"episodes": 2, "thought_names_right": 1, "answer_in_prompt": 1}}
    assert ("thought names right 2 of 5, answer in the prompt 4; claims true 3 of 5, without the lists of arms 1 of 1"
            in capsys.readouterr().out)


def test_a_directory_without_episodes_is_refused(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        bandit_names.main([str(tmp_path)])
    assert exit_.value.code == 2


def test_the_copy_probe_plays_its_wide_name_set_and_leaves_the_package_alone(tmp_path, monkeypatch):
    probe = load_script("experiments/thinking_model/bandit_copy_probe.py")
    readers = probe.pool_readers()
    assert {bandit_package.names, bandit_package.config, bandit_package.env, bandit_package.level} <= set(readers)
    for module in readers:  # the probe rebinds NAME_POOLS in these; put the package's back after the test
        monkeypatch.setattr(module, "NAME_POOLS", module.NAME_POOLS)
    assert probe.main(["bogus"]) == 2
    assert probe.main(["eval", "--model", "oracle", "--env", "bandit", "--env-config", "bandit:name_set=wide",
                       "--split", "val", "--episodes", "4", "--out", str(tmp_path), "--run-name", "wide",
                       "--no-progress"]) == 0
    records = [json.loads(line) for line in (tmp_path / "wide" / "episodes.jsonl").read_text().splitlines()]
    wide = set(probe.WIDE.low_risk + probe.WIDE.high_risk)
    assert len(records) == 4
    assert all({arm["name"] for arm in r["turns"][0]["state_before"]["arms"]} <= wide for r in records)
    assert all(r["success"] for r in records)  # the oracle reads the level's own names
    monkeypatch.undo()
    assert "wide" not in bandit_package.config.NAME_POOLS


def test_finding_the_readers_touches_no_lazy_module_and_skips_empty_entries(monkeypatch):
    # transformers' lazy module imports a submodule on any unknown attribute; the probe must not ask it for one.
    lazy = types.ModuleType("lazy_probe_module")

    def refuse(name):
        raise AssertionError(f"the probe asked a lazy module for {name}")

    lazy.__getattr__ = refuse
    monkeypatch.setitem(sys.modules, "lazy_probe_module", lazy)
    monkeypatch.setitem(sys.modules, "absent_probe_module", None)  # what a failed import leaves behind
    probe = load_script("experiments/thinking_model/bandit_copy_probe.py")
    readers = probe.pool_readers()
    assert lazy not in readers and bandit_package.names in readers


def test_the_crossed_check_refuses_a_judged_val_pair_and_any_non_train_level(tmp_path, monkeypatch):
    from ragen_envs.splits import LevelSplitter, split_seeds
    probe = load_script("experiments/thinking_model/bandit_copy_probe.py")
    # The judged val pairs, read off bandit_heldout's own val levels (not from the probe's key list)
    heldout = LevelSplitter("bandit_heldout")
    judged_val = {heldout.level_key(seed) for seed in split_seeds("val", 64, env="bandit_heldout")}
    assert b"bandit\nlow=Owl\nhigh=Tiger" in judged_val
    for module in probe.pool_readers():  # check_crossed plays the crossed set from the rebound pools
        monkeypatch.setattr(module, "NAME_POOLS", {**module.NAME_POOLS, "crossed": probe.CROSSED})
    crossed = LevelSplitter("ragen/Bandit-v0", {"name_set": "crossed"})
    seeds: dict[str, int] = {}
    for seed in range(20_000):  # train seed range
        key = crossed.level_key(seed)
        if key in judged_val:
            seeds.setdefault("judged val", seed)
        elif key.startswith(b"bandit\nlow=Phoenix\n"):  # RAGEN's calm arm: in no judged pair
            seeds.setdefault("train" if crossed.belongs("train", seed) else "other", seed)
    assert set(seeds) == {"judged val", "train", "other"}
    run = tmp_path / "run"
    run.mkdir()
    (run / "level_seeds.json").write_text(json.dumps([[seeds["judged val"]], [seeds["train"]] * 3]))
    assert probe.check_crossed(run, 1) == 3
    for bad in ("judged val", "other"):
        (run / "level_seeds.json").write_text(json.dumps([[0], [seeds["train"], seeds[bad]]]))
        with pytest.raises(SystemExit, match="not a crossed train pair"):
            probe.check_crossed(run, 1)
    assert probe.main(["check", str(run)]) == 2  # DIR and SET both needed
