"""The trained model: any ``transformers`` causal LM, plus a critic for GAE.

Three critic layouts (``TrainConfig.critic``):

- ``separate``: a second copy of the backbone with a scalar head, as RAGEN/verl train it; policy
  and value gradients never touch the same weights.
- ``shared``: a scalar head on the actor's last hidden state; cheaper, the value loss also moves
  the actor's trunk (weighted by ``value_coef``).
- ``none``: no critic (GRPO, Dr.GRPO).

Both parts live in one ``nn.Module`` so one optimizer step and one DDP wrapper cover them.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ragen_train.config import CRITIC_MODES


class ActorCritic(nn.Module):
    """A causal LM (``lm``) and an optional critic (``critic_backbone`` + ``value_head``)."""

    def __init__(self, lm: nn.Module, critic: str = "separate", critic_backbone: nn.Module | None = None) -> None:
        super().__init__()
        if critic not in CRITIC_MODES:
            raise ValueError(f"critic must be one of {list(CRITIC_MODES)}, got {critic!r}")
        if (critic == "separate") != (critic_backbone is not None):
            raise ValueError("critic='separate' needs a critic_backbone, and only it takes one")
        self.lm = lm
        self.critic_mode = critic
        self.critic_backbone = critic_backbone
        self.value_head: nn.Linear | None = None
        if critic != "none":
            self.value_head = nn.Linear(lm.config.hidden_size, 1)
            # Zero init: the first values are 0, so the first advantages are plain returns.
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        with_values: bool = True,
        logits_from: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits of positions ``logits_from .. T-1`` ``[B, T - logits_from, V]`` and, when a critic
        exists and ``with_values``, values of every position ``[B, T]``.

        ``logits_from`` skips the vocabulary projection over a prompt no token is scored on (the
        projection and its softmax dominate memory for large vocabularies). ``values[:, t]`` is read
        at position ``t`` (it has seen tokens ``0..t``); :func:`ragen_train.loss.shift_right` aligns
        it with the token generated next.
        """
        want_values = with_values and self.value_head is not None
        shared = want_values and self.critic_mode == "shared"
        keep = input_ids.shape[1] - logits_from if logits_from > 0 else 0  # transformers: 0 keeps all
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=shared,
                      use_cache=False, logits_to_keep=keep)
        if not want_values:
            return out.logits, None
        if shared:
            hidden = out.hidden_states[-1]
        else:
            hidden = self.critic_backbone(input_ids=input_ids, attention_mask=attention_mask,
                                          use_cache=False).last_hidden_state
        return out.logits, self.value_head(hidden).squeeze(-1)

    def actor_parameters(self) -> list[nn.Parameter]:
        """The policy's trainable parameters."""
        return [p for p in self.lm.parameters() if p.requires_grad]

    def critic_parameters(self) -> list[nn.Parameter]:
        """The critic's own trainable parameters (the head, plus its backbone when separate)."""
        params = [] if self.value_head is None else list(self.value_head.parameters())
        if self.critic_backbone is not None:
            params += [p for p in self.critic_backbone.parameters() if p.requires_grad]
        return params


def load_tokenizer(path: str | Path):
    """The model's tokenizer; it must carry a chat template (rollouts render chats with it)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"the tokenizer at {path} has no chat template; ragen-train renders every episode "
                         "with tokenizer.apply_chat_template")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token  # padding is masked out; any id will do
    return tokenizer


def load_policy(
    path: str | Path,
    critic: str = "separate",
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    critic_path: str | Path | None = None,
    gradient_checkpointing: bool = False,
) -> ActorCritic:
    """Load ``path`` (a transformers checkpoint) as the actor; build the critic from ``critic_path`` or ``path``.

    ``critic_path`` is a directory written by :func:`save_critic` (backbone + head), used on resume.
    """
    from transformers import AutoModel, AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    backbone = None
    if critic == "separate":
        backbone = AutoModel.from_pretrained(str(critic_path or path), dtype=dtype)
    model = ActorCritic(lm, critic, backbone)
    if critic_path is not None and model.value_head is not None:
        head = torch.load(Path(critic_path) / "value_head.pt", map_location="cpu", weights_only=True)
        model.value_head.load_state_dict(head)
    if gradient_checkpointing:
        lm.gradient_checkpointing_enable()
        if backbone is not None:
            backbone.gradient_checkpointing_enable()
    return model.to(device)


def save_critic(model: ActorCritic, out_dir: str | Path) -> None:
    """Write the critic (backbone in transformers format when separate, head as ``value_head.pt``)."""
    if model.value_head is None:
        return
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if model.critic_backbone is not None:
        model.critic_backbone.save_pretrained(out)
    torch.save(model.value_head.state_dict(), out / "value_head.pt")


def load_reference(path: str | Path, *, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32):
    """A frozen copy of the initial policy, for the KL term (StarPO)."""
    from transformers import AutoModelForCausalLM

    ref = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(device)
    ref.eval()
    ref.requires_grad_(False)
    return ref
