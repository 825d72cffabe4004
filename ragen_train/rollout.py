"""Rollouts: P initial states x N responses, played through the text protocol, as token sequences.

Each episode becomes one token sequence built turn by turn:

    [prompt of turn 1] [response 1] [template end + user turn 2 + assistant header] [response 2] ...
     mask 0             mask 1       mask 0                                          mask 1

The loss mask is made here, once, and is 1 exactly on the tokens the model sampled (including the
stop token it sampled, so it learns to stop). The environment's part of the sequence comes from the
tokenizer's own chat template: the chat is rendered with a placeholder where the newest assistant
reply goes, and the text after the placeholder is the environment's next contribution. Nothing here
knows any model family's markers. The model generates from exactly the ids stored, so the
log-probabilities recomputed at training time are those of the sampled text. :func:`append_turn`
is the one place a turn's layout is decided; SFT (:func:`ragen_train.sft.tokenize_chat`) calls it
too, so demonstrations are laid out exactly as rollouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from ragen_envs.config_dicts import coerce_config
from ragen_envs.text import EpisodeBatch, ProtocolConfig
from ragen_train.config import REWARD_PLACEMENTS
from ragen_train.reasoning_reward import reasoning_terms

#: Stands in for the assistant's reply while rendering the chat template; split on it.
_SLOT = "\u2063RAGEN_REPLY_SLOT\u2063"


@dataclass
class Trajectory:
    """One episode as one token sequence, with its loss mask and per-token rewards."""

    group: int
    input_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)  # 1 on model-sampled tokens
    turn_ids: list[int] = field(default_factory=list)  # turn index on sampled tokens, -1 elsewhere
    rewards: list[float] = field(default_factory=list)  # turn reward + penalty on the turn's last sampled token
    response_tokens: list[int] = field(default_factory=list)  # sampled tokens per turn
    overflowed: bool = False  # ran out of max_seq_len; later turns were played with empty replies
    record: dict[str, Any] = field(default_factory=dict)  # the episode record (ragen_envs.text)
    reasoning_reward: float = 0.0  # the reasoning reward's terms summed over turns (in ``rewards`` too)
    unplaced_reward: float = 0.0  # rewards of turns played before any token was sampled (0-token replies)

    @property
    def episode_reward(self) -> float:
        """Sum of turn rewards and penalties (the record's ``total_reward``) plus the reasoning reward."""
        if "total_reward" in self.record:
            return float(self.record["total_reward"]) + self.reasoning_reward
        return float(sum(self.rewards))

    @property
    def success(self) -> bool:
        """Whether the game was won."""
        return bool(self.record.get("success", False))

    def _append(self, ids: Sequence[int], turn: int | None) -> None:
        self.input_ids.extend(ids)
        self.loss_mask.extend([0 if turn is None else 1] * len(ids))
        self.turn_ids.extend([-1 if turn is None else turn] * len(ids))
        self.rewards.extend([0.0] * len(ids))

    def _add_reward(self, reward: float) -> None:
        """Put a turn's reward on the last sampled token so far (GAE reads rewards there).

        Before any token was sampled (an engine answered a turn with no tokens, played as an empty
        reply) the reward has no token to sit on: it is kept and placed with the next turn's reward.
        """
        last = max((i for i, m in enumerate(self.loss_mask) if m), default=None)
        if last is None:
            self.unplaced_reward += reward
            return
        self.rewards[last] += reward + self.unplaced_reward
        self.unplaced_reward = 0.0


@dataclass
class RolloutBatch:
    """Trajectories of ``P`` groups x ``N`` members, in group-major order."""

    trajectories: list[Trajectory]
    num_groups: int
    group_size: int

    def group_rewards(self) -> np.ndarray:
        """Raw episode rewards as a ``[P, N]`` array (the filter's input)."""
        out = np.zeros((self.num_groups, self.group_size))
        counts = np.zeros(self.num_groups, dtype=int)
        for traj in self.trajectories:
            out[traj.group, counts[traj.group]] = traj.episode_reward
            counts[traj.group] += 1
        return out

    def select(self, groups: Sequence[int]) -> RolloutBatch:
        """The trajectories of the given groups only (group numbers unchanged)."""
        keep = set(groups)
        return RolloutBatch([t for t in self.trajectories if t.group in keep], self.num_groups, self.group_size)

    def to_tensors(self, pad_id: int, reward_placement: str = "episode-end") -> dict[str, torch.Tensor]:
        """Right-padded ``[B, T]`` tensors: input_ids, attention_mask, loss_mask, turn_ids, rewards; plus
        ``[B]`` scores (episode rewards) and group ids, and ``[B, K]`` turn rewards and turn mask.

        ``reward_placement`` decides where the rewards sit in ``rewards`` and ``turn_rewards``:
        ``episode-end`` (RAGEN's default) puts the episode's whole return on its last sampled token
        and last turn; ``turn-end`` puts each turn's reward (and penalty) on that turn's last
        sampled token, as the trajectory stores it.
        """
        if reward_placement not in REWARD_PLACEMENTS:
            raise ValueError(f"reward_placement must be one of {list(REWARD_PLACEMENTS)}, got {reward_placement!r}")
        if not self.trajectories:
            raise ValueError("no trajectories to collate (did the filter drop every group?)")
        width = max(len(t.input_ids) for t in self.trajectories)
        turns = max(1, max(len(t.response_tokens) for t in self.trajectories))
        b = len(self.trajectories)
        out = {
            "input_ids": torch.full((b, width), pad_id, dtype=torch.long),
            "attention_mask": torch.zeros((b, width), dtype=torch.long),
            "loss_mask": torch.zeros((b, width), dtype=torch.long),
            "turn_ids": torch.full((b, width), -1, dtype=torch.long),
            "rewards": torch.zeros((b, width)),
            "turn_rewards": torch.zeros((b, turns)),
            "turn_mask": torch.zeros((b, turns), dtype=torch.long),
            "scores": torch.zeros(b, dtype=torch.float64),
            "group_ids": torch.zeros(b, dtype=torch.long),
        }
        for i, t in enumerate(self.trajectories):
            n = len(t.input_ids)
            out["input_ids"][i, :n] = torch.tensor(t.input_ids)
            out["attention_mask"][i, :n] = 1
            out["loss_mask"][i, :n] = torch.tensor(t.loss_mask)
            out["turn_ids"][i, :n] = torch.tensor(t.turn_ids)
            out["scores"][i] = t.episode_reward
            out["group_ids"][i] = t.group
            for k in range(len(t.response_tokens)):
                out["turn_rewards"][i, k] = sum(r for r, tid in zip(t.rewards, t.turn_ids) if tid == k)
                out["turn_mask"][i, k] = 1
            if reward_placement == "turn-end":
                out["rewards"][i, :n] = torch.tensor(t.rewards)
            else:
                last = max((j for j, m in enumerate(t.loss_mask) if m), default=None)
                out["turn_rewards"][i] = 0.0
                if last is not None:  # a trajectory that sampled no token has no token to credit
                    out["rewards"][i, last] = sum(t.rewards)
                    out["turn_rewards"][i, t.turn_ids[last]] = sum(t.rewards)  # the turn of that token
        return out


def render_chat(tokenizer: Any, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """The chat as text through the tokenizer's own template."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """Token ids of template text; the template already placed any BOS, so none is added."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def env_turn_text(tokenizer: Any, before: list[dict[str, str]], after: list[dict[str, str]]) -> str:
    """Text the chat template puts after the newest assistant reply: its end marker, the next user
    message and the next generation prompt.

    ``before`` is the chat the reply answered (ending with a user message); ``after`` is the chat
    now (``before`` + the reply + the next user message). Raises ValueError when the template does
    not render ``after`` as an extension of ``before`` (e.g. it rewrites earlier turns), because
    then no single token sequence can hold the whole episode.
    """
    n = len(before)
    if after[:n] != before or len(after) < n + 1 or after[n].get("role") != "assistant":
        raise ValueError("the episode's new chat does not extend the previous one by an assistant reply "
                         "(use the protocol's context='full' for training)")
    slotted = [*before, {"role": "assistant", "content": _SLOT}, *after[n + 1:]]
    text = render_chat(tokenizer, slotted, add_generation_prompt=True)
    head, sep, tail = text.partition(_SLOT)
    if not sep:
        raise ValueError("the chat template dropped the assistant reply; cannot locate the response in the chat")
    if head != render_chat(tokenizer, before, add_generation_prompt=True):
        raise ValueError("the chat template renders a conversation differently once it grows (the generation "
                         "prompt is not a prefix of the rendered reply); multi-turn training needs a "
                         "prefix-stable template")
    return tail


def stop_token_ids(tokenizer: Any, model: Any) -> list[int]:
    """Every id that ends a reply: the tokenizer's EOS and the model's generation-config EOS list."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(int(i) for i in gen_eos)
    if not ids:
        raise ValueError("neither the tokenizer nor the model defines an EOS token; replies could never stop")
    return sorted(ids)


def append_turn(
    traj: Trajectory,
    tokenizer: Any,
    reply: Sequence[int],
    after: str,
    *,
    turn: int,
    reward: float,
    stop_ids: Sequence[int],
    add_stop: bool = False,
    final: bool = False,
    max_seq_len: int | None = None,
) -> None:
    """Lay out one assistant turn in ``traj``: the reply (mask 1, the turn's reward on its last token),
    then, unless ``final``, the environment's text up to the next generation header (mask 0).

    The single place where the token layout of a turn is decided; rollouts and SFT both call it.
    ``after`` is the text the chat template puts after the reply: its end marker, then the next
    user message and generation header (:func:`env_turn_text`); for a ``final`` turn only the part
    that decides the stop token matters. The end marker belongs to the model when it is one of
    ``stop_ids``, because generating it is how the model ends its turn:

    - a sampled reply that ended with that stop token already holds it, so it is not repeated;
    - ``add_stop=True`` (a demonstration, whose text never contains the marker) appends it;
    - a sampled reply cut off by the token limit has none: the marker then goes in as
      environment text (mask 0), which is what the model conditions on in the next turn.

    With ``max_seq_len``, environment text that would reach it is not appended and
    ``traj.overflowed`` is set instead (later turns are then played without tokens).
    """
    reply = list(reply)
    stops = {tokenizer.convert_ids_to_tokens(int(i)): int(i) for i in stop_ids}
    marker = next((text for text in stops if text and after.startswith(text)), None)
    if add_stop:
        if marker is None:
            raise ValueError(f"the chat template closes a reply with {after[:20]!r}, which starts with none of the "
                             f"stop tokens {sorted(stops)}; a model trained on it could never end its turn")
        reply.append(stops[marker])
        after = after[len(marker):]
    elif marker is not None and reply and reply[-1] == stops[marker]:
        after = after[len(marker):]  # the model already sampled the template's end marker
    traj._append(reply, turn)
    traj.response_tokens.append(len(reply))
    traj._add_reward(reward)
    if final:
        return
    ids = encode_text(tokenizer, after)
    if max_seq_len is not None and len(traj.input_ids) + len(ids) >= max_seq_len:
        traj.overflowed = True
    else:
        traj._append(ids, None)


def start_trajectory(tokenizer: Any, messages: list[dict[str, str]], group: int = 0) -> Trajectory:
    """A trajectory holding the first prompt (system + first user message + generation header), mask 0."""
    traj = Trajectory(group=group)
    traj._append(encode_text(tokenizer, render_chat(tokenizer, messages, add_generation_prompt=True)), None)
    return traj


class RolloutEngine(Protocol):
    """Whatever samples replies for :func:`rollout`: token ids in, token ids out.

    The engine sees only the exact ids stored in each trajectory and returns the sampled ids, so
    the text protocol, the token layout (:func:`append_turn`) and the loss mask stay one code path
    whichever engine generates. Implementations: :class:`HFRolloutEngine` (the default) and
    :class:`ragen_train.vllm_engine.VLLMRolloutEngine`.
    """

    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop_ids: Sequence[int],
        seeds: Sequence[int],
    ) -> list[list[int]]:
        """One reply per prompt, cut after its first stop id (kept). ``temperature=0`` is greedy;
        ``seeds[i]`` is request ``i``'s sampling seed for engines that can seed requests one by one."""
        ...


@dataclass
class HFRolloutEngine:
    """``transformers`` ``model.generate`` as a rollout engine (left-padded batches, KV cache).

    ``model.generate`` cannot seed the rows of a batch separately, so the per-request ``seeds`` are
    not used: it draws from torch's global generator, which :func:`rollout` forks and seeds with
    its ``generation_seed``.
    """

    model: Any
    tokenizer: Any
    batch_size: int = 64

    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop_ids: Sequence[int],
        seeds: Sequence[int],
    ) -> list[list[int]]:
        """Replies of ``model.generate`` (see :func:`generate`)."""
        return generate(self.model, self.tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature,
                        top_p=top_p, batch_size=self.batch_size, stop_ids=stop_ids)


def request_seeds(generation_seed: int, turn: int, episodes: Sequence[int]) -> list[int]:
    """Sampling seed of each episode's request in ``turn``: a function of (generation seed, turn,
    episode index) only, so an episode's reply does not depend on which other episodes still play."""
    return [int(np.random.SeedSequence([generation_seed, turn, int(i)]).generate_state(1)[0]) for i in episodes]


@torch.no_grad()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float = 1.0,
    batch_size: int = 64,
    stop_ids: Sequence[int],
) -> list[list[int]]:
    """Sample one reply per prompt with ``model.generate`` (left-padded batches, KV cache).

    Each reply is cut after its first stop token (kept: the model sampled it). ``temperature=0`` is
    greedy decoding. Ids past the tokenizer's vocabulary (rows of a padded embedding table) are never
    sampled.
    """
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id
    stops = set(stop_ids)
    rows = model.get_output_embeddings().weight.shape[0]
    padded = {"suppress_tokens": list(range(len(tokenizer), rows))} if rows > len(tokenizer) else {}
    replies: list[list[int]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start:start + batch_size]
        width = max(len(p) for p in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, p in enumerate(chunk):
            ids[i, width - len(p):] = torch.tensor(p)
            attn[i, width - len(p):] = 1
        sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0} if temperature > 0 \
            else {"do_sample": False}
        out = model.generate(input_ids=ids.to(device), attention_mask=attn.to(device), max_new_tokens=max_new_tokens,
                             eos_token_id=list(stop_ids), pad_token_id=pad, use_cache=True, **sampling, **padded)
        for row in out[:, width:].tolist():
            cut = next((i + 1 for i, tok in enumerate(row) if tok in stops), len(row))
            replies.append(row[:cut])
    return replies


def check_vocabulary(ids: Sequence[int], vocab_size: int) -> None:
    """Raise ValueError unless every sampled id is one the tokenizer can decode (``0 <= id < vocab_size``).

    A model whose embedding table is larger than its tokenizer (padded vocabularies), or an engine
    serving another tokenizer, can sample ids that decode to nothing: played as silence and trained
    as if they were text, they would corrupt the episode without a word.
    """
    bad = next((int(t) for t in ids if not 0 <= int(t) < vocab_size), None)
    if bad is not None:
        raise ValueError(f"the model sampled token id {bad}, outside the tokenizer's {vocab_size} ids; the model's "
                         "vocabulary and its tokenizer do not match (a padded embedding table, or an engine with "
                         "another tokenizer)")


def rollout(
    model: Any,
    tokenizer: Any,
    env: str,
    seeds: Sequence[int],
    *,
    group_size: int,
    protocol: ProtocolConfig | dict[str, Any] | None = None,
    env_config: dict[str, Any] | None = None,
    max_new_tokens: int = 128,
    max_seq_len: int = 4096,
    temperature: float = 1.0,
    top_p: float = 1.0,
    batch_size: int = 64,
    generation_seed: int = 0,
    engine: RolloutEngine | None = None,
    reasoning_format: float = 0.0,
    reasoning_consistency: float = 0.0,
) -> RolloutBatch:
    """Play ``len(seeds)`` groups of ``group_size`` episodes each (members of a group share the seed).

    ``model`` is a causal LM (unwrap DDP first); its generation config names the stop ids.
    ``engine`` samples the replies; by default ``model.generate`` does
    (``HFRolloutEngine(model, tokenizer, batch_size)``). Sampling is seeded from
    ``generation_seed``: torch's RNG is forked and seeded with it, so the caller's global RNG is
    left untouched, and each request also gets its own seed (:func:`request_seeds`); the same seed
    reproduces the same rollouts.

    ``reasoning_format`` and ``reasoning_consistency`` weigh the reasoning reward's terms
    (:func:`ragen_train.reasoning_reward.reasoning_terms`), added to each turn's reward; 0 turns a term off.
    """
    if group_size < 1 or not seeds:
        raise ValueError(f"need at least one seed and group_size >= 1, got {len(seeds)} seeds, group_size {group_size}")
    protocol = coerce_config(ProtocolConfig, protocol)
    if protocol.context != "full":
        raise ValueError("training needs the protocol's context='full': every turn extends one token sequence")
    all_seeds = [int(s) for s in seeds for _ in range(group_size)]
    batch = EpisodeBatch(env, all_seeds, config=protocol, env_config=env_config)
    stops = stop_token_ids(tokenizer, model)
    engine = engine if engine is not None else HFRolloutEngine(model, tokenizer, batch_size)
    chats = [episode.messages for episode in batch.episodes]
    trajs = [start_trajectory(tokenizer, chat, group=i // group_size) for i, chat in enumerate(chats)]
    for traj in trajs:
        if len(traj.input_ids) >= max_seq_len:
            raise ValueError(f"the first prompt of {env} is {len(traj.input_ids)} tokens, more than "
                             f"max_seq_len={max_seq_len}")

    devices = [torch.cuda.current_device()] if next(model.parameters()).is_cuda else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(generation_seed)
        turn = 0
        while not batch.done:
            active = batch.active
            live = [i for i in active if not trajs[i].overflowed]
            replies = engine.generate([trajs[i].input_ids for i in live], max_new_tokens=max_new_tokens,
                                      temperature=temperature, top_p=top_p, stop_ids=stops,
                                      seeds=request_seeds(generation_seed, turn, live))
            sampled, texts, finishes = {}, {}, {}
            for i, reply in zip(live, replies, strict=True):  # an engine must answer every prompt
                check_vocabulary(reply, len(tokenizer))
                sampled[i] = reply[:max_seq_len - len(trajs[i].input_ids)]
                finished = bool(sampled[i]) and sampled[i][-1] in stops  # else it hit max_new_tokens or max_seq_len
                texts[i] = tokenizer.decode(sampled[i], skip_special_tokens=True)
                finishes[i] = None if finished else "length"
            for i in active:
                if trajs[i].overflowed:
                    texts[i], finishes[i] = "", "length"
            records = batch.step([texts[i] for i in active], finish_reasons=[finishes[i] for i in active])
            for i, record in zip(active, records):
                traj, episode = trajs[i], batch.episodes[i]
                reward = float(record["reward"]) + float(record["penalty"])
                if reasoning_format or reasoning_consistency:
                    extra = reasoning_terms(record, format_coef=reasoning_format,
                                            consistency_coef=reasoning_consistency,
                                            coordinate_base=protocol.coordinate_base, symbols=protocol.symbols).total
                    traj.reasoning_reward += extra
                    reward += extra
                if traj.overflowed:
                    traj._add_reward(reward)
                    continue
                after = "" if episode.done else env_turn_text(tokenizer, chats[i], episode.messages)
                append_turn(traj, tokenizer, sampled[i], after, turn=turn, reward=reward, stop_ids=stops,
                            final=episode.done, max_seq_len=max_seq_len)
                chats[i] = episode.messages
            turn += 1
    for traj, record in zip(trajs, batch.records()):
        for k, turn in enumerate(record["turns"]):
            # the usage ragen-eval's runner records, so the harness's metrics read training episodes
            # as they read its own; turns played after an overflow sampled nothing
            sampled_tokens = traj.response_tokens[k] if k < len(traj.response_tokens) else 0
            turn["completion"] = {"finish_reason": turn["finish_reason"], "prompt_tokens": None,
                                  "completion_tokens": sampled_tokens, "reasoning_tokens": None}
        traj.record = record
    return RolloutBatch(trajs, num_groups=len(seeds), group_size=group_size)
