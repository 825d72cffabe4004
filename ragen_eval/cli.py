"""``ragen-eval``: evaluate a model on the ragen games, and manage runs and leaderboards.

Subcommands (``evaluate`` is the default, so ``ragen-eval --model ...`` evaluates)::

    ragen-eval [evaluate] [--model default|random|oracle|NAME|PATH] [--base-url URL ...] [--env ...] ...
                          [--judge-model NAME --judge-base-url URL ...]
    ragen-eval judge RUN --judge-model NAME [--judge-base-url URL | --judge-backend vllm|hf]
    ragen-eval show RUN [--episode ENV:SEED[:SAMPLE]]
    ragen-eval compare RUN_A RUN_B
    ragen-eval merge SHARD_DIR... --out DIR
    ragen-eval baselines RUN_DIR... [--out runs/baselines]    (plays random/oracle on the runs' levels)
    ragen-eval leaderboard RUN_DIR... [--out leaderboards/]   (only reads run directories)
    ragen-eval serve --agent random|oracle|default|PATH --port P
    ragen-eval ls

Exit status: 0 the command did its work; 1 an evaluation ran but its episodes ended in request errors
(all of them, or more than --max-error-rate), or a judge ran and no turn sent to it got a verdict; 2 bad
input, refused before any run directory is made; 130 interrupted (finished episodes are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragen_envs.cli_flags import GivenOnce
from ragen_envs.config_docs import config_help, field_docs, game_config_help
from ragen_envs.help_format import HelpFormatter, examples, field_help
from ragen_envs.overrides import parse_flag, parse_game_flag
from ragen_envs.registration import PRESETS, count_levels
from ragen_envs.splits import SPLIT_OFFSETS, SPLIT_SHARES
from ragen_envs.text.transcript import save_episode_frames

from ragen_eval.agents.base import Agent, SamplingParams
from ragen_eval.config import DEFAULT_ENVS, ENV_GROUPS, EvalConfig, expand_envs, parse_shard
from ragen_eval.consistency.judge import JUDGE_SAMPLING
from ragen_eval.judging import JUDGE_BACKENDS, JudgeConfig, failed_verdicts, judge_run_dir
from ragen_eval.leaderboard import build_leaderboard, write_leaderboard
from ragen_eval.metrics import paired_comparison
from ragen_eval.results_table import comparison_table, markdown_table, results_table
from ragen_eval.run_dir import (JUDGE_FILE, SUMMARY_FILE, RunDir, check_judge, check_run_name, episode_key,
                                level_differences, load_judgements, load_run, merge_judgements, merge_runs,
                                read_judgements)
from ragen_eval.run_stats import JudgeStats, RunStats
from ragen_eval.runner import baseline_configs, configured_agent, play_run
from ragen_eval.summary import build_summary, summary_of, write_summary
from ragen_eval.transcripts import transcript

SUBCOMMANDS = ("evaluate", "judge", "show", "compare", "merge", "baselines", "leaderboard", "serve", "ls")
#: Exit statuses (see the module docstring and docs/eval.md).
EXIT_OK, EXIT_RUN_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: The extra of ``ragen-envs`` that installs each optional import, for a one-line hint when it is missing.
EXTRA_OF_MODULE = {"openai": "eval", "httpx": "eval", "aiohttp": "eval", "pandas": "eval", "matplotlib": "eval",
                   "tqdm": "eval", "PIL": "eval", "torch": "train", "transformers": "train", "tokenizers": "train",
                   "vllm": "vllm", "pygame": "render"}
_ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``ragen-eval evaluate``."""
    d = EvalConfig()
    g = p.add_argument_group("model")
    g.add_argument("--model", default=d.model,
                   help="served model name, a checkpoint path (vllm/hf), random|oracle, or default: the tiny "
                        "multi-game model (Sokoban, FrozenLake, Bandit) embedded in the package (the default when --model is not given)")
    g.add_argument("--backend", choices=("builtin", "openai", "vllm", "hf"), default=None,
                   help="default: openai when --base-url or --local-server is given, else builtin for "
                        "random/oracle and hf for default")
    g.add_argument("--base-url", action="append", default=[], dest="base_urls",
                   help="OpenAI-compatible endpoint (…/v1); repeat to spread load over several servers")
    g.add_argument("--model-args", action="append", default=[], metavar="KEY=VALUE",
                   help="argument for a local backend, e.g. dtype=float32 max_model_len=2048 (vllm), device=cpu (hf)")
    g.add_argument("--api-key-env", default=d.api_key_env,
                   help="environment variable holding the API key (the key is never written anywhere)")
    g.add_argument("--api-key", default=None, help="refused: a key on the command line lands in shell history "
                                                   "and process lists; use --api-key-env")
    g.add_argument("--local-server", action="store_true",
                   help="serve --model with ragen-eval serve on loopback and evaluate through HTTP")
    g.add_argument("--server-arg", action="append", default=[], dest="server_args",
                   help="extra argument for the local server, e.g. --server-arg=--latency=0.2")
    g = p.add_argument_group("levels")
    g.add_argument("--env", default=None, action=GivenOnce,
                   help="comma-separated presets or groups (default, all, sokoban_all, ...; default: "
                        f"{','.join(DEFAULT_ENVS)}); see ragen-eval ls")
    g.add_argument("--levels", default=None, metavar="FILE_OR_DIR",
                   help="play the Sokoban levels of a file or directory (Boxoban, XSB/.sok, # @ $ . notation) "
                        "instead of --env; episode i is level i, files in name order")
    g.add_argument("--levels-limit", type=int, default=None, metavar="N",
                   help="read and certify only the first N levels of --levels")
    g.add_argument("--episodes", type=int, default=None,
                   help=f"episodes (levels) per env (default {d.episodes}; with --levels: every level of the set)")
    g.add_argument("--split", default=d.split, help="seed split: train, val or test")
    g.add_argument("--seed-start", type=int, default=d.seed_start, help="index of the first seed in the split")
    g.add_argument("--shard", default=None, help="i/n: play only shard i (0-based) of n; join them with ragen-eval merge")
    g.add_argument("--protocol", action="append", default=[], metavar="KEY=VALUE",
                   help="text-protocol field, e.g. observation_format=coords, max_turns=10 (YAML values, dotted "
                        "keys; the grammar of ragen-train protocol.KEY=VALUE); see --help-config")
    g.add_argument("--env-config", action="append", default=[], metavar="ENV:KEY=VALUE",
                   help="game-config override for one env, e.g. sokoban:num_boxes=2")
    g = p.add_argument_group("sampling")
    docs = field_docs(SamplingParams)
    g.add_argument("--temperature", type=float, default=d.sampling.temperature, help=field_help(docs, "temperature"))
    g.add_argument("--top-p", type=float, default=d.sampling.top_p, help=field_help(docs, "top_p"))
    g.add_argument("--max-tokens", type=int, default=d.sampling.max_tokens, help=field_help(docs, "max_tokens"))
    g.add_argument("--sampling-seed", type=int, default=None, help="seed sent with every request, if any")
    g.add_argument("--agent-seed", type=int, default=d.agent_seed, help="seed of the built-in random agent")
    g = p.add_argument_group("execution")
    g.add_argument("--concurrency", type=int, default=d.concurrency, help="episodes (and requests) in flight")
    g.add_argument("--timeout", type=float, default=d.timeout, help="per-request timeout, seconds")
    g.add_argument("--max-retries", type=int, default=d.max_retries, help="retries per request on 429/5xx/timeouts")
    g.add_argument("--rps", type=float, default=None, dest="requests_per_second", help="max requests per second")
    g.add_argument("--out", default="runs", help="parent directory of run directories")
    g.add_argument("--run-name", default=None, help="run directory name (default: <model>__<backend>__<split>[__shard-i-of-n])")
    g.add_argument("--retry-errors", action="store_true",
                   help="on resume, replay episodes that ended with a request error")
    g.add_argument("--max-error-rate", type=float, default=None, metavar="RATE",
                   help="exit 1 when more than this fraction (0..1) of the run's episodes ended in a request "
                        "error (default: only when all of them did)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    g.add_argument("--help-config", action="store_true",
                   help="list every field of the run's config (EvalConfig, its protocol and sampling, and the "
                        "game config of each --env) with its default and help, and exit")
    g.add_argument("--print-config", action="store_true",
                   help="print the resolved config (as config.json stores it) and exit; makes no run directory")


def add_judge_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """Options that choose the LLM judge of thought-state consistency (``evaluate`` and ``judge``)."""
    g = p.add_argument_group("judge", "an LLM lists the claims in every thought, with verdicts; the summary "
                                      "reports how far it agrees with the rule-based checks")
    g.add_argument("--judge-model", required=required, default=None,
                   help="served judge model name (openai) or checkpoint path (vllm/hf)")
    g.add_argument("--judge-backend", choices=JUDGE_BACKENDS, default=None,
                   help="default: openai (then --judge-base-url is required)")
    g.add_argument("--judge-base-url", action="append", default=[], dest="judge_base_urls",
                   help="the judge's OpenAI-compatible endpoint (…/v1); repeat to spread load")
    g.add_argument("--judge-model-args", action="append", default=[], metavar="KEY=VALUE",
                   help="argument for a local judge backend (vllm, hf)")
    g.add_argument("--judge-api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the judge endpoint's key")
    g.add_argument("--judge-api-key", default=None, help="refused: use --judge-api-key-env")
    g.add_argument("--judge-max-tokens", type=int, default=JUDGE_SAMPLING.max_tokens,
                   help="token limit of a judge reply (the judge samples greedily)")
    g.add_argument("--judge-concurrency", type=int, default=None,
                   help="episodes judged at once (default: --concurrency)")


def judge_config_from_args(args: argparse.Namespace) -> JudgeConfig | None:
    """A :class:`~ragen_eval.judging.JudgeConfig` from parsed arguments, or None without ``--judge-model``."""
    _check_key_options(args, "--judge-api-key", args.judge_api_key, "--judge-api-key-env", args.judge_api_key_env)
    if args.judge_model is None:
        for flag, value in (("--judge-base-url", args.judge_base_urls), ("--judge-backend", args.judge_backend),
                            ("--judge-model-args", args.judge_model_args)):
            if value:
                raise ValueError(f"{flag} needs --judge-model")
        return None
    if args.judge_max_tokens < 1:
        raise ValueError(f"--judge-max-tokens must be >= 1, got {args.judge_max_tokens}")
    return JudgeConfig(
        model=args.judge_model, backend=args.judge_backend, base_urls=list(args.judge_base_urls),
        model_args=parse_flag(args.judge_model_args, "--judge-model-args"), api_key_env=args.judge_api_key_env,
        sampling=replace(JUDGE_SAMPLING, max_tokens=args.judge_max_tokens),
        concurrency=args.judge_concurrency or args.concurrency, timeout=args.timeout, max_retries=args.max_retries,
        requests_per_second=args.requests_per_second,
    )


def _print_judge_stats(stats: Any) -> None:
    if stats is None or not stats.episodes:
        return
    print(f"judge: {stats.episodes} episodes, {stats.turns} turns in {stats.wall_seconds:.1f} s, "
          f"{stats.errors} turns without verdicts" + (f" (first: {stats.first_error})" if stats.first_error else ""),
          file=sys.stderr)


def _check_key_options(args: argparse.Namespace, key_flag: str, key: str | None, env_flag: str, env_name: str) -> None:
    """Refuse an API key given on the command line, and a key passed where a variable name belongs."""
    if key is not None:
        raise ValueError(f"{key_flag} is not accepted (a key on the command line lands in shell history and "
                         f"process lists): put the key in an environment variable and name it with {env_flag}, "
                         f"e.g. MY_KEY=... ragen-eval ... {env_flag} MY_KEY")
    if env_name and not _ENV_VAR_NAME.fullmatch(env_name):
        # The value is not echoed: it may well be the key itself.
        raise ValueError(f"{env_flag} takes the NAME of an environment variable (e.g. OPENAI_API_KEY), and the "
                         "value given is not one; the key itself is never passed on the command line")


def config_from_args(args: argparse.Namespace) -> EvalConfig:
    """An :class:`EvalConfig` from parsed ``evaluate`` arguments; any bad value is a ``ValueError``."""
    _check_key_options(args, "--api-key", args.api_key, "--api-key-env", args.api_key_env)
    episodes, levels_limit = args.episodes, args.levels_limit
    if args.levels is not None:
        if args.env is not None:
            raise ValueError("--levels plays its level set instead of --env presets; give one of the two")
        if episodes is None:
            episodes = _levels_from_seed_start(args.levels, levels_limit, args.seed_start)
        elif levels_limit is None and args.seed_start + episodes >= 1:
            # Certify the levels the run plays (and those before --seed-start), not the whole set.
            played = args.seed_start + episodes
            if count_levels(args.levels, played) == played:
                levels_limit = played
    try:
        return _eval_config(args, episodes, levels_limit)
    except TypeError as err:  # a value of the wrong type for its field: bad input, like any other
        raise ValueError(str(err)) from None


def _levels_from_seed_start(levels: str, levels_limit: int | None, seed_start: int) -> int:
    """``--episodes`` left out with ``--levels``: the number of levels of the set from ``--seed-start`` on, with
    the options named when there are none (not as ``--episodes 0``, which the command line never said)."""
    if levels_limit is not None and levels_limit < 1:
        raise ValueError(f"--levels-limit must be >= 1, got {levels_limit}")
    if seed_start < 0:
        raise ValueError(f"--seed-start must be >= 0, got {seed_start}")
    size = count_levels(levels, levels_limit)
    if seed_start >= size:
        held = f"{size} level{'s' if size > 1 else ''} (0..{size - 1})"
        raise ValueError(f"--seed-start {seed_start}: --levels {levels} holds {held}"
                         + (f" after --levels-limit {levels_limit}" if levels_limit is not None else "")
                         + ", so none is left to play")
    return size - seed_start


def _eval_config(args: argparse.Namespace, episodes: int | None, levels_limit: int | None) -> EvalConfig:
    """The :class:`EvalConfig` the arguments describe (``episodes`` and ``levels_limit``: as resolved for
    ``--levels``)."""
    return EvalConfig(
        model=args.model, backend=args.backend, base_urls=list(args.base_urls), api_key_env=args.api_key_env,
        model_args=parse_flag(args.model_args, "--model-args"),
        envs=args.env if args.env is not None else list(DEFAULT_ENVS),
        episodes=episodes if episodes is not None else EvalConfig.episodes, split=args.split,
        seed_start=args.seed_start, levels=args.levels, levels_limit=levels_limit,
        sampling=SamplingParams(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                                seed=args.sampling_seed),
        protocol=parse_flag(args.protocol, "--protocol"), env_configs=parse_game_flag(args.env_config),
        shard=parse_shard(args.shard), agent_seed=args.agent_seed, concurrency=args.concurrency,
        timeout=args.timeout, max_retries=args.max_retries, requests_per_second=args.requests_per_second,
        local_server=args.local_server, server_args=list(args.server_args),
    )


def _print_config_help(args: argparse.Namespace) -> None:
    """``--help-config``: every EvalConfig field, then the game config of each ``--env`` (its preset's values)."""
    overrides = parse_game_flag(args.env_config)
    print(config_help(EvalConfig))
    for env in expand_envs(args.env or list(DEFAULT_ENVS)) if args.levels is None else ():
        try:
            games = game_config_help(env, overrides.get(env), f"env_configs.{env}.")
        except TypeError as err:  # a value of the wrong type for its field: bad input
            raise ValueError(f"--env-config {env}: {err}") from None
        print(f"game config of {env} (--env-config {env}:KEY=VALUE), with the preset's values:\n{games}")


async def evaluate_async(config: EvalConfig, run_path: str | os.PathLike[str], *, agent: Agent | None = None,
                         progress: bool = True, retry_errors: bool = False, judge: JudgeConfig | None = None,
                         judge_agent: Agent | None = None) -> tuple[dict[str, Any], RunStats]:
    """Create or resume the run at ``run_path``, play what is missing, write and return the summary.

    The steps of ``ragen-eval evaluate``: :func:`ragen_eval.runner.play_run` plays (``agent``
    overrides the one the config describes: tests, benchmarks), :func:`ragen_eval.judging.judge_run_dir`
    then judges every episode not judged yet when ``judge`` is given (``judge_agent`` overrides the
    judge's agent; ``stats.judge`` says what it did), and :func:`ragen_eval.summary.write_summary`
    writes ``summary.json``, which then carries rule/judge agreement.
    """
    config.check_runnable()  # a bad override or a missing checkpoint fails before the directory is made
    check_server_args(config)
    # A model that cannot load (a hub id that is not there, a broken checkpoint) fails here too, before the
    # directory is made: a run directory left behind would refuse the corrected command as another config.
    owned = configured_agent(config) if agent is None and not config.local_server else None
    try:
        with RunDir(Path(run_path), config, retry_errors=retry_errors) as run:
            if judge is not None:  # refuse a second judge before playing, not after
                check_judge(read_judgements(run.path), judge.identity(), run.path / JUDGE_FILE)
            stats = await play_run(run, agent=agent or owned, progress=progress)
            if judge is not None:
                stats.judge = await judge_run_dir(run, judge, agent=judge_agent, retry_errors=retry_errors,
                                                  progress=progress)
            return write_summary(run), stats
    finally:
        if owned is not None:
            await owned.aclose()


def check_server_args(config: EvalConfig) -> None:
    """Raise ``ValueError`` unless the local server would start with ``config.server_args``: parsed and
    checked as ``ragen-eval serve`` does, before the run directory is made. Messages name options, never
    their values (a value may be a key)."""
    if not config.local_server:
        return
    from ragen_eval import serve

    for arg in config.server_args:
        option = arg.partition("=")[0]
        if option in ("--agent", "--host", "--port"):
            raise ValueError(f"--server-arg {option}: --local-server sets the server's agent (--model) and binds "
                             "it to a free loopback port; leave those to it")
    parser = argparse.ArgumentParser(prog="ragen-eval serve", allow_abbrev=False, add_help=False, exit_on_error=False)
    serve.add_arguments(parser)
    try:
        args, unknown = parser.parse_known_args(["--agent", config.model, *config.server_args])
    except argparse.ArgumentError as err:
        reason = str(err.message).partition(":")[0]  # "invalid float value: 'x'" without the value
        raise ValueError(f"--server-arg {err.argument_name}: {reason}") from None
    if unknown:
        names = sorted({a.partition("=")[0] if a.startswith("-") else "a value without an option" for a in unknown})
        raise ValueError(f"--server-arg: ragen-eval serve does not take {', '.join(names)} (see ragen-eval serve "
                         "--help)")
    if args.api_key_env is not None and not _ENV_VAR_NAME.fullmatch(args.api_key_env):
        raise ValueError("--server-arg --api-key-env takes the NAME of an environment variable, and the value "
                         "given is not one; the key itself is never passed on the command line")
    serve.config_from_args(args).api_key()  # out-of-range rates, an unset key variable


def evaluate(config: EvalConfig, run_path: str | os.PathLike[str], **kwargs: Any) -> tuple[dict[str, Any], RunStats]:
    """Synchronous wrapper of :func:`evaluate_async`."""
    return asyncio.run(evaluate_async(config, run_path, **kwargs))


async def judge_async(run_path: str | os.PathLike[str], judge: JudgeConfig, *, agent: Agent | None = None,
                      progress: bool = True, retry_errors: bool = False) -> tuple[dict[str, Any], JudgeStats]:
    """Judge an existing run directory (what is not judged yet), rewrite and return its summary."""
    config, _ = load_run(run_path)
    with RunDir(Path(run_path), config) as run:
        stats = await judge_run_dir(run, judge, agent=agent, retry_errors=retry_errors, progress=progress)
        return write_summary(run), stats


def judge(run_path: str | os.PathLike[str], judge_config: JudgeConfig,
          **kwargs: Any) -> tuple[dict[str, Any], JudgeStats]:
    """Synchronous wrapper of :func:`judge_async`."""
    return asyncio.run(judge_async(run_path, judge_config, **kwargs))


def play_baselines(run_dirs: list[str | os.PathLike[str]], out_dir: str | os.PathLike[str], *,
                   progress: bool = True) -> list[Path]:
    """Play (or resume) random and oracle on every level set of ``run_dirs`` that lacks them, under ``out_dir``.

    Which runs are missing is :func:`ragen_eval.runner.baseline_configs`; each is evaluated like any
    model. Returns the baseline run directories, to be ranked beside ``run_dirs`` by ``ragen-eval leaderboard``.
    """
    made = []
    for name, config in baseline_configs(run_dirs):
        path = Path(out_dir) / name
        evaluate(config, path, progress=progress)
        made.append(path)
    return made


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Run (or resume) an evaluation and print its results table."""
    if args.help_config:
        _print_config_help(args)
        return EXIT_OK
    config = config_from_args(args)
    if args.print_config:
        print(json.dumps(config.to_dict(), indent=2))
        return EXIT_OK
    judge = judge_config_from_args(args)  # a bad judge fails now, not after the run
    if args.max_error_rate is not None and not 0.0 <= args.max_error_rate <= 1.0:
        raise ValueError(f"--max-error-rate is a fraction in [0, 1], got {args.max_error_rate}")
    check_out_dir(args.out, "--out")
    run_path = Path(args.out) / (check_run_name(args.run_name) if args.run_name is not None else config.run_name())
    check_out_dir(run_path, "the run directory")
    config.check_runnable()  # before the imports below, which take seconds for torch or vllm
    _import_what_the_run_needs(config, judge, progress=not args.no_progress)
    try:
        summary, stats = evaluate(config, run_path, progress=not args.no_progress, retry_errors=args.retry_errors,
                                  judge=judge)
    except KeyboardInterrupt:
        print(f"\ninterrupted; finished episodes are kept in {run_path}. Run the same command again to resume.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(results_table(summary))
    print(f"\nrun directory: {run_path}", file=sys.stderr)
    if stats.episodes:
        print(f"this invocation: {stats.episodes} episodes, {stats.turns} turns in {stats.wall_seconds:.1f} s "
              f"({stats.turns_per_second:.1f} turns/s, harness CPU {1e3 * stats.cpu_seconds / max(stats.turns, 1):.2f}"
              f" ms/turn), {stats.errors} episodes ended by errors", file=sys.stderr)
    _print_judge_stats(stats.judge)
    _, records = load_run(run_path)  # read once for both verdicts
    verdict = _error_verdict(records, args.max_error_rate)
    if judge is not None and _judge_verdict(run_path, records, "ragen-eval evaluate") != EXIT_OK:
        return EXIT_RUN_FAILED
    return verdict


def check_out_dir(path: str | os.PathLike[str], what: str) -> None:
    """Raise ``ValueError`` when ``path``, or a folder above it, exists but is not a directory."""
    for place in (Path(path), *Path(path).parents):
        if place.exists() and not place.is_dir():
            raise ValueError(f"{what} {path}: {place} is a file, not a directory")


def _import_what_the_run_needs(config: EvalConfig, judge: JudgeConfig | None, *, progress: bool) -> None:
    """Import the optional packages the run will use now, so a missing extra fails before the run directory
    is made (``main`` turns the ModuleNotFoundError into an install hint)."""
    needed = {"openai": ("openai",), "hf": ("torch", "transformers"), "vllm": ("vllm",)}
    modules = [*needed.get(config.resolved_backend(), ()), *(("tqdm",) if progress else ())]
    if judge is not None:
        modules.extend(needed.get(judge.backend or "openai", ()))
    for name in modules:
        importlib.import_module(name)


def _error_verdict(records: list[dict[str, Any]], max_error_rate: float | None) -> int:
    """Say on stderr how many of the run's episodes (``records``) ended in a request error; exit 1 when that is
    all of them or more than ``max_error_rate``."""
    errors = Counter(str(r["error"]) for r in records if r.get("error"))
    failed = sum(errors.values())
    if not failed:
        return EXIT_OK
    common, count = errors.most_common(1)[0]
    detail = f"most common ({count}): {common}"
    if failed == len(records):
        print(f"ragen-eval evaluate: error: every episode ({failed} of {failed}) ended in an error, so the table "
              f"measures nothing; {detail}. Fix the cause, then rerun with --retry-errors.", file=sys.stderr)
        return EXIT_RUN_FAILED
    rate = failed / len(records)
    over = max_error_rate is not None and rate > max_error_rate
    print(f"ragen-eval evaluate: {'error' if over else 'warning'}: {failed} of {len(records)} episodes "
          f"({rate:.1%}) ended in an error and count as failures"
          + (f", above --max-error-rate {max_error_rate:g}" if over else "")
          + f"; {detail}. Rerun with --retry-errors to replay them.", file=sys.stderr)
    return EXIT_RUN_FAILED if over else EXIT_OK


def _judge_verdict(run_path: Path, records: list[dict[str, Any]], prog: str) -> int:
    """Exit 1, saying why on stderr, when every turn of the run (its ``records``) that asked the judge got no
    verdict (the run's current verdicts, not this invocation's: a rerun that judges nothing new fails again)."""
    errors, asked = failed_verdicts(load_judgements(run_path, records) or {})
    failed = sum(errors.values())
    if not asked or failed < asked:
        return EXIT_OK
    common, count = errors.most_common(1)[0]
    print(f"{prog}: error: every turn sent to the judge ({failed} of {failed}) got no verdict, so the judge "
          f"figures measure nothing; most common ({count}): {common}. Fix the cause, then rerun with --retry-errors.",
          file=sys.stderr)
    return EXIT_RUN_FAILED


def cmd_judge(args: argparse.Namespace) -> int:
    """Judge the thoughts of an existing run (resumable) and print its results table."""
    try:
        summary, stats = judge(args.run, judge_config_from_args(args), progress=not args.no_progress,
                               retry_errors=args.retry_errors)
    except KeyboardInterrupt:
        print(f"\ninterrupted; verdicts so far are kept in {args.run}. Run the same command again to resume.",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    print(json.dumps(summary, indent=2) if args.json else results_table(summary))
    _print_judge_stats(stats)
    return _judge_verdict(Path(args.run), load_run(args.run)[1], "ragen-eval judge")


def cmd_show(args: argparse.Namespace) -> int:
    """Print a run's results table (recomputed from its episodes) or one episode's transcript."""
    if args.frames is not None and args.episode is None:
        raise ValueError("--frames needs --episode ENV:SEED: the frames of one episode are written")
    config, records = load_run(args.run)
    judgements = load_judgements(args.run, records)
    if args.episode is None:
        summary = build_summary(config, records, judgements)
        print(json.dumps(summary, indent=2) if args.json else results_table(summary))
        return 0
    matches = _episode_records(args.episode, config.envs, records, args.run)
    if args.frames is not None:
        for r in matches:  # several samples of one level: a folder each
            where = Path(args.frames) / (f"sample_{r.get('sample', 0)}" if len(matches) > 1 else "")
            print(f"wrote {len(save_episode_frames(r, where))} frames to {where}")
        return 0
    print("\n\n".join(transcript(r, (judgements or {}).get(episode_key(r))) for r in matches))
    return 0


def _episode_records(spec: str, envs: list[str], records: list[dict[str, Any]], run: str) -> list[dict[str, Any]]:
    """The records ``show --episode ENV:SEED[:SAMPLE]`` names. ENV is matched against the run's env names, which
    may hold a colon themselves (a level set's ``levels:FILE``), so the spec is not simply split at colons."""
    env = max((e for e in envs if spec.startswith(f"{e}:")), key=len, default=None)
    parts = spec[len(env) + 1:].split(":") if env is not None else []
    matches = []
    if 1 <= len(parts) <= 2:
        # A level played several times (a training step's group in ragen-train's saved rollouts) has one record
        # per sample.
        seed, sample = parts[0], parts[1:]
        matches = [r for r in records if r["env"] == env and str(r["seed"]) == seed
                   and (not sample or str(r.get("sample", 0)) == sample[0])]
    if not matches:
        example = f", e.g. {records[0]['env']}:{records[0]['seed']}" if records else f" ({run} has no episodes)"
        raise ValueError(f"no episode {spec!r} in {run} (its envs: {', '.join(envs)}); give ENV:SEED or "
                         f"ENV:SEED:SAMPLE{example}")
    return matches


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired significance tests between two runs on the levels both played."""
    (config_a, a), (config_b, b) = load_run(args.run_a), load_run(args.run_b)
    differences = level_differences(config_a, config_b)
    if differences:
        raise ValueError("the two runs give the same env names to different levels, so their pairs would not be "
                         "the same level:\n  " + "\n  ".join(differences))
    result = paired_comparison(a, b)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"A = {args.run_a}\nB = {args.run_b}\n")
    print(comparison_table(result))
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    """Join shard directories into one run directory and write its summary."""
    check_out_dir(args.out, "--out")
    out = merge_runs(args.shards, args.out)
    merge_judgements(args.shards, out)
    summary = summary_of(out)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    print(results_table(summary))
    print(f"\nmerged {len(args.shards)} shards into {out}", file=sys.stderr)
    return 0


def cmd_baselines(args: argparse.Namespace) -> int:
    """Play the random and oracle baselines the runs' level sets lack; print every baseline run directory."""
    check_out_dir(args.out, "--out")
    for path in play_baselines(args.runs, args.out, progress=not args.no_progress):
        print(path)
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """Write the leaderboard tables and plots for some run directories (read-only: it plays nothing)."""
    check_out_dir(args.out, "--out")
    board = build_leaderboard({path: summary_of(path) for path in args.runs})
    for row in board.rows:
        if not row["episodes"]:
            print(f"ragen-eval leaderboard: warning: {row['run']} has no finished episode; it is listed last, "
                  "without figures, and left out of the plots", file=sys.stderr)
    paths = write_leaderboard(board, args.out)
    print(Path(paths["markdown"]).read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Delegate to ``ragen_eval.serve``."""
    from ragen_eval import serve

    return serve.main(args)


def cmd_ls(args: argparse.Namespace) -> int:
    """List environment presets, groups and seed splits."""
    print(markdown_table(["preset", "gymnasium id", "description"], [[p.name, p.env_id, p.description] for p in PRESETS]))
    print("\ngroups: " + "; ".join(f"{k} = {','.join(v)}" for k, v in ENV_GROUPS.items()))
    print("splits: " + ", ".join(f"{k} (seeds from {v})" for k, v in SPLIT_OFFSETS.items())
          + "; a seed is kept when its level's content hashes to its split ("
          + "/".join(f"{share}%" for share in SPLIT_SHARES.values()) + " of levels)")
    return 0


#: Worked examples at the end of each subcommand's ``--help`` (a test parses every one and runs the cheap ones,
#: in this order, in an empty directory).
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "evaluate": (
        ("the built-in oracle on 4 levels of each default game (writes runs/oracle__builtin__test)",
         "ragen-eval --model oracle --episodes 4"),
        ("the random agent on the same levels", "ragen-eval --model random --episodes 4"),
        ("an OpenAI model (the key is read from OPENAI_API_KEY)",
         "ragen-eval --model gpt-4o-mini --base-url https://api.openai.com/v1 --env sokoban --episodes 50"),
        ("a local checkpoint on vLLM, greedy",
         "ragen-eval --model path/to/checkpoint --backend vllm --model-args dtype=bfloat16 --temperature 0"),
        ("the resolved config of a run, without running it",
         "ragen-eval --model oracle --env frozenlake --protocol max_turns=3 --print-config"),
        ("every config field with its default, and the game config of Sokoban",
         "ragen-eval --help-config --env sokoban"),
    ),
    "judge": (
        ("judge a run's thoughts with an OpenAI model",
         "ragen-eval judge runs/oracle__builtin__test --judge-model gpt-4o-mini "
         "--judge-base-url https://api.openai.com/v1"),
        ("judge with a local model on vLLM",
         "ragen-eval judge runs/oracle__builtin__test --judge-model path/to/judge --judge-backend vllm"),
    ),
    "show": (
        ("the results table of a run", "ragen-eval show runs/oracle__builtin__test"),
        ("the transcript of one level (ENV:SEED, seeds as the run's episodes.jsonl lists them)",
         "ragen-eval show runs/oracle__builtin__test --episode bandit:200000000"),
    ),
    "compare": (
        ("paired tests between two runs on the same levels",
         "ragen-eval compare runs/oracle__builtin__test runs/random__builtin__test"),
    ),
    "merge": (
        ("play a run in two shards (on two machines, say), then join them",
         "ragen-eval --model oracle --episodes 4 --shard 0/2"),
        ("", "ragen-eval --model oracle --episodes 4 --shard 1/2"),
        ("", "ragen-eval merge runs/oracle__builtin__test__shard-0-of-2 runs/oracle__builtin__test__shard-1-of-2 "
             "--out runs/oracle-merged"),
    ),
    "baselines": (
        ("random and oracle on the levels of a model's run (under runs/baselines)",
         "ragen-eval baselines runs/gpt-4o-mini__openai__test"),
    ),
    "leaderboard": (
        ("tables (Markdown, CSV, HTML) and plots of some runs",
         "ragen-eval leaderboard runs/oracle__builtin__test runs/random__builtin__test --out leaderboards"),
    ),
    "serve": (
        ("the oracle behind an OpenAI-compatible endpoint on 127.0.0.1:8791",
         "ragen-eval serve --agent oracle --port 8791"),
        ("the random agent with injected faults (HTTP 500s, slow replies)",
         "ragen-eval serve --agent random --port 8791 --failure-rate 0.1 --latency 0.2"),
        ("evaluate through such a server", "ragen-eval --model oracle --base-url http://127.0.0.1:8791/v1"),
    ),
    "ls": (("list presets, groups and splits", "ragen-eval ls"),),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``ragen-eval`` argument parser with all subcommands."""
    parser = argparse.ArgumentParser(prog="ragen-eval",
                                     description="Evaluate a model on the ragen games; manage runs and leaderboards.",
                                     epilog=__doc__.split("\n\n", 2)[2] + "\n\n" + examples([
                                         EXAMPLES["evaluate"][0], EXAMPLES["evaluate"][2], EXAMPLES["show"][0],
                                         EXAMPLES["baselines"][0], EXAMPLES["leaderboard"][0], EXAMPLES["ls"][0]]),
                                     formatter_class=HelpFormatter, allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True)
    # No prefix matching: `--seed 1` must not quietly become `--seed-start 1`, nor `--api-key K` `--api-key-env K`.
    def sub_parser(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's own keyword
        return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                              epilog=examples(EXAMPLES[name]), formatter_class=HelpFormatter, allow_abbrev=False)

    p = sub_parser("evaluate", help="evaluate a model (the default subcommand)")
    add_evaluate_arguments(p)
    add_judge_arguments(p, required=False)
    p.set_defaults(func=cmd_evaluate)
    p = sub_parser("judge", help="judge the thoughts of an existing run with an LLM (resumable)")
    p.add_argument("run", help="run directory")
    add_judge_arguments(p, required=True)
    g = p.add_argument_group("execution")
    g.add_argument("--concurrency", type=int, default=32, help="episodes judged at once (unless --judge-concurrency)")
    g.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, seconds")
    g.add_argument("--max-retries", type=int, default=5, help="retries per request on 429/5xx/timeouts")
    g.add_argument("--rps", type=float, default=None, dest="requests_per_second", help="max requests per second")
    g.add_argument("--retry-errors", action="store_true", help="judge again the episodes with a failed verdict")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    p.set_defaults(func=cmd_judge)
    p = sub_parser("show", help="results table of a run, or one episode's transcript")
    p.add_argument("run", help="run directory")
    p.add_argument("--episode", default=None, metavar="ENV:SEED[:SAMPLE]",
                   help="print this level's transcripts (every sample of it, or the one given)")
    p.add_argument("--frames", default=None, metavar="DIR",
                   help="with --episode: write the picture of each turn's state as DIR/turn_NN.png (replayed)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_show)
    p = sub_parser("compare", help="paired significance tests between two runs (McNemar, bootstrap)")
    p.add_argument("run_a", help="first run directory")
    p.add_argument("run_b", help="second run directory, played on the same levels")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=cmd_compare)
    p = sub_parser("merge", help="join the shard directories of a run")
    p.add_argument("shards", nargs="+", help="shard run directories (all n of them)")
    p.add_argument("--out", required=True, help="directory of the merged run")
    p.set_defaults(func=cmd_merge)
    p = sub_parser("baselines", help="play random and oracle on the levels of some runs (before ragen-eval leaderboard)")
    p.add_argument("runs", nargs="+", help="run directories whose level sets need baselines")
    p.add_argument("--out", default="runs/baselines", help="where the baseline runs are played (and resumed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_baselines)
    p = sub_parser("leaderboard", help="Markdown/CSV/HTML tables and plots from run directories (plays nothing)")
    p.add_argument("runs", nargs="+", help="run directories, baselines included (see ragen-eval baselines)")
    p.add_argument("--out", default="leaderboards", help="output directory")
    p.set_defaults(func=cmd_leaderboard)
    p = sub_parser("serve", help="an OpenAI-compatible server for a built-in agent or a checkpoint")
    try:
        from ragen_eval import serve
    except ModuleNotFoundError:  # no aiohttp (a bare install): the other subcommands and --help still work
        serve = None
    if serve is not None:
        serve.add_arguments(p)
    p.set_defaults(func=cmd_serve)
    p = sub_parser("ls", help="list environment presets, groups and splits")
    p.set_defaults(func=cmd_ls)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragen-eval`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "evaluate")
    prog = f"ragen-eval {argv[0]}" if argv[0] in SUBCOMMANDS else "ragen-eval"
    try:
        if argv[0] == "serve":  # without aiohttp, even `serve --help` gets the error naming the extra
            import ragen_eval.serve  # noqa: F401
        args = build_parser().parse_args(argv)
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter shutdown from failing to flush
        return EXIT_OK
    except ModuleNotFoundError as err:
        top = (err.name or "").partition(".")[0]
        if top not in EXTRA_OF_MODULE:
            raise  # not an optional dependency: a bug, keep the traceback
        print(f"{prog}: error: this needs the {top!r} package, which is not installed; "
              f"pip install 'ragen-envs[{EXTRA_OF_MODULE[top]}]'", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, OSError, RuntimeError) as err:  # OSError: a file where a folder should be, permissions
        print(f"{prog}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
