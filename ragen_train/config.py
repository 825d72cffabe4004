"""The one training config: a flat dataclass, presets, YAML files and ``key=value`` overrides.

Resolution order (later wins): dataclass defaults -> the preset named by ``preset`` -> the YAML file
-> command-line ``key=value`` pairs. The preset only supplies defaults, so ``preset: starpo`` with
``kl_coef: 0.0`` in the same file keeps the explicit ``0.0``. Every run writes the resolved config
to ``<run_dir>/config.yaml`` (see :func:`save_config`).

Defaults marked "RAGEN" come from RAGEN's training config (``config/base.yaml`` and the verl PPO
trainer it extends) for real models; tiny models need larger learning rates (docs/train.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from ragen_envs.config_dicts import require_ints
from ragen_train.game_settings import check_game_settings

ADVANTAGE_ESTIMATORS = ("gae", "gae-turn", "grpo", "drgrpo")
CRITIC_MODES = ("separate", "shared", "none")
REWARD_PLACEMENTS = ("episode-end", "turn-end")
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean")
KL_TYPES = ("low_var_kl", "kl", "mse")
ROLLOUT_ENGINES = ("hf", "vllm")


@dataclass
class TrainConfig:
    """Everything one ``ragen-train`` run needs; every field has a one-line help string."""

    # --- run ---
    preset: str = field(default="starpo-s", metadata={"help": "starpo or starpo-s; supplies defaults (see PRESETS)"})
    run_name: str | None = field(default=None, metadata={"help": "run directory name; default {env}__{preset}__{seed}, so rerunning a command resumes its run"})
    output_dir: str = field(default="runs/train", metadata={"help": "parent directory of run directories"})
    seed: int = field(default=0, metadata={"help": "seeds rollout sampling, training seeds and init"})
    total_steps: int = field(default=200, metadata={"help": "training steps (one rollout + one update each); RAGEN: 200"})
    resume: bool = field(default=True, metadata={"help": "continue from the latest checkpoint in the run dir, if any"})
    allow_config_change: bool = field(default=False, metadata={"help": "let a rerun on an existing run dir change its config (the old config.yaml is kept beside it); otherwise it is refused"})
    device: str = field(default="cpu", metadata={"help": "torch device; with torchrun, cuda means cuda:LOCAL_RANK"})

    # --- model ---
    model: str = field(default="tiny", metadata={"help": "a transformers causal-LM path, or 'tiny' (built by ragen_train.tiny)"})
    tiny_hidden_size: int = field(default=128, metadata={"help": "hidden size when model=tiny"})
    tiny_num_layers: int = field(default=2, metadata={"help": "layers when model=tiny"})
    critic: str = field(default="separate", metadata={"help": "separate (own backbone, as RAGEN/verl), shared (value head on the actor), none"})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "trade compute for memory on real models"})

    # --- environment and rollout ---
    env: str = field(default="bandit", metadata={"help": "ragen_envs preset name, e.g. bandit, frozenlake, simple_sokoban"})
    env_config: dict[str, Any] = field(default_factory=dict, metadata={"help": "overrides of the game's config dataclass"})
    protocol: dict[str, Any] = field(default_factory=dict, metadata={"help": "overrides of ragen_envs.text.ProtocolConfig"})
    env_groups: int = field(default=8, metadata={"help": "P: initial states per step (RAGEN es_manager.train.env_groups=8)"})
    group_size: int = field(default=16, metadata={"help": "N: responses per initial state, sharing its seed (RAGEN group_size=16)"})
    temperature: float = field(default=1.0, metadata={"help": "rollout sampling temperature (RAGEN: 1.0); the update's log-probs use it too"})
    top_p: float = field(default=1.0, metadata={"help": "rollout nucleus sampling"})
    max_new_tokens: int = field(default=128, metadata={"help": "response tokens per turn"})
    max_seq_len: int = field(default=4096, metadata={"help": "whole multi-turn sequence cap; an episode that would pass it ends"})
    rollout_batch_size: int = field(default=64, metadata={"help": "sequences per generate() call"})
    rollout_engine: str = field(default="hf", metadata={"help": "hf (transformers generate, KV cache) or vllm (in-process vllm.LLM, actor weights synced every step; one process only)"})
    vllm_gpu_memory_utilization: float = field(default=0.3, metadata={"help": "rollout_engine=vllm: fraction of GPU memory (host memory on vLLM's CPU build) vLLM reserves for its weights and KV cache; training uses the rest"})
    vllm_enforce_eager: bool = field(default=True, metadata={"help": "rollout_engine=vllm: no CUDA graphs (faster start, less memory); false can speed up long GPU runs"})

    # --- advantages ---
    advantage_estimator: str = field(default="gae", metadata={"help": "gae | gae-turn | grpo | drgrpo (RAGEN default: gae)"})
    gamma: float = field(default=1.0, metadata={"help": "discount (RAGEN: 1.0)"})
    lam: float = field(default=1.0, metadata={"help": "GAE lambda (RAGEN: 1.0)"})
    whiten_advantages: bool = field(default=True, metadata={"help": "normalise GAE advantages over the batch's tokens (verl does)"})
    norm_adv_eps: float = field(default=1e-6, metadata={"help": "epsilon in GRPO's std normalisation (verl: 1e-6)"})
    reward_placement: str = field(default="episode-end", metadata={"help": "episode-end: the episode's return on its last sampled token (RAGEN default); turn-end: each turn's reward on that turn's last token"})
    reward_scale: float = field(default=1.0, metadata={"help": "multiplies every reward before advantages and value targets; <1 keeps large returns (Sokoban's +10) within reach of value_clip"})

    # --- filtering (StarPO-S) ---
    rollout_filter_ratio: float = field(default=0.25, metadata={"help": "fraction of groups kept, top by raw reward std (RAGEN: 0.25); 1.0 = no filter"})
    filter_drop_zero_spread: bool = field(default=False, metadata={"help": "drop kept groups whose rewards all agree, even if fewer than the ratio survive (RAGEN keeps the top fraction whatever: false)"})
    zero_spread_quota: float = field(default=0.0, metadata={"help": "extra fraction of groups kept among zero-spread ones (remedy: hardest states still train the critic)"})
    hard_state_retries: int = field(default=0, metadata={"help": "replay a group with no successful rollout up to this many times; the first replay with a success replaces it (remedy 2)"})

    # --- loss ---
    clip_ratio_low: float = field(default=0.2, metadata={"help": "PPO clip below 1 (RAGEN: 0.2)"})
    clip_ratio_high: float = field(default=0.28, metadata={"help": "PPO clip above 1, clip-higher (RAGEN StarPO-S: 0.28)"})
    loss_agg_mode: str = field(default="token-mean", metadata={"help": "token-mean | seq-mean-token-sum | seq-mean-token-mean (RAGEN: token-mean)"})
    entropy_coeff: float = field(default=0.001, metadata={"help": "entropy bonus (RAGEN: 0.001)"})
    kl_coef: float = field(default=0.0, metadata={"help": "KL loss to a frozen reference; 0 disables it (StarPO-S: 0, StarPO: 0.001)"})
    kl_type: str = field(default="low_var_kl", metadata={"help": "low_var_kl (k3) | kl (k1) | mse (k2) (verl: low_var_kl)"})
    value_clip: float = field(default=0.5, metadata={"help": "value-loss clip range (verl cliprange_value: 0.5)"})
    value_coef: float = field(default=1.0, metadata={"help": "weight of the value loss when critic=shared"})
    grad_clip: float = field(default=1.0, metadata={"help": "max grad norm, actor and critic separately (RAGEN: 1.0)"})
    actor_lr: float = field(default=1e-6, metadata={"help": "AdamW lr of the policy (RAGEN: 1e-6; tiny models: ~1e-4)"})
    critic_lr: float = field(default=1e-5, metadata={"help": "AdamW lr of the critic (RAGEN: 1e-5; tiny models: ~1e-3)"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (verl: 0.01)"})
    ppo_epochs: int = field(default=1, metadata={"help": "passes over each batch (RAGEN: 1)"})
    ppo_mini_batches: int = field(default=4, metadata={"help": "optimizer steps per epoch: the filtered batch is cut into this many mini-batches (RAGEN: 128 / 32 = 4), so StarPO and StarPO-S take the same number of steps"})
    ppo_mini_batch_size: int | None = field(default=None, metadata={"help": "sequences per optimizer step; when set it replaces ppo_mini_batches (the step count then depends on how many sequences the filter keeps)"})
    micro_batch_size: int = field(default=4, metadata={"help": "sequences per forward/backward (RAGEN: 4)"})

    # --- logging, evaluation, checkpoints, collapse alert ---
    log_every: int = field(default=1, metadata={"help": "print a metrics line every k steps"})
    plot_every: int = field(default=10, metadata={"help": "redraw metrics.png every k steps (0: only at the end)"})
    eval_every: int = field(default=0, metadata={"help": "evaluate on fixed val seeds every k steps (0: never)"})
    eval_episodes: int = field(default=32, metadata={"help": "validation episodes per evaluation"})
    eval_temperature: float = field(default=0.5, metadata={"help": "validation sampling temperature (ragen-eval's default 0.5; 0: greedy)"})
    save_every: int = field(default=50, metadata={"help": "checkpoint every k steps (and at the end); 0: only at the end"})
    keep_checkpoints: int = field(default=2, metadata={"help": "how many step checkpoints to keep"})
    collapse_window: int = field(default=5, metadata={"help": "steps that define the early reward-std level"})
    collapse_std_ratio: float = field(default=0.1, metadata={"help": "alert when in-group reward std < this fraction of its early level"})
    collapse_grad_spike: float = field(default=10.0, metadata={"help": "alert when grad norm > this times its running median"})
    early_stop_on_collapse: bool = field(default=False, metadata={"help": "stop the run at the first collapse alert"})
    target_success: float | None = field(default=None, metadata={"help": "stop once the step's mean success reaches this for `collapse_window` steps"})

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first field whose value is out of range or of the wrong kind."""
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        choices = {"advantage_estimator": ADVANTAGE_ESTIMATORS, "critic": CRITIC_MODES,
                   "reward_placement": REWARD_PLACEMENTS,
                   "loss_agg_mode": LOSS_AGG_MODES, "kl_type": KL_TYPES, "rollout_engine": ROLLOUT_ENGINES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        positive = ("total_steps", "env_groups", "group_size", "max_new_tokens", "max_seq_len", "rollout_batch_size",
                    "ppo_epochs", "ppo_mini_batches", "micro_batch_size", "tiny_hidden_size", "tiny_num_layers",
                    "eval_episodes", "collapse_window", "log_every", "keep_checkpoints")
        require_ints(self, positive)
        require_ints(self, ("plot_every", "eval_every", "save_every", "hard_state_retries"), minimum=0)
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
                     "top_p", "reward_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.clip_ratio_low >= 1.0:
            raise ValueError(f"clip_ratio_low must be < 1 (the ratio cannot go below 0), got {self.clip_ratio_low!r}")
        for name in ("temperature", "eval_temperature", "entropy_coeff", "kl_coef", "weight_decay", "value_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
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
        for name in ("env_config", "protocol"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name} must be a mapping, got {type(getattr(self, name)).__name__}")
        check_game_settings(self.env, self.env_config, self.protocol)

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
        """Plain dict of every field, as written to the run's config.yaml."""
        return dataclasses.asdict(self)


#: Named algorithm settings from RAGEN. StarPO: PPO with a symmetric clip, KL to a reference, no
#: filter. StarPO-S: variance filter keeping the top 25% groups, clip-higher, no KL.
PRESETS: dict[str, dict[str, Any]] = {
    "starpo": {"rollout_filter_ratio": 1.0, "clip_ratio_low": 0.2, "clip_ratio_high": 0.2, "kl_coef": 0.001},
    "starpo-s": {"rollout_filter_ratio": 0.25, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28, "kl_coef": 0.0},
}


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """Turn ``["a=1", "env_config.height=6"]`` into ``{"a": 1, "env_config": {"height": 6}}``.

    Values are parsed as YAML scalars/flow collections (``1e-4``, ``true``, ``null``, ``[1, 2]``);
    a dotted key sets one entry of a dict field.
    """
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"override {pair!r} is not key=value")
        key, raw = pair.split("=", 1)
        key = key.strip()
        if not key:
            raise ValueError(f"override {pair!r} has an empty key")
        value = yaml.safe_load(raw) if raw.strip() else ""
        head, _, rest = key.partition(".")
        if rest:
            out.setdefault(head, {})
            if not isinstance(out[head], dict):
                raise ValueError(f"override {pair!r}: {head} was already set to a non-mapping")
            out[head][rest] = value
        else:
            out[key] = value
    return out


def config_from_dict(values: Mapping[str, Any]) -> TrainConfig:
    """Build a config from explicit values: preset defaults first, then ``values`` (unknown keys are errors)."""
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
    preset = values.get("preset", TrainConfig.__dataclass_fields__["preset"].default)
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    merged: dict[str, Any] = {**PRESETS[preset]}
    for key, value in values.items():
        if isinstance(value, Mapping) and key in ("env_config", "protocol"):
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = value
    return TrainConfig(**_coerce(merged))


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Resolve a config from an optional YAML file plus ``key=value`` overrides (overrides win)."""
    import yaml

    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file {path} does not exist")
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"config file {path} must hold a mapping at the top level, got {type(loaded).__name__}")
        values.update(loaded)
    for key, value in parse_overrides(overrides).items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value
    return config_from_dict(values)


def save_config(config: TrainConfig, run_dir: str | Path) -> Path:
    """Write the resolved config to ``run_dir/config.yaml`` (loadable again with :func:`load_config`)."""
    import yaml

    out = Path(run_dir) / "config.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    return out


def config_help() -> str:
    """One line per field: name, default and help, for ``ragen-train --help-config``."""
    lines = []
    for f in fields(TrainConfig):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        lines.append(f"  {f.name} = {json.dumps(default)}  # {f.metadata.get('help', '')}")
    return "\n".join(lines)


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    """Convert YAML-typed values to the field types (``1`` -> ``1.0`` for floats); reject mismatches."""
    hints = get_type_hints(TrainConfig)
    out = {}
    for key, value in values.items():
        hint = hints[key]
        text = str(hint)
        if value is None:
            if "None" not in text:
                raise TypeError(f"{key} cannot be null")
        elif hint is float or text == "float | None":
            if isinstance(value, str):  # YAML 1.1 reads "1e-6" (no dot) as a string
                try:
                    value = float(value)
                except ValueError:
                    raise TypeError(f"{key} must be a number, got {value!r}") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{key} must be a number, got {value!r}")
            value = float(value)
        elif hint is int or text == "int | None":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{key} must be an int, got {value!r}")
        elif hint is bool:
            if not isinstance(value, bool):
                raise TypeError(f"{key} must be true or false, got {value!r}")
        elif hint is str or text == "str | None":
            if not isinstance(value, str):
                raise TypeError(f"{key} must be a string, got {value!r}")
        out[key] = value
    return out
