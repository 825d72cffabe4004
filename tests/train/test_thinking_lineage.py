"""experiments/thinking_model/train6.sh and train7.sh: the stages of lineage.sh, with a stand-in for ragen-train on
PATH that records its arguments and leaves each chunk as a finished run would."""

from __future__ import annotations

import os
import subprocess

from tests.script_modules import REPO

# What the stand-in leaves: the resume state at the step B stops at, and a finished model
FAKE = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out/resume" && echo "{\\"step\\": ${B_STEP:-4000}}" > "$out/resume/progress.json"
touch "$out/resume/model.safetensors" "$out/model.safetensors"
"""


def _train(tmp_path, script: str, stages: str, **env: str) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    bin_dir = tmp_path / "bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir(parents=True)
        (bin_dir / "ragen-train").write_text(FAKE)
        (bin_dir / "ragen-train").chmod(0o755)
    calls = tmp_path / f"{script}-{stages.replace(' ', '_')}.txt"
    done = subprocess.run(["bash", str(REPO / "experiments/thinking_model" / script), str(tmp_path / "runs/x")],
                          env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CALLS": str(calls),
                               "STAGES": stages, **env}, capture_output=True, text=True, timeout=60)
    return done, [line.split() for line in calls.read_text().splitlines()] if calls.is_file() else []


def test_the_seventh_lineage_is_the_sixth_with_answers_after_a_space(tmp_path):
    done, sixth = _train(tmp_path / "six", "train6.sh", "b6 q6 s6")
    assert done.returncode == 0, done.stderr
    done, seventh = _train(tmp_path / "seven", "train7.sh", "b7 q7 s7")
    assert done.returncode == 0, done.stderr
    assert len(sixth) == len(seventh) == 3
    for six, seven in zip(sixth, seventh):
        # the chunk's step limit comes last; before it, the sixth's arguments and --answer-space
        assert six[-2:] == seven[-2:] == ["--max-steps", "500"]
        assert [a.replace(str(tmp_path / "seven"), "") for a in seven[:-2]] == [
            *[a.replace(str(tmp_path / "six"), "").replace("-b6", "-b7").replace("-q6", "-q7").replace("-s6", "-s7")
              for a in six[:-2]], "--answer-space"]
    b, q, s = sixth
    assert b[b.index("--model") + 1] == "tiny" and b[b.index("--demo-seed") + 1] == "902"
    assert q[q.index("--model") + 1] == f"{tmp_path}/six/runs/x-b6/snapshots/step_4000"
    assert s[s.index("--model") + 1] == f"{tmp_path}/six/runs/x-q6" and "--detour-turns" in s


def test_b_step_moves_where_b_stops_and_q_starts(tmp_path):
    done, calls = _train(tmp_path, "train7.sh", "b7 q7", B_STEP="5000")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs/x-b7/snapshots/step_5000/model.safetensors").is_file()
    q = calls[1]
    assert q[q.index("--model") + 1] == f"{tmp_path}/runs/x-b7/snapshots/step_5000"


def test_stages_out_of_order_or_of_the_other_lineage_are_refused(tmp_path):
    done, calls = _train(tmp_path, "train7.sh", "s7")
    assert done.returncode == 2 and "stage q7 has not finished" in done.stderr and not calls
    done, calls = _train(tmp_path, "train7.sh", "b6")
    assert done.returncode == 2 and "unknown stage b6 (b7, q7, check7, s7)" in done.stderr and not calls
