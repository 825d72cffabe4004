"""``ragen-train sft`` reports bad input as ``ragen-eval`` and ``ragen-train`` do: exit 2, one line on stderr
naming the problem (no usage block), and no output directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_train.cli import main  # noqa: E402

pytestmark = pytest.mark.train


def test_the_console_command_says_one_line_and_makes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "ragen_train.cli", "sft", "--out", str(out), "--episodes", "abc"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "ragen-train sft: error: --episodes 'abc' must be one positive count, or one per --env game (1)"]
    assert done.stdout == "" and not out.exists()


@pytest.mark.parametrize(("argv", "named"), [
    (["--episodes", "abc"], "--episodes 'abc' must be one positive count"),
    (["--protocol", "max_turnz=3"], "protocol: unknown ProtocolConfig fields: ['max_turnz']"),
    (["--env", "sokobann"], "unknown environment 'sokobann'"),
    (["--env", "bandit", "--env-config", "heigth=6"], "unknown BanditConfig fields: ['heigth']"),
    (["--env", "bandit,frozenlake", "--env-config", "height=6"],
     "--env-config 'height=6' overrides one game's config; in a mixture name the game: --env-config ENV:KEY=VALUE"),
    (["--env", "bandit,frozenlake", "--env-config", "sokoban:num_boxes=2"],
     "--env-config names ['sokoban'], not among the --env games ['bandit', 'frozenlake']"),
    (["--env", "bandit,frozenlake", "--env-config", "frozenlake:heigth=5"], "unknown FrozenLakeConfig fields: ['heigth']"),
    (["--env", "bandit,frozenlake", "--env-config", ":height=5"], "--env-config takes ENV:KEY=VALUE"),
    (["--model", "no/such/checkpoint"], "--model 'no/such/checkpoint' is neither 'tiny', 'default' nor a transformers checkpoint"),
    (["--max-steps", "0"], "--max-steps must be a positive int, got 0"),
    # AdamW refused these, but only after the output folder was written
    (["--weight-decay", "-1"], "weight_decay must be a finite number >= 0, got -1.0"),
    (["--weight-decay", "nan"], "weight_decay must be a finite number >= 0, got nan"),
    (["--lr", "inf"], "lr must be a finite number > 0, got inf"),
    (["--device", "gpu0"], "device='gpu0' is not a torch device"),
    pytest.param(["--device", "cuda"], "device='cuda' but CUDA is not available",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is there")),
    (["--help-config", "--env-config", "heigth=6"], "unknown BanditConfig fields: ['heigth']"),
    # Once trained on the full history, while ragen-eval would show the model a window of it.
    (["--protocol", "context=last_k"], "protocol.context must be 'full' for demonstrations"),
    # Once a Jinja TypeError from inside the chat template.
    (["--env", "visual_sokoban"], "'visual_sokoban' shows the model image observations; SFT trains on text"),
])
def test_bad_input_is_one_line_before_any_output(argv: list[str], named: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--out", str(out), *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ragen-train sft: error: ") and named in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_an_out_path_under_a_file_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--out", str(tmp_path / "file" / "run")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (f"ragen-train sft: error: --out {tmp_path / 'file' / 'run'}: "
                                               f"{tmp_path / 'file'} is a file, not a directory")


def test_resuming_with_other_settings_is_one_line_and_touches_nothing(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    (out / "resume").mkdir(parents=True)
    (out / "resume" / "progress.json").write_text('{"step": 1}\n')
    (out / "sft_config.json").write_text(json.dumps({"lr": 0.5}))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(SystemExit) as exit_info:
        main(["sft", "--out", str(out), "--env", "bandit", "--episodes", "2"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ragen-train sft: error: {out} holds a run with other settings (see {out / 'sft_config.json'}); " \
                  "choose another --out"
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
