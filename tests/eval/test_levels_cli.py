"""``ragen-eval --levels FILE_OR_DIR``: the oracle wins every level of a Boxoban-format file; resume, shards,
merge and compare work on level sets as on seeds; a changed file and bad sets are refused up front.

The Boxoban-format files are written here from levels our own generator makes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragen_envs.sokoban import SokobanConfig, format_boxoban, generate
from ragen_envs.sokoban import level_files
from ragen_eval.cli import EXIT_BAD_INPUT, EXIT_OK, main
from ragen_eval.jsonl_store import read_jsonl

LEVELS = 12
RUN = "oracle__builtin__levels-000.txt"


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user_cache"))


@pytest.fixture(scope="module")
def boxoban_levels():
    return [generate(SokobanConfig(height=10, width=10, num_boxes=4), seed) for seed in range(LEVELS)]


@pytest.fixture
def level_file(tmp_path, boxoban_levels) -> Path:
    path = tmp_path / "levels" / "000.txt"
    path.parent.mkdir()
    path.write_text(format_boxoban(boxoban_levels))
    return path


def _eval(out: Path, levels: Path, *extra: str, model: str = "oracle") -> int:
    return main(["--model", model, "--levels", str(levels), "--out", str(out), "--no-progress", *extra])


def _error(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragen-eval evaluate: error: "), lines
    return lines[0]


def test_the_oracle_wins_every_level_of_a_boxoban_file(tmp_path, level_file, boxoban_levels, capsys):
    assert _eval(tmp_path / "runs", level_file) == EXIT_OK
    assert f"oracle (builtin), levels={level_file}, {LEVELS}/{LEVELS} episodes" in capsys.readouterr().out
    run = tmp_path / "runs" / RUN
    summary = json.loads((run / "summary.json").read_text())
    assert summary["episodes_done"] == LEVELS and summary["overall"]["success_rate"] == 1.0
    config = json.loads((run / "config.json").read_text())
    longest = max(level.certificate.moves for level in boxoban_levels)
    assert config["eval_config"]["levels_sha256"] == level_files.level_set_digest(level_file)
    assert config["levels"]["longest_optimum"] == longest and config["levels"]["levels"] == LEVELS
    budget = config["levels"]["budget"]
    assert budget["max_actions_per_episode"] >= longest
    assert budget["max_turns"] * budget["max_actions_per_turn"] >= budget["max_actions_per_episode"]
    records = read_jsonl(run / "episodes.jsonl")
    assert sorted((r["env"], r["seed"]) for r in records) == [("levels:000.txt", i) for i in range(LEVELS)]
    by_seed = {r["seed"]: r for r in records}
    assert by_seed[5]["level_source"] == {"file": "000.txt", "number": 5, "line": 2 + 12 * 5}
    assert by_seed[5]["certificate"]["moves"] == boxoban_levels[5].certificate.moves


def test_resume_does_no_work_and_a_changed_file_is_refused(tmp_path, level_file, boxoban_levels, capsys):
    assert _eval(tmp_path / "runs", level_file, "--episodes", "4") == EXIT_OK
    capsys.readouterr()
    assert _eval(tmp_path / "runs", level_file, "--episodes", "4") == EXIT_OK
    assert "this invocation" not in capsys.readouterr().err
    episodes = tmp_path / "runs" / RUN / "episodes.jsonl"
    before = episodes.read_bytes()
    level_file.write_text(format_boxoban(boxoban_levels[::-1]))  # same levels, another order: another set
    assert _eval(tmp_path / "runs", level_file, "--episodes", "4") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "levels_sha256:" in err and "the level files changed since the run started" in err
    assert episodes.read_bytes() == before


def test_shards_merge_to_the_unsharded_run_and_compare_pairs_levels(tmp_path, level_file, capsys):
    assert _eval(tmp_path / "full", level_file) == EXIT_OK
    for i in range(3):
        assert _eval(tmp_path / "shards", level_file, "--shard", f"{i}/3") == EXIT_OK
    shards = [str(tmp_path / "shards" / f"{RUN}__shard-{i}-of-3") for i in range(3)]
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == EXIT_OK
    merged = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert merged == json.loads((tmp_path / "full" / RUN / "summary.json").read_text())
    assert _eval(tmp_path / "full", level_file, model="random") == EXIT_OK
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "full" / RUN), str(tmp_path / "full" / "random__builtin__levels-000.txt"),
                 "--json"]) == EXIT_OK
    result = json.loads(capsys.readouterr().out)
    assert result["levels:000.txt"]["pairs"] == LEVELS
    assert result["overall"]["success_a"] == 1.0 > result["overall"]["success_b"]



def test_compare_refuses_two_level_sets_that_share_a_file_name(tmp_path, level_file, boxoban_levels, capsys):
    """Both runs call their levels ``levels:000.txt``; level i of one was paired with another level i."""
    other = tmp_path / "other" / level_file.name
    other.parent.mkdir()
    other.write_text(format_boxoban(boxoban_levels[::-1]))
    assert _eval(tmp_path / "a", level_file) == EXIT_OK and _eval(tmp_path / "b", other, model="random") == EXIT_OK
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a" / RUN), str(tmp_path / "b" / "random__builtin__levels-000.txt")]) \
        == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and "ragen-eval compare: error: the two runs give the same env names to different levels" in err
    assert "levels:000.txt: two level sets of that name" in err


def test_a_directory_and_a_limit(tmp_path, boxoban_levels, capsys):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "000.txt").write_text(format_boxoban(boxoban_levels[:3]))
    (folder / "001.txt").write_text(format_boxoban(boxoban_levels[3:6]))
    assert _eval(tmp_path / "runs", folder, "--levels-limit", "5") == EXIT_OK
    records = read_jsonl(tmp_path / "runs" / "oracle__builtin__levels-set" / "episodes.jsonl")
    sources = sorted((r["seed"], r["level_source"]["file"], r["level_source"]["number"]) for r in records)
    assert sources == [(0, "000.txt", 0), (1, "000.txt", 1), (2, "000.txt", 2), (3, "001.txt", 0),
                       (4, "001.txt", 1)]
    assert all(r["success"] for r in records)


def test_show_finds_an_episode_of_a_level_set_by_its_env_name(tmp_path, level_file, capsys):
    # A level set's env name holds a colon (levels:000.txt); --episode used to be split at every colon.
    assert _eval(tmp_path / "runs", level_file, "--episodes", "4") == EXIT_OK
    run = str(tmp_path / "runs" / RUN)
    capsys.readouterr()
    assert main(["show", run, "--episode", "levels:000.txt:3"]) == EXIT_OK
    assert "# levels:000.txt seed 3: success=True" in capsys.readouterr().out
    assert main(["show", run, "--episode", "levels:000.txt:3:0"]) == EXIT_OK
    for spec in ("levels:000.txt", "levels:000.txt:9", "sokoban", "levels"):
        assert main(["show", run, "--episode", spec]) == EXIT_BAD_INPUT
        line = capsys.readouterr().err.strip()
        assert line == (f"ragen-eval show: error: no episode {spec!r} in {run} (its envs: levels:000.txt); give "
                        "ENV:SEED or ENV:SEED:SAMPLE, e.g. levels:000.txt:0"), line


@pytest.mark.parametrize("text, extra, message", [
    ("; 0\n#####\n#@$.#\n#####\n\n; 1\n#####\n#$@.#\n#####\n", (), "bad.txt: level 1 (line 7) has no solution"),
    ("; 0\n#####\n#@$?#\n#####\n", (), "bad.txt: level 0 (line 2): unexpected character '?'"),
    ("; 0\n#####\n#@$.#\n#####\n", ("--episodes", "3"), "levels 0..2 were asked for, but the set holds 1"),
    ("; 0\n#####\n#@$.#\n#####\n", ("--env", "sokoban"), "--levels plays its level set instead of --env presets"),
    ("; 0\n#####\n#@$.#\n#####\n", ("--env-config", "sokoban:num_boxes=2"), "--env-config does not apply to --levels"),
    # Without --episodes the set decides how many are played; these used to read "--episodes must be >= 1, got 0".
    ("; 0\n#####\n#@$.#\n#####\n", ("--levels-limit", "0"), "--levels-limit must be >= 1, got 0"),
    ("; 0\n#####\n#@$.#\n#####\n", ("--seed-start", "3"), "--seed-start 3: --levels "),
    ("; 0\n#####\n#@$.#\n#####\n", ("--seed-start", "-1"), "--seed-start must be >= 0, got -1"),
    ("; 0\n#####\n#@$.#\n#####\n", ("--protocol", "symbols.nope=Z"), "--protocol: levels:bad.txt cannot be played"),
])
def test_bad_level_sets_are_refused_before_the_run_directory(tmp_path, capsys, text, extra, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    assert _eval(tmp_path / "runs", path, *extra) == EXIT_BAD_INPUT
    assert message in _error(capsys)
    assert not (tmp_path / "runs").exists()


def test_a_missing_level_file_and_a_limit_without_levels(tmp_path, capsys):
    assert _eval(tmp_path / "runs", tmp_path / "nope.txt") == EXIT_BAD_INPUT
    assert "no such file or directory" in _error(capsys)
    assert main(["--model", "oracle", "--env", "sokoban", "--levels-limit", "3", "--out", str(tmp_path / "runs"),
                 "--no-progress"]) == EXIT_BAD_INPUT
    assert "--levels-limit needs --levels" in _error(capsys)
    assert not (tmp_path / "runs").exists()


def test_episodes_certify_only_the_levels_the_run_plays(tmp_path, level_file, monkeypatch, capsys):
    solved = []
    real_solve = level_files.solve
    monkeypatch.setattr(level_files, "solve", lambda level, **kw: solved.append(level) or real_solve(level, **kw))
    assert _eval(tmp_path / "runs", level_file, "--episodes", "3", "--seed-start", "1") == EXIT_OK
    assert len(solved) == 4  # levels 0..3, not the 12 of the file
    config = json.loads((tmp_path / "runs" / RUN / "config.json").read_text())
    assert config["eval_config"]["levels_limit"] == 4 and config["levels"]["levels"] == 4


def test_a_file_too_big_for_memory_is_refused_before_the_run_directory(tmp_path, boxoban_levels):
    big = tmp_path / "big.txt"
    big.write_text(format_boxoban(boxoban_levels[:4]) * 17_000)  # 8 MB, 68,000 valid levels
    done = subprocess.run([sys.executable, "-m", "ragen_eval.cli", "--model", "oracle", "--levels", str(big),
                           "--out", str(tmp_path / "runs"), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragen-eval evaluate: error: --levels ")
    limit = int(re.search(r"ragen-eval --levels-limit (\d+)\)$", lines[0]).group(1))
    assert 0 < limit < 68_000 and "MiB of memory a level set may take" in lines[0]
    assert not (tmp_path / "runs").exists()
