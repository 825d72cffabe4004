"""Smoke checks of one install profile, run by ``scripts/smoke_profiles.sh`` inside that profile's venv.

    python scripts/profile_checks.py bare|eval|train|openenv WORK_DIR

Each check fails (nonzero exit, a line saying what broke) when a dependency is missing or a command
that the README promises for the profile does not work. Uses the standard library and what the
profile installs, nothing else.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

#: Packages that a profile must not bring in, by profile (the bare one is the games only).
MUST_BE_ABSENT = {
    "bare": ("torch", "transformers", "openai", "httpx", "aiohttp", "pandas", "matplotlib", "pygame", "PIL"),
    "eval": ("torch", "transformers", "vllm"),
    "train": ("openai", "aiohttp", "vllm"),
    "openenv": ("torch", "transformers", "vllm"),
}


def _run(*argv: str, timeout: float = 300) -> str:
    """Run a console script of this venv; fail with its output when it exits nonzero."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"FAILED ({done.returncode}): {' '.join(argv)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def check_absent(profile: str) -> None:
    """The profile did not install what it must not (a torch in [eval] means a multi-GB download)."""
    present = [name for name in MUST_BE_ABSENT[profile] if importlib.util.find_spec(name) is not None]
    if present:
        sys.exit(f"FAILED: the {profile} profile installed {present}")


def check_bare(work: Path) -> None:
    """Every registered id makes, resets and steps; the text protocol plays; ``ragen-eval --help`` works."""
    import gymnasium as gym

    import ragen_envs
    from ragen_envs.text import TextEpisode

    ids = sorted(env_id for env_id in gym.registry if env_id.startswith("ragen/"))
    if len(ids) < 3:
        sys.exit(f"FAILED: only {ids} registered")
    for env_id in ids:
        env = gym.make(env_id, render_mode="ansi")
        env.reset(seed=0)
        env.step(env.action_space.sample())
        if not isinstance(env.render(), str):
            sys.exit(f"FAILED: {env_id} ansi render is not text")
        env.close()
    for preset in ragen_envs.PRESETS:
        episode = TextEpisode(preset.name, seed=0)
        episode.step("<think>try</think><answer>" + " || ".join(list(episode.game.action_names)[:2]) + "</answer>")
        if not episode.messages or not episode.record()["turns"]:
            sys.exit(f"FAILED: the text protocol did not play a turn of {preset.name}")
    # The console script exists in every install; its help must not need the [eval] extra.
    _run(_bin("ragen-eval"), "--help")
    print(f"bare: {len(ids)} ids made, reset and stepped; {len(ragen_envs.PRESETS)} presets played as text")


def _check_run(run_dir: Path) -> None:
    """A finished 4-episode run that went through the HTTP (openai) backend."""
    summary = json.loads((run_dir / "summary.json").read_text())
    if not (summary["complete"] and summary["episodes_done"] == 4 and summary["backend"] == "openai"):
        sys.exit(f"FAILED: {run_dir}/summary.json is not a complete 4-episode openai run")
    if "success_rate" not in summary["per_env"]["sokoban"]:
        sys.exit(f"FAILED: {run_dir}/summary.json has no Sokoban success rate")


def check_eval(work: Path) -> None:
    """Every subcommand's --help; an oracle run through --local-server and one through --base-url."""
    from ragen_eval.cli import SUBCOMMANDS

    ragen_eval = _bin("ragen-eval")
    _run(ragen_eval, "--help")
    for command in SUBCOMMANDS:
        _run(ragen_eval, command, "--help")
    common = ("--env", "sokoban", "--episodes", "4", "--out", str(work / "runs"), "--no-progress")
    _run(ragen_eval, "--model", "oracle", "--local-server", *common, "--run-name", "local")
    server = subprocess.Popen([ragen_eval, "serve", "--agent", "oracle", "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()  # "ragen-eval serve: listening on http://HOST:PORT/v1"
        if "listening on " not in line:
            sys.exit(f"FAILED: ragen-eval serve did not start: {line!r} {server.stderr.read()[-2000:]}")
        url = line.strip().rpartition("listening on ")[2]
        _run(ragen_eval, "--model", "oracle", "--base-url", url, *common, "--run-name", "remote")
    finally:
        server.terminate()
        server.wait(timeout=30)
    for name in ("local", "remote"):
        _check_run(work / "runs" / name)
    print("eval: every --help works; oracle played 4 Sokoban levels through --local-server and --base-url")


def check_train(work: Path) -> None:
    """``ragen-train --help`` and a one-step run of a tiny model, with a validation pass."""
    ragen_train = _bin("ragen-train")
    _run(ragen_train, "--help")
    _run(ragen_train, "env=bandit", "total_steps=1", "env_groups=2", "group_size=2", "max_new_tokens=16",
         "tiny_hidden_size=64", "tiny_num_layers=1", "micro_batch_size=2", "ppo_mini_batches=1",
         "eval_every=1", "eval_episodes=2", "--out", str(work / 'train'), "run_name=smoke")
    rows = (work / "train" / "smoke" / "metrics.jsonl").read_text().splitlines()
    if len(rows) != 1:
        sys.exit(f"FAILED: a one-step run logged {len(rows)} metric rows")
    print("train: --help works; a tiny model trained one step and was validated")


def check_openenv(work: Path) -> None:
    """The installed OpenEnv package (manifest, oracle, cards) passes ``openenv validate --level semantic``."""
    import ragen_envs.openenv_server as door

    package = Path(door.__file__).parent
    report = work / "openenv-validate.json"
    _run(_bin("openenv"), "validate", str(package), "--level", "semantic", "--output", str(report))
    results = {r["check_id"]: r["status"] for r in json.loads(report.read_text())["results"]}
    if results.get("static.manifest") != "pass" or {"fail", "error"} & set(results.values()):
        sys.exit(f"FAILED: openenv validate {package}: {results}")
    from ragen_envs import PRESETS

    if len(door.server_metadata("sokoban").readme_content.split("### ")) != len(PRESETS) + 1:
        sys.exit(f"FAILED: /metadata does not carry the {len(PRESETS)} preset cards")
    print(f"openenv: the installed package validates (static.manifest pass), {len(PRESETS)} environment cards")


def main() -> None:
    """Run the checks of one profile."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", choices=sorted(MUST_BE_ABSENT))
    parser.add_argument("work", type=Path, help="scratch directory for run directories")
    args = parser.parse_args()
    check_absent(args.profile)
    {"bare": check_bare, "eval": check_eval, "train": check_train, "openenv": check_openenv}[args.profile](args.work)


if __name__ == "__main__":
    main()
