"""Multi-game, streamed, resumable SFT: the CLI, the batch schedule, the batch loss and resuming."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragen_envs.splits import LevelSplitter  # noqa: E402
from ragen_envs.text.episode import TextEpisode  # noqa: E402
from ragen_train.demos import DemoConfig, level_seeds, play_demo, play_demos  # noqa: E402
import ragen_train.sft as sft_module  # noqa: E402
from ragen_train.sft import (  # noqa: E402
    Example,
    SFTConfig,
    batch_nll,
    batch_schedule,
    config_from_args,
    prefix_to_share,
    run_sft,
    shared_prefix_length,
    tokenize_demos,
)
from tests.script_modules import load_script  # noqa: E402

pytestmark = pytest.mark.train

padded_nll = load_script("benchmarks/bench_sft_batch.py").padded_nll


def test_cli_builds_one_demo_set_per_game() -> None:
    cfg = config_from_args(["--out", "x", "--env", "simple_sokoban,frozenlake,bandit", "--mode", "oracle",
                            "--episodes", "30,20,10", "--thought", "none", "--checkpoint-every", "5"])
    assert [(d.env, d.num_episodes, d.thought) for d in cfg.demos] == [
        ("simple_sokoban", 30, "none"), ("frozenlake", 20, "none"), ("bandit", 10, "none")]
    assert cfg.checkpoint_every == 5
    assert [d.num_episodes for d in config_from_args(["--out", "x", "--env", "bandit,frozenlake",
                                                      "--episodes", "4"]).demos] == [4, 4]


def test_demo_seeds_are_one_for_every_game_or_one_per_game() -> None:
    common = ["--out", "x", "--env", "frozenlake,frozenlake_det", "--episodes", "32"]
    one = config_from_args([*common, "--demo-seed", "911"]).demos
    per_game = config_from_args([*common, "--demo-seed", "911,912"]).demos
    assert [d.seed for d in one] == [911, 911] and [d.seed for d in per_game] == [911, 912]

    def lakes(config: DemoConfig) -> list[str]:
        return [str(TextEpisode(config.env, s).game.state_dict()["rows"]) for s in level_seeds(config)]
    # under one seed the two lakes share their levels one by one (docs/train.md says so); seeds per game part them
    assert lakes(one[0]) == lakes(one[1])
    same = sum(a == b for a, b in zip(lakes(per_game[0]), lakes(per_game[1])))
    assert same < 8  # small lakes may repeat by chance, not one by one
    # a game's levels do not depend on the other games of the run
    alone = config_from_args(["--out", "x", "--env", "frozenlake", "--episodes", "32", "--demo-seed", "911"]).demos
    assert level_seeds(alone[0]) == level_seeds(per_game[0])


def test_env_config_items_reach_the_game_they_name() -> None:
    mixed = config_from_args(["--out", "x", "--env", "simple_sokoban,frozenlake,bandit", "--env-config",
                              "frozenlake:is_slippery=false", "--env-config", "simple_sokoban:{num_boxes: 2}",
                              "--env-config", "frozenlake:height=5"]).demos
    assert [d.env_config for d in mixed] == [{"num_boxes": 2}, {"is_slippery": False, "height": 5}, {}]
    # one game: the plain form and the named form are the same override, later items winning
    plain = config_from_args(["--out", "x", "--env", "frozenlake", "--env-config", "height=5",
                              "--env-config", "frozenlake:height=6", "--env-config", '{"is_slippery": false}']).demos
    assert [d.env_config for d in plain] == [{"height": 6, "is_slippery": False}]


def test_a_mixture_plays_each_game_with_its_own_config(tiny_model_dir: Path, tmp_path: Path) -> None:
    from ragen_train.cli import main
    out = tmp_path / "mixed"
    assert main(["sft", "--model", str(tiny_model_dir), "--out", str(out), "--env", "larger_sokoban,frozenlake",
                 "--episodes", "3,4", "--mode", "oracle", "--thought", "none", "--epochs", "1", "--batch-size", "4",
                 "--env-config", "larger_sokoban:num_boxes=1", "--env-config",
                 "frozenlake:{is_slippery: false, height: 5}"]) == 0
    stored = json.loads((out / "sft_config.json").read_text())["demos"]
    seeds = json.loads((out / "level_seeds.json").read_text())
    records = [json.loads(line) for line in (out / "demo_records.jsonl").read_text().splitlines()]
    assert sorted((r["set"], r["index"]) for r in records) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
    # replay what each step trained on from the stored config: the states the demonstrations began in
    replays = [play_demo(DemoConfig(**stored[r["set"]]), r["index"], seeds[r["set"]][r["index"]]).record
               for r in records]
    assert [(x["num_actions"], x["total_reward"]) for x in replays] == [
        (r["num_actions"], r["total_reward"]) for r in records]  # the same episodes the run logged
    states = [x["turns"][0]["state_before"] for x in replays]
    assert all(len(s["boxes"]) == 1 for s in states if s["game"] == "sokoban")
    assert all(s["height"] == 5 and s["is_slippery"] is False for s in states if s["game"] == "frozenlake")
    stored = json.loads((out / "sft_config.json").read_text())["demos"]
    assert [d["env_config"] for d in stored] == [{"num_boxes": 1}, {"is_slippery": False, "height": 5}]


@pytest.mark.parametrize("argv", [
    ["--env", "bandit,frozenlake", "--episodes", "1,2,3"],
    ["--env", "bandit,frozenlake", "--demo-seed", "1,2,3"],
    ["--env", "bandit", "--demo-seed", "-1"],
    ["--env", "bandit,bandit"],
    ["--env", "bandit,", "--episodes", "3"],
    ["--env", "bandit", "--episodes", "0"],
    ["--env", "bandit,nosuchgame"],
    ["--env", "bandit,frozenlake", "--env-config", '{"is_slippery": false}'],
    ["--env", "bandit", "--thought", "long"],
    ["--env", "bandit", "--checkpoint-every", "0"],
])
def test_cli_rejects_bad_input_with_one_line_before_any_directory(argv: list[str], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        config_from_args(["--out", str(out), *argv])
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err
    assert not out.exists()


def test_demo_levels_are_distinct_train_levels_by_content() -> None:
    config = DemoConfig(env="simple_sokoban", mode="oracle", num_episodes=300, seed=3)
    seeds = level_seeds(config)
    assert len(set(seeds)) == 300 and seeds == level_seeds(config)
    splitter = LevelSplitter("simple_sokoban")
    assert {splitter.split_of(s) for s in seeds} == {"train"}


@settings(max_examples=30, deadline=None)
@given(counts=st.lists(st.integers(1, 40), min_size=1, max_size=3), batch=st.integers(1, 9),
       epoch=st.integers(0, 3))
def test_schedule_covers_every_episode_once_in_single_game_batches(counts: list[int], batch: int, epoch: int) -> None:
    games = ["bandit", "frozenlake", "simple_sokoban"]
    cfg = SFTConfig(batch_size=batch, demos=[DemoConfig(env=g, num_episodes=n) for g, n in zip(games, counts)])
    schedule = batch_schedule(cfg, epoch)
    for k, n in enumerate(counts):
        indices = [i for set_index, batch_indices in schedule if set_index == k for i in batch_indices]
        assert sorted(indices) == list(range(n))
    assert all(1 <= len(b) <= batch for _, b in schedule)
    assert schedule == batch_schedule(cfg, epoch)


def test_shared_prefix_stops_before_the_first_trained_token() -> None:
    a = Example([5, 6, 7, 8, 9], [0, 0, 0, 1, 1])
    b = Example([5, 6, 7, 4, 9, 9], [0, 0, 0, 0, 1, 1])
    assert shared_prefix_length([a, b]) == 2  # 5 6 7 are shared, but token 3 of a is trained
    assert shared_prefix_length([b, Example([5, 3, 7, 4, 9], [0, 0, 0, 0, 1])]) == 1


def test_prefix_is_shared_only_when_as_long_as_the_mean_rest() -> None:
    a = Example([5, 6, 7, 8, 9], [0, 0, 0, 1, 1])
    b = Example([5, 6, 7, 4, 9, 9], [0, 0, 0, 0, 1, 1])
    assert prefix_to_share([a, b]) == 0  # a prefix of 2 against remainders of 3 and 4 tokens
    c = Example([1, 2, 3, 4, 5, 6, 7], [0, 0, 0, 0, 0, 1, 1])
    d = Example([1, 2, 3, 4, 5, 8], [0, 0, 0, 0, 0, 1])
    assert prefix_to_share([c, d]) == 4  # remainders of 3 and 2 tokens
    assert prefix_to_share([c, d], share_prefix=False) == 0 and prefix_to_share([c]) == 0


@pytest.mark.parametrize("env", ["simple_sokoban", "frozenlake", "bandit"])
def test_batch_nll_gives_the_padded_loss_and_gradients(env: str, tiny_model_dir: Path) -> None:
    from ragen_train.policy import load_tokenizer

    tokenizer = load_tokenizer(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    demos = play_demos(DemoConfig(env=env, mode="oracle", num_episodes=6, seed=2, thought="none"))
    whole = tokenize_demos(demos, tokenizer, 4096)
    prefix = shared_prefix_length(whole)
    if env != "bandit":  # a game's rules are one long shared prefix
        assert prefix > 300
    # each cut 20 tokens into its first reply: remainders shorter than the rules, so the prefix is shared
    short = [Example(e.input_ids[:e.loss_mask.index(1) + 20], e.loss_mask[:e.loss_mask.index(1) + 20]) for e in whole]
    assert prefix_to_share(short) == (0 if env == "bandit" else prefix)
    for examples in (whole, short):
        model.zero_grad()
        reference = padded_nll(model, examples)  # the plain padded batch, in the benchmark that times it
        reference.backward()
        expected = [p.grad.clone() for p in model.parameters()]
        for share in (False, True):
            model.zero_grad()
            loss, tokens = batch_nll(model, examples, share)
            loss.backward()
            assert loss.item() == pytest.approx(reference.item(), rel=1e-5)
            assert tokens == sum(sum(e.loss_mask) for e in examples)
            for a, b in zip(expected, (p.grad for p in model.parameters())):
                torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def _config(out: Path, model: Path, checkpoint_every: int = 2) -> SFTConfig:
    return SFTConfig(model=str(model), out=str(out), epochs=1, batch_size=4, lr=3e-3, warmup_steps=1,
                     checkpoint_every=checkpoint_every, log_every=1,
                     demos=[DemoConfig(env="bandit", mode="oracle", num_episodes=12, thought="none"),
                            DemoConfig(env="frozenlake_det", mode="oracle", num_episodes=8, thought="none")])


def test_a_run_in_chunks_ends_with_the_weights_of_a_run_in_one_go(tiny_model_dir: Path, tmp_path: Path) -> None:
    whole = run_sft(_config(tmp_path / "whole", tiny_model_dir))
    rows = list(csv.DictReader(open(whole / "sft_metrics.csv")))
    assert [r["step"] for r in rows] == [str(s) for s in range(5)]  # 3 bandit + 2 frozenlake batches
    assert sorted({r["game"] for r in rows}) == ["bandit", "frozenlake_det"]
    assert json.loads((whole / "demos_summary.json").read_text())["episodes"] == 20

    chunked = tmp_path / "chunked"
    run_sft(_config(chunked, tiny_model_dir), max_steps=2)
    assert json.loads((chunked / "resume" / "progress.json").read_text()) == {"step": 2}
    assert not (chunked / "model.safetensors").exists()
    run_sft(_config(chunked, tiny_model_dir), max_steps=2)
    run_sft(_config(chunked, tiny_model_dir))
    again = list(csv.DictReader(open(chunked / "sft_metrics.csv")))
    assert [r["step"] for r in again] == [r["step"] for r in rows]
    for a, b in zip(again, rows):
        assert float(a["loss"]) == pytest.approx(float(b["loss"]), rel=1e-4)
    assert json.loads((chunked / "demos_summary.json").read_text()) == json.loads(
        (whole / "demos_summary.json").read_text())
    final = transformers.AutoModelForCausalLM.from_pretrained(chunked)
    reference = transformers.AutoModelForCausalLM.from_pretrained(whole)
    for p, q in zip(final.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_a_kill_in_a_save_or_between_its_renames_resumes_from_the_last_whole_save(
        tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    whole = run_sft(_config(tmp_path / "whole", tiny_model_dir))
    out = tmp_path / "killed"
    saves, real_save = [], torch.save

    def killed_at_the_second_save(obj: object, path: Path, *args: object, **kwargs: object) -> None:
        saves.append(path)
        if len(saves) == 2:  # the save after step 4, half written
            raise KeyboardInterrupt
        real_save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", killed_at_the_second_save)
    with pytest.raises(KeyboardInterrupt):
        run_sft(_config(out, tiny_model_dir))
    monkeypatch.undo()
    assert json.loads((out / "resume" / "progress.json").read_text()) == {"step": 2}
    run_sft(_config(out, tiny_model_dir), max_steps=1)
    assert "resuming" in capsys.readouterr().out
    (out / "resume").rename(out / "resume.previous")  # killed between the swap's two renames
    run_sft(_config(out, tiny_model_dir))
    assert f"resuming {out} at step 3/5" in capsys.readouterr().out
    assert [r["step"] for r in csv.DictReader(open(out / "sft_metrics.csv"))] == [str(s) for s in range(5)]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("resume")) == ["resume"]
    final = transformers.AutoModelForCausalLM.from_pretrained(out)
    reference = transformers.AutoModelForCausalLM.from_pretrained(whole)
    for p, q in zip(final.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_the_demo_summary_counts_each_demonstration_once_over_epochs(tiny_model_dir: Path, tmp_path: Path) -> None:
    once = run_sft(_config(tmp_path / "once", tiny_model_dir))
    twice = _config(tmp_path / "twice", tiny_model_dir)
    twice.epochs = 2
    run_sft(twice)
    assert len((tmp_path / "twice" / "demo_records.jsonl").read_text().splitlines()) == 40  # each played twice
    assert json.loads((tmp_path / "twice" / "demos_summary.json").read_text()) == json.loads(
        (once / "demos_summary.json").read_text())


@pytest.mark.parametrize("later", ["cpu:0", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="resuming on a GPU needs CUDA"))])
def test_a_run_resumed_on_another_device_ends_with_the_weights_of_a_run_in_one_go(
        tiny_model_dir: Path, tmp_path: Path, later: str) -> None:
    whole = run_sft(_config(tmp_path / "whole", tiny_model_dir))
    moved = tmp_path / "moved"
    run_sft(_config(moved, tiny_model_dir), max_steps=2, device="cpu")
    run_sft(_config(moved, tiny_model_dir), device=later)  # the device is the call's: the run is not refused
    assert "device" not in json.loads((moved / "sft_config.json").read_text())
    final = transformers.AutoModelForCausalLM.from_pretrained(moved)
    reference = transformers.AutoModelForCausalLM.from_pretrained(whole)
    for p, q in zip(final.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-5)


def test_a_resumed_run_reads_its_level_seeds_instead_of_finding_them_again(tiny_model_dir: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path / "run", tiny_model_dir)
    run_sft(config, max_steps=2)
    kept = json.loads((tmp_path / "run" / "level_seeds.json").read_text())
    assert kept == [level_seeds(d) for d in config.demos]

    def no_walk(_config: DemoConfig) -> list[int]:
        raise AssertionError("a resumed run generated levels to find their split")

    monkeypatch.setattr(sft_module, "level_seeds", no_walk)
    run_sft(_config(tmp_path / "run", tiny_model_dir))
    assert json.loads((tmp_path / "run" / "demos_summary.json").read_text())["episodes"] == 20


def test_a_different_config_in_the_same_directory_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = run_sft(_config(tmp_path / "run", tiny_model_dir))
    other = _config(out, tiny_model_dir)
    other.lr = 1e-2
    with pytest.raises(ValueError, match="other settings"):
        run_sft(other)
