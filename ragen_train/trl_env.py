"""The games as a multi-turn environment for TRL's ``GRPOTrainer``, through its ``rollout_func``.

TRL (1.16) offers two multi-turn hooks: ``environment_factory`` (the model plays by *tool calls*, which
needs a tool-calling chat template and model) and ``rollout_func`` (the adapter generates the completions
itself). The text protocol is played by reply text (``<think>..</think><answer>..</answer>``), so this
adapter is a ``rollout_func``: it plays each prompt's episode to the end with the trainer's own model,
through :func:`ragen_train.rollout.rollout` (the token layout and loss mask of ``ragen-train``), and hands
TRL one token sequence per episode::

    prompt_ids     = chat template of the opening chat (system + first user turn), as TRL expects
    completion_ids = reply 1, env text of turn 2, reply 2, ...      env_mask: 1 on replies, 0 on env text

The episode's reward (turn rewards plus format penalties, exactly a :class:`ragen_envs.text.TextEpisode`'s
``total_reward``) reaches TRL as the extra field ``ragen_reward``, which :func:`episode_reward` (the reward
function to pass) returns. Each prompt row carries its level seed on its first message
(:data:`SEED_KEY`), because a ``rollout_func`` sees the prompts and nothing else of the dataset row.

Sampling follows the trainer's config: ``temperature``, ``top_p``, and ``max_completion_length`` as the
token limit of *each reply*. Generation runs ``model.generate`` (TRL's ``use_vllm`` is not used).
Install with ``pip install ragen-envs[trl]``; see docs/integrations.md and examples/trl_grpo_bandit.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ragen_envs.config_dicts import require_ints
from ragen_envs.seeding import as_seed
from ragen_envs.text import TextEpisode
from ragen_train.rollout import rollout, start_trajectory

if TYPE_CHECKING:
    from trl import GRPOTrainer

#: Key of the first prompt message that holds the episode's level seed (chat templates ignore it).
SEED_KEY = "ragen_seed"


def _opening_chat(prompt: Sequence[Mapping[str, Any]]) -> tuple[int, list[dict[str, str]]]:
    """(seed, the chat without the seed key) of one prompt made by :meth:`GameRollout.prompts`."""
    if not isinstance(prompt, Sequence) or not prompt or not isinstance(prompt[0], Mapping) \
            or prompt[0].get(SEED_KEY) is None:
        raise ValueError(f"each prompt must be a chat whose first message carries {SEED_KEY!r}; build the dataset "
                         "with GameRollout.prompts(seeds)")
    chat = [{"role": m["role"], "content": m["content"]} for m in prompt]
    return as_seed(prompt[0][SEED_KEY]), chat


def episode_reward(completions: list[Any], ragen_reward: list[float], **kwargs: Any) -> list[float]:
    """The reward function to give ``GRPOTrainer``: each episode's total reward from the game."""
    return [float(r) for r in ragen_reward]


def episode_success(completions: list[Any], ragen_success: list[bool], **kwargs: Any) -> list[float]:
    """Each episode's success as 1.0 or 0.0: give it weight 0 in ``reward_weights`` to log it untrained."""
    return [float(s) for s in ragen_success]


@dataclass
class GameRollout:
    """A ``rollout_func`` that plays one ragen game: ``GRPOTrainer(..., rollout_func=GameRollout("bandit"))``.

    ``protocol`` and ``env_config`` are those of :class:`ragen_envs.text.TextEpisode` (``context`` must
    stay ``"full"``: one token sequence holds the whole episode). ``max_seq_len`` bounds prompt plus
    completion; replies past it are played as empty, truncated turns.
    """

    env: str
    protocol: Mapping[str, Any] | None = None
    env_config: Mapping[str, Any] | None = None
    max_seq_len: int = 4096
    calls: int = field(default=0, init=False)
    """Rollouts made so far; with the trainer's seed it seeds each call's sampling."""

    def __post_init__(self) -> None:
        # Fail on a bad env, protocol, config or length now, not at the first training step.
        require_ints(self, ("max_seq_len",))
        TextEpisode(self.env, 0, self.protocol, self.env_config)
        if dict(self.protocol or {}).get("context", "full") != "full":
            raise ValueError("GameRollout needs the protocol's context='full': each episode is one token sequence")

    def prompts(self, seeds: Sequence[int]) -> list[dict[str, Any]]:
        """Dataset rows (``datasets.Dataset.from_list``), one per seed: ``{"prompt": opening chat}``."""
        rows = []
        for seed in seeds:
            chat = TextEpisode(self.env, seed, self.protocol, self.env_config).messages
            rows.append({"prompt": [{**chat[0], SEED_KEY: as_seed(seed)}, *chat[1:]]})
        return rows

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: GRPOTrainer) -> dict[str, list[Any]]:
        """Play one episode per prompt with ``trainer``'s model; TRL's ``rollout_func`` contract."""
        opened = [_opening_chat(prompt) for prompt in prompts]
        args, tokenizer = trainer.args, trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        # Every call samples afresh, and the same (trainer seed, process, call) samples the same replies.
        generation_seed = int(np.random.SeedSequence(
            [args.seed, trainer.accelerator.process_index, self.calls]).generate_state(1)[0])
        self.calls += 1
        # Sample in eval mode (no dropout, no gradient checkpointing), as TRL's own generation does.
        was_training = model.training
        model.eval()
        try:
            batch = rollout(model, tokenizer, self.env, [seed for seed, _ in opened], group_size=1,
                            protocol=dict(self.protocol or {}), env_config=self.env_config,
                            max_new_tokens=args.max_completion_length, max_seq_len=self.max_seq_len,
                            temperature=args.temperature, top_p=args.top_p, generation_seed=generation_seed)
        finally:
            model.train(was_training)
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "ragen_reward": [],
                                     "ragen_success": [], "ragen_record": []}
        for (_, chat), traj in zip(opened, batch.trajectories, strict=True):
            prompt_ids = start_trajectory(tokenizer, chat).input_ids
            if traj.input_ids[:len(prompt_ids)] != prompt_ids:
                raise ValueError(f"a prompt is not the opening chat of {self.env} with this protocol; build the "
                                 "dataset with this GameRollout's prompts()")
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(traj.input_ids[len(prompt_ids):])
            out["env_mask"].append(traj.loss_mask[len(prompt_ids):])
            out["ragen_reward"].append(traj.episode_reward)
            out["ragen_success"].append(traj.success)
            out["ragen_record"].append(traj.record)
        # No sampling log-probabilities: without vLLM, TRL recomputes them from the model it trains.
        return {**out, "logprobs": None}
