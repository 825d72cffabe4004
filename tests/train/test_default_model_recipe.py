"""experiments/default_model/train.sh runs, stage by stage, the settings the shipped weights were trained
with: its `ragen-train sft` calls (caught by a stub on PATH) parse to the committed stage configs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ragen_train.sft import config_from_args  # noqa: E402
from tests.script_modules import REPO  # noqa: E402

pytestmark = pytest.mark.train

COMMITTED = REPO / "experiments" / "default_model" / "data"
#: The committed config of each stage, in train.sh's order.
STAGES = ("v4/stage1_sft_config.json", "v4/sft_config.json", "v6-lake-stage/stage3_sft_config.json",
          "v6-lake-stage/sft_config.json", "v7-sokoban-stage/stage5_sft_config.json",
          "v7-sokoban-stage/sft_config.json", "v9-second-sokoban-stage/stage7_sft_config.json",
          "v9-second-sokoban-stage/sft_config.json", "v12-lake-mix/sft_config.json",
          "v13-second-lake-mix/sft_config.json")
#: What decides the weights; paths, logging and checkpoint cadence do not.
TRAINING_KEYS = ("epochs", "batch_size", "lr", "weight_decay", "grad_clip", "warmup_steps", "max_seq_len", "seed",
                 "tiny_hidden_size", "tiny_num_layers", "share_prefix")

STUB = """#!/usr/bin/env bash
printf '%q ' "$@" >> "$CALLS"; echo >> "$CALLS"
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out/resume" && echo '{"step": 1}' > "$out/resume/progress.json" && touch "$out/model.safetensors"
"""


def _training_view(config: dict) -> dict:
    return {**{k: config[k] for k in TRAINING_KEYS}, "model": Path(config["model"]).name == "tiny",
            "demos": [{k: d[k] for k in ("env", "mode", "num_episodes", "seed", "protocol", "thought",
                                         "successful_only", "env_config")} for d in config["demos"]]}


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> list[list[str]]:
    root = tmp_path_factory.mktemp("recipe")
    stub = root / "bin" / "ragen-train"
    stub.parent.mkdir()
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}", "CALLS": str(root / "calls")}
    subprocess.run(["bash", str(REPO / "experiments/default_model/train.sh"), str(root / "sft")], check=True,
                   env=env, cwd=REPO, capture_output=True)
    return [shlex.split(line) for line in (root / "calls").read_text().splitlines()]


def test_every_stage_is_one_call_from_the_previous_stage(calls) -> None:
    assert len(calls) == len(STAGES)
    outs = [c[c.index("--out") + 1] for c in calls]
    models = [c[c.index("--model") + 1] for c in calls]
    assert models == ["tiny", *outs[:-1]] and outs[-1].endswith("/sft")


@pytest.mark.parametrize("stage", range(len(STAGES)))
def test_the_stage_trains_with_the_committed_settings(calls, stage: int) -> None:
    assert calls[stage][0] == "sft"
    argv = calls[stage][1:]
    argv = argv[:argv.index("--max-steps")] + argv[argv.index("--max-steps") + 2:]  # chunking, not a setting
    scripted = config_from_args(argv).to_dict()
    committed = json.loads((COMMITTED / STAGES[stage]).read_text())
    assert _training_view(scripted) == _training_view(committed)
