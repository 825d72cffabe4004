"""The StarPO / StarPO-S training loop, top to bottom.

One step:

1. **rollout**: P fresh initial states x N sampled episodes each, through the text protocol
   (:func:`ragen_train.rollout.rollout`); every rank plays its share of the groups.
2. **filter**: keep the groups whose raw rewards disagree most (:mod:`ragen_train.filtering`).
3. **score**: log-probs of the sampled tokens under the rollout policy (and the reference, for
   KL), critic values; then advantages (:mod:`ragen_train.advantages`).
   With ``rollout_staleness=k`` the batch is held back k steps: its old log-probs are scored
   now, by the policy that sampled it, and the update k steps later trains on it.
4. **update**: PPO epochs over shuffled mini-batches, micro-batches accumulated, the clipped
   surrogate + entropy + KL + clipped value loss (:mod:`ragen_train.loss`), gradients clipped,
   AdamW step. Under ``torchrun`` the mini-batch is split over ranks and DDP averages gradients;
   losses are divided by the *global* token count so the update equals the one-process update.
5. **log**: metrics row, collapse alert, periodic evaluation, checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ragen_envs import split_seeds
from ragen_eval.agents.base import SamplingParams
from ragen_eval.cli import evaluate as run_eval
from ragen_eval.config import EvalConfig
from ragen_eval.devices import torch_device
from ragen_eval.embedded_model import resolve_model_path
from ragen_eval.jsonl_store import rewrite_jsonl
from ragen_eval.metrics import headline_metrics
from ragen_eval.run_dir import CONFIG_FILE, EPISODES_FILE
from ragen_eval.summary import summarize
from ragen_train.advantages import (
    broadcast_to_tokens,
    grpo_advantages,
    masked_whiten,
    token_gae,
    tokens_to_turns,
    turn_gae,
    turns_to_tokens,
)
from ragen_train.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint, set_rng_state
from ragen_train.collapse import CollapseMonitor
from ragen_train.config import TrainConfig
from ragen_train.distributed import (
    DistInfo,
    all_gather_objects,
    all_reduce_sum,
    barrier,
    init_distributed,
    shutdown,
)
from ragen_train.filtering import FilterResult, select_by_game, select_groups
from ragen_train.loss import (
    aggregate,
    entropy_from_logits,
    kl_penalty,
    policy_loss,
    shift_right,
    token_logprobs,
    value_loss,
)
from ragen_train.policy import ActorCritic, load_policy, load_reference, load_tokenizer
from ragen_train.rollout import RolloutBatch, RolloutEngine, Trajectory, rollout
from ragen_train.run_dir import open_run_dir
from ragen_train.run_log import MetricsLog, metric_group, plot_metrics
from ragen_train.signals import cross_logprobs, first_turn_pairs, reply_information
from ragen_train.tiny import build_tiny_checkpoint
from ragen_train.vllm_engine import VLLMRolloutEngine


def step_seed_start(config: TrainConfig, step: int) -> int:
    """Index within the train split where the walk for ``step``'s seeds starts."""
    # Each step walks its own window of 4P seed indices; about 80% of them hold train levels, so the
    # P it keeps come from inside the window and no two steps share a seed.
    window = 4 * config.num_groups
    per_run = 1_000_000  # seed indices reserved per run seed: far more than 4P x total_steps
    return (config.seed * per_run + step * window) % (100_000_000 - per_run)


def step_seeds(config: TrainConfig, step: int) -> list[int]:
    """The P train-split seeds of ``step`` (levels of the train split only, as ``ragen_envs.split_seeds``
    keeps them): fresh every step, disjoint across run seeds (< 100). In a mixture each game walks
    its own part of the step's window (4 seed indices per group), in the mixture's order."""
    seeds: list[int] = []
    start = step_seed_start(config, step)
    for game in config.games():
        seeds += split_seeds("train", game.groups, start=start + 4 * len(seeds), env=game.name,
                             env_config=game.env_config)
    return seeds


def group_games(config: TrainConfig) -> list[str]:
    """The game label (:attr:`~ragen_train.config.MixtureGame.label`) of every group of a step, in order."""
    return [game.label for game in config.games() for _ in range(game.groups)]


def derived_seed(*parts: int) -> int:
    """A 31-bit seed mixed from integers (run seed, step, rank, purpose)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] & 0x7FFFFFFF)


# ---------------------------------------------------------------------------------------------
# Steps 1-2: rollout and filter


def collect(model: nn.Module, tokenizer: Any, config: TrainConfig, step: int, info: DistInfo,
            groups: Sequence[int] | None = None, retry: int = 0,
            engine: RolloutEngine | None = None) -> RolloutBatch:
    """Play this step's groups (each rank its share) and return the whole batch on every rank.

    ``engine`` samples the replies (:func:`open_rollout_engine`; None: ``model.generate``).

    ``groups`` restricts play to those group numbers (default: all); ``retry`` > 0 replays them with
    fresh samples (:func:`retry_hard_states`).
    """
    seeds = step_seeds(config, step)
    wanted = list(range(config.num_groups)) if groups is None else list(groups)
    mine = wanted[info.rank::info.world_size]
    local: list[Trajectory] = []
    first = 0  # the game's first group number
    for k, game in enumerate(config.games()):  # one lockstep batch per game of a mixture
        played = [g for g in mine if first <= g < first + game.groups]
        first += game.groups
        if not played:
            continue
        purpose = 1 if not retry else 100 + retry
        batch = rollout(model, tokenizer, game.name, [seeds[g] for g in played], group_size=config.group_size,
                        protocol=config.protocol, env_config=game.env_config,
                        max_new_tokens=config.max_new_tokens, max_seq_len=config.max_seq_len,
                        temperature=config.temperature, top_p=config.top_p,
                        batch_size=config.rollout_batch_size,
                        generation_seed=derived_seed(config.seed, step, info.rank, purpose, *([k] if k else [])),
                        engine=engine, reasoning_format=config.reasoning_reward_format,
                        reasoning_consistency=config.reasoning_reward_consistency)
        for traj in batch.trajectories:
            traj.group = played[traj.group]
            local.append(traj)
    everything = [t for part in all_gather_objects(info, local) for t in part]
    everything.sort(key=lambda t: t.group)  # stable: members keep their order
    return RolloutBatch(everything, config.num_groups, config.group_size)


def retry_hard_states(
    model: nn.Module, tokenizer: Any, config: TrainConfig, step: int, info: DistInfo, batch: RolloutBatch,
    engine: RolloutEngine | None = None,
) -> tuple[RolloutBatch, int]:
    """Replay every group none of whose rollouts succeeded, up to ``config.hard_state_retries`` times.

    A replay is a fresh set of N samples on the same initial state; the first replay in which some
    member succeeds replaces the group, so the state now has reward spread and can pass the filter.
    Groups that never succeed keep their first rollouts. Returns the new batch and how many groups
    were replaced. (The replacement is conditioned on a success, so it over-represents lucky
    samples of hard states: that is the point, and the reason it is off by default.)
    """
    by_group: dict[int, list[Trajectory]] = {g: [] for g in range(batch.num_groups)}
    for traj in batch.trajectories:
        by_group[traj.group].append(traj)
    failing = [g for g, members in by_group.items() if not any(t.success for t in members)]
    rescued = 0
    for retry in range(1, config.hard_state_retries + 1):
        if not failing:
            break
        replay = collect(model, tokenizer, config, step, info, groups=failing, retry=retry, engine=engine)
        replayed: dict[int, list[Trajectory]] = {g: [] for g in failing}
        for traj in replay.trajectories:
            replayed[traj.group].append(traj)
        won = [g for g in failing if any(t.success for t in replayed[g])]
        for g in won:
            by_group[g] = replayed[g]
        rescued += len(won)
        failing = [g for g in failing if g not in won]
    merged = [t for g in range(batch.num_groups) for t in by_group[g]]
    return RolloutBatch(merged, batch.num_groups, batch.group_size), rescued


# ---------------------------------------------------------------------------------------------
# Step 3: score the batch and compute advantages


#: What :func:`forward_scores` can add to a batch.
SCORES = ("old_logprobs", "old_values", "ref_logprobs")


@torch.no_grad()
def forward_scores(
    policy: ActorCritic,
    reference: nn.Module | None,
    data: dict[str, torch.Tensor],
    config: TrainConfig,
    info: DistInfo,
    scores: Sequence[str] = SCORES,
) -> None:
    """Add ``old_logprobs``, ``old_values`` and ``ref_logprobs`` (token-aligned, ``[B, T]``) to ``data``,
    or those of them named in ``scores``.

    Each rank scores every ``world_size``-th sequence; the results are gathered so that every
    rank holds the whole batch. When the update is a single on-policy optimizer step (one epoch,
    one mini-batch, no staleness) and there is no critic, the policy pass is skipped: the old
    log-probs are then the update's own, detached (ratio exactly 1), as TRL does. Log-probs are
    those of the sampling distribution, softmax(logits / ``config.temperature``).
    """
    batch = data["input_ids"].shape[0]
    on_policy = (config.ppo_epochs * len(config.mini_batch_sizes(batch)) == 1 and not config.uses_critic
                 and config.rollout_staleness == 0)
    want_logprobs = "old_logprobs" in scores and not on_policy
    want_values = "old_values" in scores and config.uses_critic
    want_ref = "ref_logprobs" in scores and reference is not None
    mine = list(range(info.rank, batch, info.world_size))
    parts: dict[str, list[tuple[int, torch.Tensor]]] = {key: [] for key in SCORES}
    policy.eval()
    for start in range(0, len(mine), config.micro_batch_size):
        idx = mine[start:start + config.micro_batch_size]
        if not (want_logprobs or want_values or want_ref):
            break
        ids, attn = _trimmed(data, idx, info.device)
        start = _first_scored_position(data, idx)
        if want_logprobs or want_values:
            logits, values = policy(ids, attn, with_values=want_values, logits_from=start)
            if want_logprobs:
                parts["old_logprobs"].extend(zip(idx, token_logprobs(logits, ids, start, config.temperature).cpu()))
            if values is not None:
                parts["old_values"].extend(zip(idx, shift_right(values.float()).cpu()))
        if want_ref:
            keep = ids.shape[1] - start if start > 0 else 0
            ref_logits = reference(input_ids=ids, attention_mask=attn, use_cache=False, logits_to_keep=keep).logits
            parts["ref_logprobs"].extend(zip(idx, token_logprobs(ref_logits, ids, start, config.temperature).cpu()))
    policy.train()
    width = data["input_ids"].shape[1]
    for key, rows in parts.items():
        rows = [r for part in all_gather_objects(info, rows) for r in part]
        if not rows:
            continue
        full = torch.zeros(batch, width)
        for i, row in rows:
            full[i, :row.shape[0]] = row
        data[key] = full * data["loss_mask"]


def compute_advantages(data: dict[str, torch.Tensor], config: TrainConfig) -> None:
    """Multiply ``rewards``, ``turn_rewards`` and ``scores`` by ``config.reward_scale``, then add
    ``advantages`` (and ``returns`` when there is a critic) to ``data``."""
    for key in ("rewards", "turn_rewards", "scores"):
        data[key] = data[key] * config.reward_scale
    mask = data["loss_mask"]
    if config.advantage_estimator == "gae":
        adv, ret = token_gae(data["rewards"], data["old_values"], mask, config.gamma, config.lam)
    elif config.advantage_estimator == "gae-turn":
        turns = data["turn_rewards"].shape[1]
        turn_values = tokens_to_turns(data["old_values"], data["turn_ids"], turns)
        turn_adv, turn_ret = turn_gae(data["turn_rewards"], turn_values, data["turn_mask"], config.gamma, config.lam)
        adv = turns_to_tokens(turn_adv, data["turn_ids"])
        ret = turns_to_tokens(turn_ret, data["turn_ids"])
    else:
        per_seq = grpo_advantages(data["scores"], data["group_ids"],
                                  scale_by_std=config.advantage_estimator == "grpo", eps=config.norm_adv_eps)
        adv, ret = broadcast_to_tokens(per_seq, mask), None
    if config.whiten_advantages and config.uses_critic:
        adv = masked_whiten(adv, mask)
    data["advantages"] = adv.float()
    if ret is not None:
        data["returns"] = ret.float()


# ---------------------------------------------------------------------------------------------
# Step 4: the PPO update


@dataclass
class UpdateStats:
    """Token-weighted means over one update (all epochs, all mini-batches, all ranks)."""

    policy_loss: float
    value_loss: float | None
    entropy: float
    clip_fraction: float
    clip_fraction_high: float
    approx_kl: float
    kl_ref: float | None
    grad_norm_actor: float
    grad_norm_critic: float | None
    optimizer_steps: int  # mini-batches x epochs: how often the weights moved in this RL step
    tokens: int  # non-pad tokens through forward + backward, all epochs and ranks


def ppo_update(
    model: nn.Module,
    policy: ActorCritic,
    optimizer: torch.optim.Optimizer,
    data: dict[str, torch.Tensor],
    config: TrainConfig,
    info: DistInfo,
    shuffle_seed: int,
) -> UpdateStats:
    """PPO epochs over ``data`` (the whole filtered batch, identical on every rank).

    ``model`` is ``policy`` or its DDP wrapper. Each mini-batch is split over ranks; each rank runs
    the same number of micro-batches (a rank short of sequences runs a zero-mask one), gradients
    are synchronised once per mini-batch, and every loss is divided by the mini-batch's global
    count, so one optimizer step equals the one-process step on the same mini-batch.
    """
    batch = data["input_ids"].shape[0]
    sizes = config.mini_batch_sizes(batch)
    bounds = np.cumsum([0, *sizes]).tolist()
    gen = torch.Generator().manual_seed(shuffle_seed)
    totals = torch.zeros(9, dtype=torch.float64)  # pg, vf, ent, clip, clip_high, akl, kl_ref, sampled, all tokens
    norms_actor, norms_critic = [], []
    for _ in range(config.ppo_epochs):
        order = torch.randperm(batch, generator=gen).tolist()
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            chunk = order[lo:hi]
            count = float(data["loss_mask"][chunk].sum()) if config.loss_agg_mode == "token-mean" else float(len(chunk))
            mine = chunk[info.rank::info.world_size]
            steps = math.ceil(math.ceil(len(chunk) / info.world_size) / config.micro_batch_size)
            optimizer.zero_grad(set_to_none=True)
            for k in range(steps):
                idx = mine[k * config.micro_batch_size:(k + 1) * config.micro_batch_size]
                real = bool(idx)
                idx = idx or chunk[:1]  # placeholder rows; their mask is zeroed below
                sync = k == steps - 1 or not info.distributed
                with contextlib.nullcontext() if sync else model.no_sync():
                    loss, parts = _micro_loss(model, data, idx, real, count, config, info)
                    loss.backward()
                totals += parts
            norms_actor.append(float(nn.utils.clip_grad_norm_(policy.actor_parameters(), config.grad_clip)))
            if config.uses_critic:
                norms_critic.append(float(nn.utils.clip_grad_norm_(policy.critic_parameters(), config.grad_clip)))
            optimizer.step()
    all_reduce_sum(info, totals)
    tokens = max(float(totals[7]), 1.0)
    n_mini = config.ppo_epochs * len(sizes)
    return UpdateStats(
        policy_loss=float(totals[0]) / n_mini,
        value_loss=float(totals[1]) / n_mini if config.uses_critic else None,
        entropy=float(totals[2]) / tokens,
        clip_fraction=float(totals[3]) / tokens,
        clip_fraction_high=float(totals[4]) / tokens,
        approx_kl=float(totals[5]) / tokens,
        kl_ref=float(totals[6]) / tokens if "ref_logprobs" in data else None,
        grad_norm_actor=float(np.mean(norms_actor)),
        grad_norm_critic=float(np.mean(norms_critic)) if norms_critic else None,
        optimizer_steps=n_mini,
        tokens=int(totals[8]),
    )


def _micro_loss(
    model: nn.Module,
    data: dict[str, torch.Tensor],
    idx: list[int],
    real: bool,
    count: float,
    config: TrainConfig,
    info: DistInfo,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss of one micro-batch (scaled for DDP's gradient averaging) and its stat sums."""
    ids, attn = _trimmed(data, idx, info.device)
    width = ids.shape[1]

    def take(key: str) -> torch.Tensor:
        return data[key][idx, :width].to(info.device)

    mask = take("loss_mask") * int(real)
    start = _first_scored_position(data, idx)
    logits, values = model(ids, attn, with_values=config.uses_critic, logits_from=start)
    # the rollout sampled from softmax(logits / temperature): ratio, entropy and KL are of that distribution
    logp = token_logprobs(logits, ids, start, config.temperature)
    old = take("old_logprobs") if "old_logprobs" in data else logp.detach()  # on-policy: see forward_scores
    pg, stats = policy_loss(logp, old, take("advantages"), mask,
                            clip_ratio_low=config.clip_ratio_low, clip_ratio_high=config.clip_ratio_high,
                            loss_agg_mode=config.loss_agg_mode, denominator=count)
    entropy = shift_right(entropy_from_logits(logits.float() / config.temperature), start)
    loss = pg - config.entropy_coeff * aggregate(entropy, mask, config.loss_agg_mode, count)
    kl_sum = 0.0
    if "ref_logprobs" in data and config.kl_coef > 0:
        kl = kl_penalty(logp, take("ref_logprobs"), config.kl_type)
        loss = loss + config.kl_coef * aggregate(kl, mask, config.loss_agg_mode, count)
        kl_sum = float((kl.detach() * mask).sum())
    vf = torch.zeros(())
    if config.uses_critic:
        vf, _ = value_loss(shift_right(values.float()), take("old_values"), take("returns"), mask,
                           clip=config.value_clip, loss_agg_mode=config.loss_agg_mode, denominator=count)
        loss = loss + config.value_coef * vf
    n = float(mask.sum())
    with torch.no_grad():
        parts = torch.tensor([float(pg), float(vf), float((entropy * mask).sum()), stats.clip_fraction * n,
                              stats.clip_fraction_high * n, stats.approx_kl * n, kl_sum, n,
                              float(attn.sum()) * int(real)], dtype=torch.float64)
    # DDP averages gradients over ranks; each rank's loss is a share of a global sum, so undo the mean.
    return loss * info.world_size, parts


def _first_scored_position(data: dict[str, torch.Tensor], idx: list[int]) -> int:
    """The last prompt position of the micro-batch's earliest first response: logits before it
    score no token, so the model need not project them onto the vocabulary."""
    mask = data["loss_mask"][idx]
    firsts = [int(row.nonzero()[0]) for row in mask if row.any()]
    return max(0, min(firsts) - 1) if firsts else 0


def _trimmed(data: dict[str, torch.Tensor], idx: list[int], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and attention_mask of rows ``idx``, cut to their longest sequence (right padding)."""
    attn = data["attention_mask"][idx]
    width = int(attn.sum(dim=1).max())
    return data["input_ids"][idx, :width].to(device), attn[:, :width].to(device)


# ---------------------------------------------------------------------------------------------
# Step 5: metrics, evaluation


def rollout_metrics(batch: RolloutBatch, groups: Sequence[int] | None = None, name: str = "rollout") -> dict[str, Any]:
    """``rollout/...`` of all rollouts (before filtering): the harness's episode metrics aggregated as
    ``ragen-eval`` summarises a run (:func:`ragen_eval.summary.summarize`, the
    :data:`~ragen_eval.metrics.HEADLINE_KEYS` and thought-state consistency), plus what only RL has:
    the reward spread over the batch and within groups (the input of the filter and the collapse
    monitor) and the share of sequences that overflowed ``max_seq_len``. ``groups`` (default: all)
    restricts them to those groups and ``name`` names the metric group (one game of a mixture:
    ``rollout/<game>``)."""
    groups = list(range(batch.num_groups)) if groups is None else list(groups)
    wanted = set(groups)
    trajectories = [t for t in batch.trajectories if t.group in wanted]
    rewards = batch.group_rewards()[groups]
    overall = summarize([t.record for t in trajectories])["overall"]
    return metric_group(name, {
        **headline_metrics(overall),
        "reward_std": float(rewards.std()),
        "in_group_std": float(rewards.std(axis=1).mean()),
        "overflowed": float(np.mean([t.overflowed for t in trajectories])),
    })


def game_metrics(batch: RolloutBatch, config: TrainConfig, kept: FilterResult) -> dict[str, Any]:
    """``rollout/<game>/...`` for each game of a mixture (nothing for one game): :func:`rollout_metrics`
    of its groups and the share of them the filter kept. The pooled ``rollout/...`` numbers are
    their weighted means (by episodes, turns or groups, as each metric counts)."""
    games = group_games(config)
    if len(set(games)) < 2:
        return {}
    row: dict[str, Any] = {}
    for label in dict.fromkeys(games):
        groups = [g for g, name in enumerate(games) if name == label]
        row.update(rollout_metrics(batch, groups, f"rollout/{label}"))
        row[f"rollout/{label}/kept_fraction"] = sum(g in kept.kept for g in groups) / len(groups)
    return row


def filter_groups(batch: RolloutBatch, config: TrainConfig) -> FilterResult:
    """The groups that enter the update (:mod:`ragen_train.filtering`), each game's apart under
    ``rollout_filter_scope=per_game`` (the same as pooled for one game)."""
    options = {"keep_ratio": config.rollout_filter_ratio, "zero_spread_quota": config.zero_spread_quota,
               "strategy": config.rollout_filter_strategy, "top_p": config.rollout_filter_top_p,
               "min_p": config.rollout_filter_min_p, "drop_zero_spread": config.filter_drop_zero_spread}
    if config.rollout_filter_scope == "per_game":
        return select_by_game(batch.group_rewards(), group_games(config), **options)
    return select_groups(batch.group_rewards(), **options)


def reply_signals(lm: nn.Module, tokenizer: Any, batch: RolloutBatch, config: TrainConfig,
                  info: DistInfo) -> dict[str, float]:
    """``rollout/reply_entropy``, ``reply_cond_entropy`` and ``reply_mi``: the estimates of
    :mod:`ragen_train.signals` from the first ``collapse_signals_replies`` first-turn replies of each
    group, scored by ``lm`` (the policy that sampled them) under every group's prompt, in no-grad
    batches of ``rollout_batch_size`` sequences. Each rank scores a share of the replies."""
    prompts, replies, own = first_turn_pairs(batch.trajectories, config.collapse_signals_replies)
    mine = list(range(info.rank, len(replies), info.world_size))
    cross = cross_logprobs(lm, prompts, [replies[i] for i in mine], temperature=config.temperature,
                           batch_size=config.rollout_batch_size, pad_id=tokenizer.pad_token_id)
    full = np.zeros((len(replies), len(prompts)))
    for part in all_gather_objects(info, list(zip(mine, cross.numpy()))):
        for i, values in part:
            full[i] = values
    est = reply_information(full, own)
    return metric_group("rollout", {"reply_entropy": est.entropy, "reply_cond_entropy": est.cond_entropy,
                                    "reply_mi": est.mutual_information})


def harness_config(config: TrainConfig, *, model: str, split: str, seed_start: int, episodes: int,
                   sampling: SamplingParams, **fields: Any) -> EvalConfig:
    """The ``ragen-eval`` config that plays ``episodes`` levels of ``split`` from ``seed_start`` with this
    run's games (each of a mixture) and protocol (``fields``: further ``EvalConfig`` fields)."""
    games = config.games()
    return EvalConfig(
        model=model, backend="hf", envs=[game.name for game in games], episodes=episodes, split=split,
        seed_start=seed_start, sampling=sampling, protocol=config.protocol,
        env_configs={game.name: dict(game.env_config) for game in games if game.env_config}, **fields)


def save_rollouts(batch: RolloutBatch, kept: Sequence[int], config: TrainConfig, step: int, run_dir: Path) -> Path:
    """Write the rollouts of ``step`` (1-based) to ``rollouts/step_N/`` as a ``ragen-eval`` run directory
    (``config.json`` + ``episodes.jsonl``), so ``ragen-eval show`` and the consistency tools open it.

    Each record gains ``group``, ``sample`` (its index within the group) and ``kept`` (whether its
    group entered the update); the config plays the step's train-split levels with ``samples`` =
    ``group_size``. A step that is redone after a resume replaces its directory's files.
    """
    out = run_dir / "rollouts" / f"step_{step:06d}"
    out.mkdir(parents=True, exist_ok=True)
    sampling = SamplingParams(temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_new_tokens)
    eval_config = harness_config(config, model=f"{run_dir.name}@step_{step:06d}", split="train",
                                 seed_start=step_seed_start(config, step - 1),
                                 episodes=max(game.groups for game in config.games()),
                                 sampling=sampling, samples=config.group_size)
    kept_groups = set(kept)
    members: dict[int, int] = {}
    records = []
    for traj in batch.trajectories:
        members[traj.group] = members.get(traj.group, -1) + 1
        records.append({**traj.record, "group": traj.group, "sample": members[traj.group],
                        "kept": traj.group in kept_groups})
    trained_by = {"run_dir": str(run_dir), "step": step}
    (out / CONFIG_FILE).write_text(json.dumps({"eval_config": eval_config.to_dict(), "trained_by": trained_by},
                                              indent=2) + "\n")
    rewrite_jsonl(out / EPISODES_FILE, records)
    return out


def evaluate(policy: ActorCritic, tokenizer: Any, config: TrainConfig, step: int, run_dir: Path) -> dict[str, Any]:
    """Evaluate the current policy on the fixed validation seeds through ``ragen_eval``'s runner.

    The policy is saved in transformers format to ``eval/step_N/model`` and played by
    ``ragen-eval``'s ``hf`` backend, exactly as ``ragen-eval --backend hf --model DIR --split val``
    would; the run directory ``eval/step_N`` keeps its episodes and summary. The same
    ``config.eval_episodes`` val-split seeds every time (of each game of a mixture), so curves
    compare like with like. Returns ``eval/...``: the summary's headline numbers, under the names
    ``rollout/...`` uses, pooled and (mixtures) ``eval/<game>/...`` per game.
    """
    out = run_dir / "eval" / f"step_{step:06d}"
    model_dir = out / "model"
    policy.lm.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    sampling = SamplingParams(temperature=config.eval_temperature, max_tokens=config.max_new_tokens,
                              seed=derived_seed(config.seed, step, 2))
    eval_config = harness_config(config, model=str(model_dir), split="val", seed_start=0,
                                 episodes=config.eval_episodes, sampling=sampling, concurrency=config.eval_episodes,
                                 model_args={"device": str(policy.lm.device)})
    summary, _ = run_eval(eval_config, out / "run", progress=False)
    failed = summary["overall"]["errors"]
    if failed:  # in process, an error is a bug, never a lost episode to count as a failure
        raise RuntimeError(f"evaluation at step {step}: {failed} of {summary['overall']['episodes']} val episodes "
                           f"ended in an error; see {out / 'run' / 'episodes.jsonl'}")
    shutil.rmtree(model_dir)  # the run keeps episodes and summary; the weights are in the checkpoints
    row = metric_group("eval", headline_metrics(summary["overall"]))
    games = config.games()
    for game in games if len(games) > 1 else []:
        row.update(metric_group(f"eval/{game.label}", headline_metrics(summary["per_env"][game.name])))
    return row


# ---------------------------------------------------------------------------------------------
# The run


def check_runnable(config: TrainConfig) -> None:
    """Raise ValueError or FileNotFoundError for a run that cannot start: a device torch cannot use, or a ``model``
    that is neither ``tiny`` nor a checkpoint. :func:`train` writes its run directory before it loads the model,
    so it checks this first."""
    torch_device(config.device)
    if config.model != "tiny":
        _given_checkpoint(config.model)


def train(config: TrainConfig) -> Path:
    """Run (or resume) a training run; return its directory."""
    check_runnable(config)
    info = init_distributed(config.device)
    try:
        with open_run_dir(config, info) as run_dir:  # locked for the whole run; config.yaml checked
            return _train(config, info, run_dir)
    finally:
        shutdown(info)


def _train(config: TrainConfig, info: DistInfo, run_dir: Path) -> Path:
    if info.is_main:
        initial_model(config, run_dir)
    barrier(info)
    model_path = initial_model(config, run_dir)  # built by rank 0 above; here only located
    tokenizer = load_tokenizer(model_path)
    ckpt = latest_checkpoint(run_dir) if config.resume else None
    critic = config.critic if config.uses_critic else "none"
    policy = load_policy(ckpt or model_path, critic, device=info.device,
                         critic_path=ckpt / "critic" if ckpt is not None and critic != "none" else None,
                         gradient_checkpointing=config.gradient_checkpointing)
    engine = open_rollout_engine(config, ckpt or model_path, policy.lm, info)
    reference = load_reference(model_path, device=info.device) if config.kl_coef > 0 else None
    optimizer = make_optimizer(policy, config)
    monitor = collapse_monitor(config)
    successes: list[float] = []  # training success per step, for target_success
    # rollouts waiting for their update under rollout_staleness: (step collected, batch tensors or None)
    pending: list[tuple[int, dict[str, torch.Tensor] | None]] = []
    start = 0
    if ckpt is not None:
        state = load_trainer_state(ckpt)
        optimizer.load_state_dict(state["optimizer"])
        set_rng_state(state["rng"])
        monitor.load_state_dict(state["extra"]["monitor"])
        successes = list(state["extra"]["successes"])
        pending = list(state["extra"].get("pending", []))
        start = int(state["step"])
        if info.is_main:
            print(f"resumed from {ckpt} at step {start}", flush=True)
    model: nn.Module = policy
    if info.distributed:
        model = nn.parallel.DistributedDataParallel(
            policy, device_ids=[info.local_rank] if info.device.type == "cuda" else None)
    log = MetricsLog(run_dir, start) if info.is_main else None

    try:
        for step in range(start, config.total_steps):
            t0, cpu0 = time.perf_counter(), time.process_time()
            policy.eval()
            if engine is not None:  # vLLM samples this step's rollouts with the actor's current weights
                engine.load_weights(policy.lm)
            sync_s = time.perf_counter() - t0
            batch = collect(policy.lm, tokenizer, config, step, info, engine=engine)
            # metrics (and saved rollouts) describe the policy's own first rollouts, so replays below
            # do not inflate success
            first = batch
            row: dict[str, Any] = {"step": step + 1, **rollout_metrics(first)}
            if config.collapse_signals_every and (step + 1) % config.collapse_signals_every == 0:
                row.update(reply_signals(policy.lm, tokenizer, first, config, info))
            if config.uses_reasoning_reward:  # the game's reward is rollout/mean_reward; this is what it gained
                row["rollout/reasoning_reward"] = float(np.mean([t.reasoning_reward for t in first.trajectories]))
            if config.hard_state_retries:
                batch, row["rollout/hard_states_rescued"] = retry_hard_states(policy.lm, tokenizer, config, step,
                                                                              info, batch, engine=engine)
            policy.train()
            t1 = time.perf_counter()

            kept = filter_groups(batch, config)
            row["rollout/kept_fraction"] = kept.kept_fraction
            row.update(game_metrics(first, config, kept))
            if info.is_main and config.save_rollouts:
                save_rollouts(first, kept.kept, config, step + 1, run_dir)
            train_batch = batch.select(kept.kept)
            data = train_batch.to_tensors(tokenizer.pad_token_id, config.reward_placement) \
                if train_batch.trajectories else None  # None: every group agreed, nothing to learn
            if data is not None and config.rollout_staleness:  # the ratio's reference: the policy that sampled
                forward_scores(policy, reference, data, config, info, scores=("old_logprobs",))
            pending.append((step, data))
            trained_step, data = pending.pop(0) if len(pending) > config.rollout_staleness else (step, None)
            update_tokens = 0
            if data is not None:
                remaining = ("old_values", "ref_logprobs") if config.rollout_staleness else SCORES
                forward_scores(policy, reference, data, config, info, scores=remaining)
                compute_advantages(data, config)
                stats = ppo_update(model, policy, optimizer, data, config, info,
                                   derived_seed(config.seed, trained_step, 3))
                row.update(metric_group("losses", {k: v for k, v in vars(stats).items() if k != "tokens"}))
                update_tokens = stats.tokens
            t2 = time.perf_counter()
            generated = sum(sum(t.response_tokens) for t in batch.trajectories)
            # CPU seconds (all threads) next to wall seconds: on a shared machine they barely move.
            timings = {"rollout_s": t1 - t0, "update_s": t2 - t1, "step_cpu_s": time.process_time() - cpu0,
                       "rollout_tokens_per_s": generated / max(t1 - t0, 1e-9),
                       "update_tokens_per_s": update_tokens / max(t2 - t1, 1e-9)}
            if engine is not None:
                timings["weight_sync_s"] = sync_s
            row.update(metric_group("time", timings))

            alerts = monitor.update(row)
            row["alerts"] = " | ".join(alerts)
            done = step + 1
            successes.append(row["rollout/success_rate"])
            stop_collapse = bool(alerts) and config.early_stop_on_collapse
            stop_target = (config.target_success is not None and len(successes) >= config.collapse_window
                           and min(successes[-config.collapse_window:]) >= config.target_success)
            last = done == config.total_steps or stop_collapse or stop_target
            if info.is_main and config.eval_every and (done % config.eval_every == 0 or last):
                row.update(evaluate(policy, tokenizer, config, done, run_dir))
            if info.is_main:
                log.log(row)
                if done % config.log_every == 0 or last:
                    print(_format_row(row), flush=True)
                for alert in alerts:
                    print(f"step {done}: COLLAPSE ALERT: {alert}", flush=True)
                if (config.plot_every and done % config.plot_every == 0) or last:
                    plot_metrics(log.rows, run_dir / "metrics.png", title=run_dir.name)
                if (config.save_every and done % config.save_every == 0) or last:
                    save_checkpoint(run_dir, done, policy, tokenizer, optimizer,
                                    {"monitor": monitor.state_dict(), "successes": successes, "pending": pending},
                                    keep=config.keep_checkpoints)
            barrier(info)
            if last:
                if info.is_main and (stop_collapse or stop_target):
                    print(f"stopped early at step {done}: {'collapse alert' if stop_collapse else 'target success'}",
                          flush=True)
                break
    finally:  # a crashed run must not leave the engine holding its memory
        if engine is not None:
            engine.close()
    return run_dir


def open_rollout_engine(
    config: TrainConfig, model_path: Path, lm: nn.Module, info: DistInfo,
) -> RolloutEngine | None:
    """What samples the rollouts: None for ``rollout_engine=hf`` (:func:`rollout` then calls
    ``lm.generate``), else an in-process vLLM engine started from ``model_path`` in ``lm``'s dtype,
    whose weights :func:`_train` replaces with the actor's before every step."""
    if config.rollout_engine == "hf":
        return None
    if info.distributed:
        raise ValueError("rollout_engine=vllm runs one vLLM engine inside the training process and supports a "
                         "single process only; under torchrun use rollout_engine=hf")
    return VLLMRolloutEngine(model_path, dtype=next(lm.parameters()).dtype, max_model_len=config.max_seq_len,
                             gpu_memory_utilization=config.vllm_gpu_memory_utilization,
                             enforce_eager=config.vllm_enforce_eager, seed=config.seed)


def collapse_monitor(config: TrainConfig) -> CollapseMonitor:
    """The monitor of the ``collapse_*`` settings: the signals with a nonzero ratio or factor."""
    drops = {"rollout/in_group_std": config.collapse_std_ratio, "rollout/reply_entropy": config.collapse_entropy_ratio,
             "rollout/reply_cond_entropy": config.collapse_cond_entropy_ratio,
             "rollout/reply_mi": config.collapse_mi_ratio}
    spikes = {"losses/grad_norm_actor": config.collapse_grad_spike,
              "losses/grad_norm_critic": config.collapse_critic_grad_spike}
    return CollapseMonitor(config.collapse_window, drops={k: v for k, v in drops.items() if v > 0},
                           spikes={k: v for k, v in spikes.items() if v > 0})


def make_optimizer(policy: ActorCritic, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW with the actor's and the critic's learning rates as two parameter groups."""
    groups = [{"params": policy.actor_parameters(), "lr": config.actor_lr}]
    if policy.value_head is not None:
        groups.append({"params": policy.critic_parameters(), "lr": config.critic_lr})
    return torch.optim.AdamW(groups, weight_decay=config.weight_decay)


def initial_model(config: TrainConfig, run_dir: Path) -> Path:
    """The checkpoint training starts from: ``config.model`` (``default``: the embedded model ``ragen-eval`` plays),
    or a tiny random model built in the run dir."""
    if config.model != "tiny":
        return _given_checkpoint(config.model)
    path = run_dir / "init_model"
    if not (path / "config.json").is_file():
        build_tiny_checkpoint(path, seed=config.seed, hidden_size=config.tiny_hidden_size,
                              num_layers=config.tiny_num_layers, num_heads=max(1, config.tiny_hidden_size // 64))
    return path


def _given_checkpoint(model: str) -> Path:
    path = Path(resolve_model_path(model))
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model {model!r} is not a transformers checkpoint directory "
                                "(no config.json); use a local path, model=default or model=tiny")
    return path


def _format_row(row: dict[str, Any]) -> str:
    keys = ("rollout/success_rate", "rollout/mean_reward", "rollout/in_group_std", "rollout/reply_mi",
            "rollout/kept_fraction",
            "losses/entropy", "losses/grad_norm_actor", "losses/clip_fraction", "losses/approx_kl",
            "losses/value_loss", "eval/success_rate", "time/rollout_s", "time/update_s")
    parts = [f"step {row['step']}"]
    parts += [f"{k}={row[k]:.4g}" for k in keys if isinstance(row.get(k), (int, float))]
    return " ".join(parts)
