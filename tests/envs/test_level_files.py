"""Level sets: Sokoban levels read from Boxoban, XSB/.sok and standard-notation files, each certified on load,
with a certificate cache keyed by the file's hash, and the export that writes such files.

Every file here is written by the test from levels our generator makes (no one else's data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import gymnasium as gym
import pytest

import ragen_envs
from ragen_envs.sokoban import SokobanConfig, format_boxoban, format_level, generate, solve
from ragen_envs.sokoban import level_files
from ragen_envs.sokoban.__main__ import main as sokoban_main
from ragen_envs.sokoban.notation import parse_level
from ragen_envs.sokoban.level_files import (LevelFileError, certificates_path, count_levels, load_level_set,
                                            user_cache_path)
from ragen_envs.text import TextEpisode
from ragen_envs.text import oracle_responses

REPO = Path(__file__).resolve().parents[2]
BOXOBAN = SokobanConfig(height=10, width=10, num_boxes=4)
SMALL = SokobanConfig(height=7, width=7, num_boxes=2)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    """Each test loads sets from disk (no sets kept from another test) and caches under its own tmp dir."""
    monkeypatch.setattr(level_files, "_loaded", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user_cache"))


def _levels(config: SokobanConfig, n: int, first_seed: int = 0):
    return [generate(config, seed) for seed in range(first_seed, first_seed + n)]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _no_solver(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the solver ran although the certificates were cached")

    monkeypatch.setattr(level_files, "solve", refuse)


def test_a_boxoban_file_plays_its_levels_with_certificates_found_by_an_independent_search(tmp_path):
    levels = _levels(BOXOBAN, 4)
    path = _write(tmp_path / "000.txt", format_boxoban(levels))
    env = ragen_envs.make("boxoban", levels=str(path))
    for i, level in enumerate(levels):
        _, info = env.reset(seed=i)
        assert env.unwrapped.level.level_key() == level.level_key()
        # The generator's reverse search and the load-time A* solver agree on the optimum.
        assert info["certificate"]["moves"] == level.certificate.moves
        assert info["level_index"] == i and info["level_source"] == {"file": "000.txt", "number": i,
                                                                     "line": 2 + 12 * i}
        for action in info["certificate"]["actions"]:
            _, _, terminated, _, _ = env.step(action)
        assert terminated


def test_index_option_gymnasium_id_and_random_draws(tmp_path):
    levels = _levels(SMALL, 3)
    path = _write(tmp_path / "set.txt", format_boxoban(levels))
    env = gym.make("ragen/Sokoban-v0", levels=str(path)).unwrapped
    assert env.observation_space.shape == (7, 7)
    _, by_option = env.reset(options={"index": 2})
    _, by_seed = env.reset(seed=2)
    assert by_option["certificate"] == by_seed["certificate"]
    drawn = {env.reset()[1]["level_index"] for _ in range(40)}
    assert drawn == {0, 1, 2}
    with pytest.raises(ValueError, match=r"level index 3 is outside the level set .*set.txt \(3 levels"):
        env.reset(seed=3)
    with pytest.raises(ValueError, match="options\\['index'\\] picks a level of the env's level set"):
        ragen_envs.make("sokoban").reset(options={"index": 0})


def test_xsb_and_sok_collections_with_titles_and_comments_and_a_directory(tmp_path):
    levels = _levels(SMALL, 4)
    # a byte-order mark, and titles holding a "#" right under a level, as XSB collections write them
    xsb = "\ufeffTitle: a test collection\nAuthor: the test\n\n" + "".join(
        f"; Level {i + 1}\n{format_level(level)}\nTitle: Level #{i + 1}\n\n" for i, level in enumerate(levels[:2]))
    sok = "\n\n".join(format_level(level) for level in levels[2:]) + "\n"
    _write(tmp_path / "dir" / "a.xsb", xsb)
    _write(tmp_path / "dir" / "b.sok", sok)
    _write(tmp_path / "dir" / "notes.md", "not a level file\n")
    level_set = load_level_set(tmp_path / "dir")
    assert [e.level.level_key() for e in level_set.entries] == [lv.level_key() for lv in levels]
    assert [(e.file, e.number) for e in level_set.entries] == [("a.xsb", 0), ("a.xsb", 1), ("b.sok", 0), ("b.sok", 1)]
    assert count_levels(tmp_path / "dir") == 4 and count_levels(tmp_path / "dir", limit=3) == 3
    assert len(load_level_set(tmp_path / "dir", limit=3)) == 3


def test_the_budget_fits_the_longest_optimum_of_the_set(tmp_path):
    levels = _levels(BOXOBAN, 6)
    longest = max(level.certificate.moves for level in levels)
    path = _write(tmp_path / "000.txt", format_boxoban(levels))
    for preset in ("sokoban", "boxoban"):  # the preset's own budget never cuts a level set short
        episode = TextEpisode(preset, 0, env_config={"levels": str(path)})
        assert episode.config.max_actions_per_episode >= longest
    for i, level in enumerate(levels):
        episode = TextEpisode("sokoban", i, env_config={"levels": str(path), "max_actions_per_episode": None})
        assert episode.config.max_actions_per_episode == max(10, longest)
        for reply in oracle_responses(episode.certificate["actions"], episode.config, episode.game.action_names):
            episode.step(reply)
        assert episode.success


@pytest.mark.parametrize("text, message", [
    ("; 0\n#####\n#@$.#\n#####\n\n; 1\n#####\n#@$x#\n#####\n",
     r"bad.txt: level 1 \(line 7\): unexpected character 'x'"),
    ("; 0\n#####\n#@$.#\n#####\n\n; 1\n#####\n#$@.#\n#####\n", r"bad.txt: level 1 \(line 7\) has no solution"),
    ("; 0\n######\n#@$$.#\n######\n", r"bad.txt: level 0 \(line 2\): the level has 2 boxes but 1 targets"),
    ("just words\n", r"bad.txt: no levels found"),
])
def test_a_bad_level_is_refused_naming_the_file_and_the_level(tmp_path, text, message):
    path = _write(tmp_path / "bad.txt", text)
    with pytest.raises(LevelFileError, match=message):
        ragen_envs.make("sokoban", levels=str(path))
    assert not certificates_path(path).exists()


def test_a_missing_set_is_named(tmp_path):
    with pytest.raises(LevelFileError, match="no such file or directory"):
        ragen_envs.make("sokoban", levels=str(tmp_path / "nope.txt"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LevelFileError, match="holds no level files"):
        ragen_envs.make("sokoban", levels=str(tmp_path / "empty"))


def test_certificates_are_cached_next_to_the_file_keyed_by_its_hash(tmp_path, monkeypatch):
    levels = _levels(SMALL, 3)
    path = _write(tmp_path / "set.txt", format_boxoban(levels))
    first = load_level_set(path)
    cache = json.loads(certificates_path(path).read_text())
    assert cache["file_sha256"] == first.sha256 and sorted(cache["levels"]) == ["0", "1", "2"]
    monkeypatch.setattr(level_files, "_loaded", {})
    with monkeypatch.context() as m:
        _no_solver(m)
        assert load_level_set(path).entries == first.entries
    # Another file content: the old cache is for another hash, so the levels are solved again.
    _write(path, format_boxoban(levels[:2]))
    monkeypatch.setattr(level_files, "_loaded", {})
    with monkeypatch.context() as m:
        _no_solver(m)
        with pytest.raises(AssertionError, match="the solver ran"):
            load_level_set(path)
    assert len(load_level_set(path)) == 2
    assert json.loads(certificates_path(path).read_text())["file_sha256"] != first.sha256


def test_a_cached_certificate_that_does_not_solve_its_level_is_not_trusted(tmp_path, monkeypatch):
    levels = _levels(SMALL, 2)
    path = _write(tmp_path / "set.txt", format_boxoban(levels))
    good = load_level_set(path)
    cache = json.loads(certificates_path(path).read_text())
    cache["levels"]["1"]["actions"] = cache["levels"]["1"]["actions"][:-1]  # one move short: not a solution
    certificates_path(path).write_text(json.dumps(cache))
    monkeypatch.setattr(level_files, "_loaded", {})
    assert load_level_set(path).entries[1].level.certificate == good.entries[1].level.certificate


def test_where_the_file_s_folder_cannot_take_the_cache_the_user_cache_does(tmp_path, monkeypatch):
    levels = _levels(SMALL, 2)
    path = _write(tmp_path / "set.txt", format_boxoban(levels))
    certificates_path(path).mkdir()  # something that is not a file already holds the name
    level_set = load_level_set(path)
    assert not list(tmp_path.glob("set.txt.certificates.json*.tmp"))
    assert user_cache_path(level_set.sha256).is_file()
    monkeypatch.setattr(level_files, "_loaded", {})
    with monkeypatch.context() as m:
        _no_solver(m)
        assert load_level_set(path).entries == level_set.entries
    # Neither place writable: no cache, and the set still loads.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(level_files, "_loaded", {})
    assert load_level_set(path).entries == level_set.entries


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_left_untouched(tmp_path):
    levels = _levels(SMALL, 2)
    folder = tmp_path / "ro"
    path = _write(folder / "set.txt", format_boxoban(levels))
    folder.chmod(0o555)
    try:
        level_set = load_level_set(path)
        assert sorted(p.name for p in folder.iterdir()) == ["set.txt"]
        assert user_cache_path(level_set.sha256).is_file()
    finally:
        folder.chmod(0o755)


def test_export_writes_boxoban_files_whose_certificates_load_without_solving(tmp_path, monkeypatch, capsys):
    out = tmp_path / "export" / "simple.txt"
    assert sokoban_main(["export", "--preset", "simple_sokoban", "--n", "5", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("; 0\n") and text.count("\n; ") == 4
    about = json.loads(certificates_path(out).read_text())
    assert about["preset"] == "simple_sokoban" and about["split"] == "test"
    assert about["seeds"] == ragen_envs.split_seeds("test", 5, env="simple_sokoban")
    _no_solver(monkeypatch)
    env = ragen_envs.make("sokoban", levels=str(out)).unwrapped
    preset_env = ragen_envs.make("simple_sokoban").unwrapped
    for i, seed in enumerate(about["seeds"]):
        _, info = env.reset(seed=i)
        _, generated = preset_env.reset(seed=seed)
        assert env.level.level_key() == preset_env.level.level_key()
        assert info["certificate"] == generated["certificate"]


def test_export_refuses_bad_input_and_runs_as_a_module(tmp_path, capsys):
    assert sokoban_main(["export", "--preset", "frozenlake", "--n", "2", "--out", str(tmp_path / "f.txt")]) == 2
    assert "not a Sokoban preset" in capsys.readouterr().err and not (tmp_path / "f.txt").exists()
    done = subprocess.run([sys.executable, "-m", "ragen_envs.sokoban", "export", "--preset", "sokoban", "--n", "2",
                           "--out", str(tmp_path / "s.txt")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert count_levels(tmp_path / "s.txt") == 2 and certificates_path(tmp_path / "s.txt").is_file()


def test_a_cache_dir_takes_every_cache_and_nothing_is_written_beside_the_file(tmp_path, monkeypatch):
    levels = _levels(SMALL, 2)
    path = _write(tmp_path / "served" / "set.txt", format_boxoban(levels))
    cache_dir = tmp_path / "server_cache"
    level_set = load_level_set(path, cache_dir=cache_dir)
    assert [p.name for p in cache_dir.iterdir()] == [f"{level_set.sha256}.json"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["set.txt"]
    assert not user_cache_path(level_set.sha256).exists()
    monkeypatch.setattr(level_files, "_loaded", {})
    with monkeypatch.context() as m:
        _no_solver(m)
        assert load_level_set(path, cache_dir=cache_dir).entries == level_set.entries
    # A cache beside the file or in the user cache is not read when a cache dir is named.
    (cache_dir / f"{level_set.sha256}.json").rename(certificates_path(path))
    monkeypatch.setattr(level_files, "_loaded", {})
    with monkeypatch.context() as m:
        _no_solver(m)
        with pytest.raises(AssertionError, match="the solver ran"):
            load_level_set(path, cache_dir=cache_dir)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    """An 8 MB Boxoban file of valid levels (four generated ones, repeated 17,000 times)."""
    path = tmp_path_factory.mktemp("big") / "big.txt"
    path.write_text(format_boxoban(_levels(BOXOBAN, 4)) * 17_000, encoding="utf-8")
    return path


def _traced(fn):
    """``fn()``, the memory it still holds when it returns and the most it held on the way (bytes)."""
    tracemalloc.start()
    try:
        result = fn()
        held, peak = tracemalloc.get_traced_memory()
        return result, held, peak
    finally:
        tracemalloc.stop()


def test_a_big_file_is_read_lazily_and_only_the_levels_asked_for_are_solved(big_file, monkeypatch):
    assert big_file.stat().st_size > 7.5e6
    solved = []
    monkeypatch.setattr(level_files, "solve", lambda level, **kw: solved.append(level) or solve(level, **kw))
    assert len(load_level_set(big_file, limit=3)) == 3 and len(solved) == 3
    monkeypatch.setattr(level_files, "_loaded", {})
    level_set, _, peak = _traced(lambda: load_level_set(big_file, limit=3))  # from the cache: no search memory
    assert len(level_set) == 3 and len(solved) == 3
    assert peak < 2**20  # memory follows the 3 levels, not the 8 MB file
    count, _, peak = _traced(lambda: count_levels(big_file, limit=5))
    assert count == 5 and peak < 2**20
    count, _, peak = _traced(lambda: count_levels(big_file, limit=20_000))  # 2.3 MB of the file's text
    assert count == 20_000 and peak < 2**20
    assert count_levels(big_file) == 4 * 17_000


def test_the_memory_estimate_matches_a_measured_set_and_a_set_over_budget_is_refused(tmp_path, big_file, monkeypatch):
    path = _write(tmp_path / "set.txt", format_boxoban(_levels(BOXOBAN, 20)))
    load_level_set(path)  # solved and cached, so the measurement below holds the loaded set alone
    monkeypatch.setattr(level_files, "_loaded", {})
    level_set, held, _ = _traced(lambda: load_level_set(path))
    measured_per_level = held / len(level_set)
    # The big file: refused before any level is parsed or solved, naming the limit that fits.
    _no_solver(monkeypatch)
    with pytest.raises(LevelFileError, match=r"more than the 256 MiB of memory a level set may take; only the "
                                             r"first [\d,]+ fit: pass levels_limit=(\d+) \(ragen-eval "
                                             r"--levels-limit \d+\)") as refused:
        load_level_set(big_file)
    fits = int(refused.value.args[0].rsplit("levels_limit=", 1)[1].split(" ")[0])
    assert 0.6 < fits * measured_per_level / level_files.MAX_SET_BYTES < 1.4
    # A budget of exactly five of these levels: five load, six do not.
    per_level = fits and level_files.MAX_SET_BYTES // fits
    monkeypatch.setattr(level_files, "MAX_SET_BYTES", 5 * per_level + per_level // 2)
    monkeypatch.setattr(level_files, "_loaded", {})
    assert len(load_level_set(path, limit=5)) == 5
    with pytest.raises(LevelFileError, match=r"its first 6 levels \(levels_limit\) would take .* pass levels_limit=5 "):
        load_level_set(path, limit=6)


def test_the_solver_s_memory_is_bounded_on_a_huge_open_room(tmp_path, monkeypatch):
    """A 14 KB file of a 120 x 120 open room with four boxes once let the solver take gigabytes: its states grow
    with the grid, so the state budget shrinks with it and the search stays under SOLVER_MAX_BYTES."""
    assert level_files.solver_budget(_levels(BOXOBAN, 1)[0]) == level_files.SOLVER_MAX_NODES
    rows = [list("#" * 120)] + [list("#" + " " * 118 + "#") for _ in range(118)] + [list("#" * 120)]
    for (r, c), mark in {(2, 2): "$", (2, 9): "$", (9, 2): "$", (9, 9): "$", (110, 110): ".", (110, 100): ".",
                         (100, 110): ".", (100, 100): ".", (60, 60): "@"}.items():
        rows[r][c] = mark
    path = _write(tmp_path / "huge.txt", "\n".join("".join(row) for row in rows) + "\n")
    assert level_files.solver_budget(parse_level(path.read_text())) < level_files.SOLVER_MAX_NODES // 4
    monkeypatch.setattr(level_files, "SOLVER_MAX_BYTES", 24 * 2**20)  # the same rule, small enough to test
    budget = level_files.solver_budget(parse_level(path.read_text()))

    def load() -> None:
        with pytest.raises(LevelFileError, match=rf"was not solved within {budget:,} search states"):
            load_level_set(path, cache=False, progress=False)

    _, _, peak = _traced(load)
    assert peak < level_files.SOLVER_MAX_BYTES


def test_an_overlong_line_is_refused_without_being_read_whole(tmp_path):
    path = _write(tmp_path / "long.txt", "; 0\n#####\n#@$.#\n#####\n\n" + ";" * 200_000 + "\n")
    with pytest.raises(LevelFileError, match=r"long.txt: line 6 is longer than 65,536 characters"):
        count_levels(path)


def test_certifying_reports_progress_on_stderr_and_a_cached_set_prints_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("ragen_envs.progress.DELAY_S", 0.0)
    path = _write(tmp_path / "set.txt", format_boxoban(_levels(SMALL, 3)))
    load_level_set(path)
    err = capsys.readouterr().err
    assert "certifying set.txt: 0/3 levels" in err
    assert err.splitlines()[-1].startswith("certifying set.txt: 3/3 levels in 0:0") and "levels/s" in err
    monkeypatch.setattr(level_files, "_loaded", {})
    load_level_set(path)
    assert capsys.readouterr().err == ""


def _lengthened(level, actions: list[int], extra_pairs: int) -> list[int]:
    """``actions`` after ``extra_pairs`` steps to a free neighbour and back: still a solution, longer."""
    walls, boxes, (r, c) = level.walls, set(level.boxes), level.player
    steps = {0: (-1, 0, 1), 1: (1, 0, 0), 2: (0, -1, 3), 3: (0, 1, 2)}  # action -> (dr, dc, opposite)
    for action, (dr, dc, back) in steps.items():
        if (r + dr, c + dc) not in walls and (r + dr, c + dc) not in boxes:
            return [action, back] * extra_pairs + actions
    raise AssertionError("the player has no free neighbour")


def test_an_edited_or_foreign_cache_is_solved_again(tmp_path, monkeypatch):
    levels = _levels(BOXOBAN, 2)
    path = _write(tmp_path / "set.txt", format_boxoban(levels))
    good = load_level_set(path)
    optimum = good.entries[1].level.certificate
    original = json.loads(certificates_path(path).read_text())
    # A hand edit: level 1's solution still solves it but is 12x longer than the optimum.
    edited = json.loads(json.dumps(original))
    edited["levels"]["1"]["actions"] = _lengthened(levels[1], list(optimum.solution), 11 * optimum.moves // 2 + 1)
    edited["levels"]["1"]["moves"] = len(edited["levels"]["1"]["actions"])
    edited["levels"]["1"].pop("solution")
    assert len(edited["levels"]["1"]["actions"]) >= 12 * optimum.moves
    foreign = {**original, "solver": "another-solver-2"}
    for cache in (edited, foreign, {**original, "format": "ragen-sokoban-certificates-v1"}):
        certificates_path(path).write_text(json.dumps(cache))
        monkeypatch.setattr(level_files, "_loaded", {})
        with monkeypatch.context() as m:
            _no_solver(m)
            with pytest.raises(AssertionError, match="the solver ran"):
                load_level_set(path)
        assert load_level_set(path).entries[1].level.certificate == optimum
        assert json.loads(certificates_path(path).read_text()) == original  # rewritten as it was


def test_the_cache_takes_the_level_file_s_permissions(tmp_path, monkeypatch):
    path = _write(tmp_path / "set.txt", format_boxoban(_levels(SMALL, 2)))
    for mode in (0o644, 0o640, 0o600, 0o444):
        path.chmod(mode)
        certificates_path(path).unlink(missing_ok=True)
        monkeypatch.setattr(level_files, "_loaded", {})
        load_level_set(path)
        assert certificates_path(path).stat().st_mode & 0o777 == mode | 0o600
    cache_dir = tmp_path / "server_cache"
    monkeypatch.setattr(level_files, "_loaded", {})
    path.chmod(0o644)
    level_set = load_level_set(path, cache_dir=cache_dir)
    assert (cache_dir / f"{level_set.sha256}.json").stat().st_mode & 0o777 == 0o644


def test_a_long_load_keeps_what_it_solved_when_a_later_level_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(level_files, "_SAVE_EVERY_S", 0.0)
    text = format_boxoban(_levels(SMALL, 2)) + "; 2\n#####\n#$@.#\n#####\n"
    path = _write(tmp_path / "set.txt", text)
    with pytest.raises(LevelFileError, match=r"set.txt: level 2 \(line \d+\) has no solution"):
        load_level_set(path)
    assert sorted(json.loads(certificates_path(path).read_text())["levels"]) == ["0", "1"]


def test_export_reports_its_progress_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("ragen_envs.progress.DELAY_S", 0.0)
    assert sokoban_main(["export", "--preset", "simple_sokoban", "--n", "5", "--out", str(tmp_path / "s.txt")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "exporting simple_sokoban (test split): 0/5 levels"
    assert err[-1].startswith("exporting simple_sokoban (test split): 5/5 levels in 0:0") and "levels/s" in err[-1]


def test_a_file_that_changes_while_it_is_read_is_refused(tmp_path, monkeypatch):
    path = _write(tmp_path / "set.txt", format_boxoban(_levels(SMALL, 2)))
    check_size = level_files._check_size

    def then_change_the_file(*args):
        check_size(*args)
        with path.open("a", encoding="utf-8") as fh:  # after the set was hashed, before it is parsed
            fh.write(format_boxoban(_levels(SMALL, 1, first_seed=5)))

    monkeypatch.setattr(level_files, "_check_size", then_change_the_file)
    with pytest.raises(LevelFileError, match="set.txt: changed while it was being read; load the set again"):
        load_level_set(path)
    assert not certificates_path(path).exists()
