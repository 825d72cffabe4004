"""The one training config: a flat dataclass, presets, YAML files and ``key=value`` overrides.

Resolution order (later wins): dataclass defaults -> the preset named by ``preset`` -> the YAML file
-> command-line ``key=value`` pairs (the grammar of :mod:`ragen_envs.overrides`). The preset only supplies defaults, so ``preset: starpo`` with
``kl_coef: 0.0`` in the same file keeps the explicit ``0.0``. Every run writes the resolved config
to ``<run_dir>/config.yaml`` (see :func:`save_config`).

Defaults marked "RAGEN" come from RAGEN's training config (``config/base.yaml`` and the verl PPO
trainer it extends) for real models; tiny models need larger learning rates (docs/train.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragen_envs import get_preset
from ragen_envs.config_dicts import coerce_config, config_from_dict, non_default_fields, require_ints
from ragen_envs.overrides import merge_values, parse_overrides
from ragen_envs.text import ProtocolConfig
from ragen_eval.run_dir import check_run_name
from ragen_train.filtering import FILTER_STRATEGIES
from ragen_train.game_settings import check_game_settings

ADVANTAGE_ESTIMATORS = ("gae", "gae-turn", "grpo", "drgrpo")
CRITIC_MODES = ("separate", "shared", "none")
REWARD_PLACEMENTS = ("episode-end", "turn-end")
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")
KL_TYPES = ("low_var_kl", "kl", "mse")
ROLLOUT_ENGINES = ("hf", "vllm")
FILTER_SCOPES = ("per_game", "pooled")


@dataclass(frozen=True)
class MixtureGame:
    """One game of a step's batch: its preset name, its groups per step and its config overrides."""

    name: str
    groups: int
    env_config: dict[str, Any]

    @property
    def label(self) -> str:
        """The name in per-game metrics (``rollout/<label>/...``): the preset's own name."""
        try:
            return get_preset(self.name).name
        except ValueError:  # a Gymnasium id, not a preset
            return self.name


@dataclass
class TrainConfig:
    """Everything one ``ragen-train`` run needs; every field has a one-line help string (its attribute docstring)."""

    # --- run ---
    preset: str = "starpo-s"
    """starpo or starpo-s; supplies defaults (see PRESETS)"""
    run_name: str | None = None
    """run directory name; default {env}__{preset}__{seed}, so rerunning a command resumes its run"""
    output_dir: str = "runs/train"
    """parent directory of run directories"""
    seed: int = 0
    """seeds rollout sampling, training seeds and init"""
    total_steps: int = 200
    """training steps (one rollout + one update each); RAGEN: 200"""
    resume: bool = True
    """continue from the latest checkpoint in the run dir, if any"""
    allow_config_change: bool = False
    """let a rerun on an existing run dir change its config (the old config.yaml is kept beside it); otherwise it is refused"""
    device: str = "cpu"
    """torch device; with torchrun, cuda means cuda:LOCAL_RANK"""

    # --- model ---
    model: str = "tiny"
    """a transformers causal-LM path, 'default' (the embedded model ragen-eval plays) or 'tiny' (built by
    ragen_train.tiny)"""
    tiny_hidden_size: int = 128
    """hidden size when model=tiny"""
    tiny_num_layers: int = 2
    """layers when model=tiny"""
    critic: str = "separate"
    """separate (own backbone, as RAGEN/verl), shared (value head on the actor), none"""
    gradient_checkpointing: bool = False
    """trade compute for memory on real models"""

    # --- environment and rollout ---
    env: str | list[Any] = "bandit"
    """ragen_envs preset name, e.g. bandit, frozenlake, simple_sokoban; or a mixture, a list of names or {name, groups, env_config} entries, each game playing its own groups every step (groups default: env_groups)"""
    env_config: dict[str, Any] = field(default_factory=dict)
    """overrides of the game's config dataclass (one game; a mixture entry carries its own)"""
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    """the text protocol (ragen_envs.text.ProtocolConfig); budgets left null come from the game; config.yaml stores the fields that differ from the defaults"""
    env_groups: int = 8
    """P: initial states per step (RAGEN es_manager.train.env_groups=8); in a mixture, the groups of an entry that gives none"""
    group_size: int = 16
    """N: responses per initial state, sharing its seed (RAGEN group_size=16)"""
    temperature: float = 1.0
    """rollout sampling temperature (RAGEN: 1.0); the update's log-probs use it too"""
    top_p: float = 1.0
    """rollout nucleus sampling"""
    max_new_tokens: int = 128
    """response tokens per turn"""
    max_seq_len: int = 4096
    """whole multi-turn sequence cap; an episode that would pass it ends"""
    rollout_batch_size: int = 64
    """sequences per generate() call"""
    rollout_engine: str = "hf"
    """hf (transformers generate, KV cache) or vllm (in-process vllm.LLM, actor weights synced every step; one process only)"""
    vllm_gpu_memory_utilization: float = 0.3
    """rollout_engine=vllm: fraction of GPU memory (host memory on vLLM's CPU build) vLLM reserves for its weights and KV cache; training uses the rest"""
    vllm_enforce_eager: bool = True
    """rollout_engine=vllm: no CUDA graphs (faster start, less memory); false can speed up long GPU runs"""

    # --- advantages ---
    advantage_estimator: str = "gae"
    """gae | gae-turn | grpo | drgrpo (RAGEN default: gae)"""
    gamma: float = 1.0
    """discount (RAGEN: 1.0)"""
    lam: float = 1.0
    """GAE lambda (RAGEN: 1.0)"""
    whiten_advantages: bool = True
    """normalise GAE advantages over the batch's tokens (verl does)"""
    norm_adv_eps: float = 1e-6
    """epsilon in GRPO's std normalisation (verl: 1e-6)"""
    reward_placement: str = "episode-end"
    """episode-end: the episode's return on its last sampled token (RAGEN default); turn-end: each turn's reward on that turn's last token"""
    reward_scale: float = 1.0
    """multiplies every reward before advantages and value targets; <1 keeps large returns (Sokoban's +10) within reach of value_clip"""

    # --- reasoning reward (opt-in; ragen_train.reasoning_reward) ---
    reasoning_reward_format: float = 0.0
    """added to a turn's reward when its reply is well formed and its <think> is not empty; 0: off"""
    reasoning_reward_consistency: float = 0.0
    """adds this x (true - false) / checkable claims of a turn's thought, as ragen_eval.consistency checks them; 0: off"""

    # --- filtering (StarPO-S) ---
    rollout_filter_ratio: float = 0.25
    """fraction of groups kept, top by raw reward std (RAGEN: 0.25); 1.0 = no filter"""
    filter_drop_zero_spread: bool = False
    """drop kept groups whose rewards all agree, even if fewer than the ratio survive (RAGEN keeps the top fraction whatever: false)"""
    zero_spread_quota: float = 0.0
    """extra fraction of groups kept among zero-spread ones (remedy: hardest states still train the critic)"""
    hard_state_retries: int = 0
    """replay a group with no successful rollout up to this many times; the first replay with a success replaces it (remedy 2)"""

    # --- filter strategies and collapse signals ---
    rollout_filter_strategy: str = "top_k"
    """top_k: keep rollout_filter_ratio of the groups, largest raw reward std first (RAGEN); top_p: the fewest groups, largest std first, whose stds sum to rollout_filter_top_p of all groups'; min_p: the groups whose std >= rollout_filter_min_p x the largest"""
    rollout_filter_top_p: float = 0.9
    """rollout_filter_strategy=top_p: share of the summed in-group reward std that the kept groups hold"""
    rollout_filter_min_p: float = 0.5
    """rollout_filter_strategy=min_p: keep the groups whose in-group reward std >= this x the largest"""
    collapse_signals_every: int = 1
    """log rollout/reply_entropy, reply_cond_entropy and reply_mi (first-turn replies vs prompts, ragen_train.signals) every k steps; 0: never"""
    collapse_signals_replies: int = 4
    """replies per group (its first members) in the reply signals; each is scored under every group's prompt, P x this x P sequences"""
    collapse_entropy_ratio: float = 0.0
    """alert when rollout/reply_entropy, averaged over the last collapse_window steps, < this x its early level; 0: off"""
    collapse_cond_entropy_ratio: float = 0.0
    """alert when rollout/reply_cond_entropy (entropy collapse) falls below this x its early level; 0: off"""
    collapse_mi_ratio: float = 0.0
    """alert when rollout/reply_mi (template collapse) falls below this x its early level; 0: off"""
    collapse_critic_grad_spike: float = 0.0
    """alert when the critic's grad norm > this x the median of its earlier ones; 0: off"""
    rollout_filter_scope: str = "per_game"
    """mixtures: per_game filters each game's groups apart (raw reward spreads are in each game's own units; every game keeps its share), pooled ranks all groups together"""
    rollout_staleness: int = 0
    """k: each update trains on the rollouts collected k steps earlier, by the policy of then, with the PPO ratio (and its clip) against that policy; the first k steps only collect; 0: on-policy"""

    # --- loss ---
    clip_ratio_low: float = 0.2
    """PPO clip below 1 (RAGEN: 0.2)"""
    clip_ratio_high: float = 0.28
    """PPO clip above 1, clip-higher (RAGEN StarPO-S: 0.28)"""
    loss_agg_mode: str = "token-mean"
    """token-mean | seq-mean-token-sum | seq-mean-token-mean (RAGEN: token-mean)"""
    entropy_coeff: float = 0.001
    """entropy bonus (RAGEN: 0.001)"""
    kl_coef: float = 0.0
    """KL loss to a frozen reference; 0 disables it (StarPO-S: 0, StarPO: 0.001)"""
    kl_type: str = "low_var_kl"
    """low_var_kl (k3) | kl (k1) | mse (k2) (verl: low_var_kl)"""
    value_clip: float = 0.5
    """value-loss clip range (verl cliprange_value: 0.5)"""
    value_coef: float = 1.0
    """weight of the value loss when critic=shared"""
    grad_clip: float = 1.0
    """max grad norm, actor and critic separately (RAGEN: 1.0)"""
    actor_lr: float = 1e-6
    """AdamW lr of the policy (RAGEN: 1e-6; tiny models: ~1e-4)"""
    critic_lr: float = 1e-5
    """AdamW lr of the critic (RAGEN: 1e-5; tiny models: ~1e-3)"""
    weight_decay: float = 0.01
    """AdamW weight decay (verl: 0.01)"""
    ppo_epochs: int = 1
    """passes over each batch (RAGEN: 1)"""
    ppo_mini_batches: int = 4
    """optimizer steps per epoch: the filtered batch is cut into this many mini-batches (RAGEN: 128 / 32 = 4), so StarPO and StarPO-S take the same number of steps"""
    ppo_mini_batch_size: int | None = None
    """sequences per optimizer step; when set it replaces ppo_mini_batches (the step count then depends on how many sequences the filter keeps)"""
    micro_batch_size: int = 4
    """sequences per forward/backward (RAGEN: 4)"""

    # --- logging, evaluation, checkpoints, collapse alert ---
    log_every: int = 1
    """print a metrics line every k steps"""
    plot_every: int = 10
    """redraw metrics.png every k steps (0: only at the end)"""
    eval_every: int = 0
    """evaluate on fixed val seeds every k steps (0: never)"""
    eval_episodes: int = 32
    """validation episodes per evaluation"""
    eval_temperature: float = 0.5
    """validation sampling temperature (ragen-eval's default 0.5; 0: greedy)"""
    save_rollouts: bool = False
    """write each step's rollouts to rollouts/step_N/, a directory `ragen-eval show` opens"""
    save_every: int = 50
    """checkpoint every k steps (and at the end); 0: only at the end"""
    keep_checkpoints: int = 2
    """how many step checkpoints to keep"""
    collapse_window: int = 5
    """steps that define the early reward-std level"""
    collapse_std_ratio: float = 0.1
    """alert when in-group reward std < this fraction of its early level; 0: off"""
    collapse_grad_spike: float = 10.0
    """alert when the actor's grad norm > this times its running median; 0: off"""
    early_stop_on_collapse: bool = False
    """stop the run at the first collapse alert"""
    target_success: float | None = None
    """stop once the step's mean success reaches this for `collapse_window` steps"""

    def __post_init__(self) -> None:
        try:  # a dict of protocol fields, as TrainConfig(protocol={"max_turns": 3}) gives
            self.protocol = coerce_config(ProtocolConfig, self.protocol)
        except (ValueError, TypeError) as err:
            raise type(err)(f"protocol: {err}") from None
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first field whose value is out of range or of the wrong kind."""
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        if self.run_name is not None:
            check_run_name(self.run_name, "run_name", "output_dir")  # the rule of ragen-eval --run-name
        choices = {"advantage_estimator": ADVANTAGE_ESTIMATORS, "critic": CRITIC_MODES,
                   "reward_placement": REWARD_PLACEMENTS,
                   "loss_agg_mode": LOSS_AGG_MODES, "kl_type": KL_TYPES, "rollout_engine": ROLLOUT_ENGINES,
                   "rollout_filter_strategy": FILTER_STRATEGIES, "rollout_filter_scope": FILTER_SCOPES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        positive = ("total_steps", "env_groups", "group_size", "max_new_tokens", "max_seq_len", "rollout_batch_size",
                    "ppo_epochs", "ppo_mini_batches", "micro_batch_size", "tiny_hidden_size", "tiny_num_layers",
                    "eval_episodes", "collapse_window", "log_every", "keep_checkpoints", "collapse_signals_replies")
        require_ints(self, positive)
        require_ints(self, ("plot_every", "eval_every", "save_every", "hard_state_retries", "collapse_signals_every",
                            "rollout_staleness"), minimum=0)
        if not 0.0 < self.rollout_filter_top_p <= 1.0:
            raise ValueError(f"rollout_filter_top_p must be in (0, 1], got {self.rollout_filter_top_p!r}")
        if not 0.0 <= self.rollout_filter_min_p <= 1.0:
            raise ValueError(f"rollout_filter_min_p must be in [0, 1], got {self.rollout_filter_min_p!r}")
        # Each range is checked as "inside", so nan (which fails every comparison) is refused too.
        for name in ("collapse_std_ratio", "collapse_entropy_ratio", "collapse_cond_entropy_ratio", "collapse_mi_ratio"):
            if not 0 <= getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0 (0: off), got {getattr(self, name)!r}")
        for name in ("collapse_grad_spike", "collapse_critic_grad_spike"):
            if getattr(self, name) != 0 and not 1 < getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a finite number > 1 (0: off), got {getattr(self, name)!r}")
        if not 0.0 < self.rollout_filter_ratio <= 1.0:
            raise ValueError(f"rollout_filter_ratio must be in (0, 1], got {self.rollout_filter_ratio!r}")
        if not 0.0 < self.vllm_gpu_memory_utilization <= 1.0:
            raise ValueError("vllm_gpu_memory_utilization must be a fraction in (0, 1], got "
                             f"{self.vllm_gpu_memory_utilization!r}")
        if not 0.0 <= self.zero_spread_quota <= 1.0:
            raise ValueError(f"zero_spread_quota must be in [0, 1], got {self.zero_spread_quota!r}")
        for name in ("gamma", "lam"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        for name in ("clip_ratio_low", "clip_ratio_high", "value_clip", "grad_clip", "actor_lr", "critic_lr",
                     "reward_scale", "norm_adv_eps"):
            if not 0 < getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a finite number > 0, got {getattr(self, name)!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.clip_ratio_low >= 1.0:
            raise ValueError(f"clip_ratio_low must be < 1 (the ratio cannot go below 0), got {self.clip_ratio_low!r}")
        for name in ("temperature", "eval_temperature", "entropy_coeff", "kl_coef", "weight_decay", "value_coef"):
            if not 0 <= getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        if self.temperature == 0:
            raise ValueError("temperature must be > 0 for rollouts: PPO needs sampled, not greedy, responses")
        if self.advantage_estimator in ("gae", "gae-turn") and self.critic == "none":
            raise ValueError(f"advantage_estimator={self.advantage_estimator!r} needs a critic; set critic=separate "
                             "or critic=shared, or use grpo/drgrpo")
        if self.group_size < 2 and self.advantage_estimator in ("grpo", "drgrpo"):
            raise ValueError("GRPO-style advantages need group_size >= 2")
        if self.ppo_mini_batch_size is not None:
            require_ints(self, ("ppo_mini_batch_size",))
        if self.ppo_mini_batch_size is not None and self.micro_batch_size > self.ppo_mini_batch_size:
            raise ValueError(f"micro_batch_size ({self.micro_batch_size}) must be <= ppo_mini_batch_size "
                             f"({self.ppo_mini_batch_size})")
        if self.target_success is not None and not 0.0 < self.target_success <= 1.0:
            raise ValueError(f"target_success must be in (0, 1] or null, got {self.target_success!r}")
        if not isinstance(self.env_config, dict):
            raise TypeError(f"env_config must be a mapping, got {type(self.env_config).__name__}")
        for name in ("reasoning_reward_format", "reasoning_reward_consistency"):
            if not 0 <= getattr(self, name) < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0 (0 turns the term off), "
                                 f"got {getattr(self, name)!r}")
        if self.protocol.context != "full":
            raise ValueError(f"protocol.context must be 'full' for training (every turn extends one token "
                             f"sequence), got {self.protocol.context!r}")
        for game in self.games():
            check_game_settings(game.name, game.env_config, self.protocol)

    def games(self) -> list[MixtureGame]:
        """The games of every step's batch, in group order (one for ``env: NAME``); ValueError or
        TypeError naming the mixture entry at fault."""
        if isinstance(self.env, str):
            return [MixtureGame(self.env, self.env_groups, dict(self.env_config))]
        if not isinstance(self.env, list) or not self.env:
            raise TypeError(f"env must be a preset name or a non-empty list of mixture entries, got {self.env!r}")
        if self.env_config:
            raise ValueError("env_config sets one game's config; in a mixture give each entry its own "
                             "(env: [{name: NAME, env_config: {...}}, ...])")
        games = []
        for i, entry in enumerate(self.env):
            entry = {"name": entry} if isinstance(entry, str) else entry
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise TypeError(f"env[{i}] must be a preset name or a mapping with a name, got {entry!r}")
            unknown = sorted(set(entry) - {"name", "groups", "env_config"})
            if unknown:
                raise ValueError(f"env[{i}]: unknown mixture keys {unknown}; known: ['env_config', 'groups', 'name']")
            groups, env_config = entry.get("groups", self.env_groups), entry.get("env_config") or {}
            if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
                raise ValueError(f"env[{i}].groups must be a positive int, got {groups!r}")
            if not isinstance(env_config, Mapping):
                raise TypeError(f"env[{i}].env_config must be a mapping, got {env_config!r}")
            games.append(MixtureGame(entry["name"], groups, dict(env_config)))
        labels = [game.label for game in games]
        if len(set(labels)) < len(labels):
            raise ValueError(f"a mixture lists each game once, got {labels}")
        return games

    @property
    def num_groups(self) -> int:
        """P: the initial states of one step, over every game of the mixture."""
        return sum(game.groups for game in self.games())

    @property
    def uses_reasoning_reward(self) -> bool:
        """Whether either reasoning-reward term is on (the reward is then more than the game's)."""
        return bool(self.reasoning_reward_format or self.reasoning_reward_consistency)

    @property
    def uses_critic(self) -> bool:
        """Whether this run trains a value function (GAE needs one; GRPO-style estimators do not)."""
        return self.advantage_estimator in ("gae", "gae-turn")

    def mini_batch_sizes(self, batch: int) -> list[int]:
        """Sizes of the consecutive mini-batches (one optimizer step each) that one epoch over a filtered
        batch of ``batch`` sequences is cut into: chunks of ``ppo_mini_batch_size`` if set, else
        ``ppo_mini_batches`` near-equal parts (fewer only when there are fewer sequences)."""
        if batch < 1:
            return []
        if self.ppo_mini_batch_size is not None:
            full, rest = divmod(batch, self.ppo_mini_batch_size)
            return [self.ppo_mini_batch_size] * full + ([rest] if rest else [])
        parts = min(self.ppo_mini_batches, batch)
        base, extra = divmod(batch, parts)
        return [base + 1] * extra + [base] * (parts - extra)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field, as written to the run's config.yaml (``protocol``: its non-default fields)."""
        return {**dataclasses.asdict(self), "protocol": non_default_fields(self.protocol)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """Build a config from explicit values over the defaults of the preset they name.

        Read by :func:`ragen_envs.config_dicts.config_from_dict`: unknown keys and values of the
        wrong type are errors naming the field.
        """
        preset = values.get("preset", cls.preset)
        if not isinstance(preset, str) or preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
        return config_from_dict(cls, {**PRESETS[preset], **values})


#: Named algorithm settings from RAGEN. StarPO: PPO with a symmetric clip, KL to a reference, no
#: filter. StarPO-S: variance filter keeping the top 25% groups, clip-higher, no KL.
PRESETS: dict[str, dict[str, Any]] = {
    "starpo": {"rollout_filter_ratio": 1.0, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "kl_coef": 0.001},
    "starpo-s": {"rollout_filter_ratio": 0.25, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "kl_coef": 0.0},
}


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Resolve a config from an optional YAML file plus ``key=value`` overrides (overrides win).

    Overrides follow the one grammar of :func:`ragen_envs.overrides.parse_overrides` (dotted keys reach
    into ``protocol`` and ``env_config``, values are YAML scalars).
    """
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file {path} is not a file" if path.exists()
                                    else f"config file {path} does not exist")
        values.update(read_yaml_mapping(path, "config file"))
    return TrainConfig.from_dict(merge_values(values, parse_overrides(overrides)))


def read_yaml_mapping(path: Path, what: str) -> dict[str, Any]:
    """The mapping a YAML file holds (empty: ``{}``); a ValueError naming ``what`` and ``path`` if it is not valid
    YAML or not a mapping."""
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:  # told in one line: PyYAML's own message spans several, with a caret
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ValueError(f"{what} {path} is not valid YAML ({getattr(error, 'problem', None) or error}{where})") \
            from None
    if not isinstance(loaded, dict):
        raise ValueError(f"{what} {path} must hold a mapping at the top level, got {type(loaded).__name__}")
    return loaded


def save_config(config: TrainConfig, run_dir: str | Path) -> Path:
    """Write the resolved config to ``run_dir/config.yaml`` (loadable again with :func:`load_config`)."""
    import yaml

    out = Path(run_dir) / "config.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    return out
