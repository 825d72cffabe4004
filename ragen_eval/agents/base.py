"""The one interface every agent implements: chat messages in, completions out."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings passed to every backend."""

    temperature: float = 0.5
    """Sampling temperature; 0 is greedy. RAGEN's evaluations sample at 0.5."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches this."""
    max_tokens: int = 400
    """Most tokens one reply may have; a longer one is cut and scored as truncated."""
    seed: int | None = None
    """Sampling seed sent to the backend (the hf backend mixes it with each request's place in the run); none: unseeded."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as written to a run's config.json."""
        return asdict(self)


@dataclass
class Completion:
    """One sampled response, with whatever usage figures the backend reports."""

    text: str
    finish_reason: str | None = None  # "stop", "length", ... ; "length" is scored as truncated
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_text: str | None = None  # provider-side reasoning (e.g. ``reasoning_content``)
    reasoning_tokens: int | None = None
    error: str | None = None  # set when the request failed for good; text is then ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as stored in a turn record."""
        return asdict(self)


class UnsupportedInputError(ValueError):
    """The agent cannot take this chat at all (e.g. pictures sent to a text-only model): retrying will not help."""


def require_replies(n: int) -> None:
    """Refuse a request for fewer than one reply, the same way in every agent."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")


@runtime_checkable
class Agent(Protocol):
    """Anything that can answer a chat: an API endpoint, an in-process model, a built-in policy."""

    name: str

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """Return ``n`` completions for ``messages``. ``episode`` lets built-in agents see the game."""
        ...

    async def aclose(self) -> None:
        """Release connections, processes or models."""
        ...
