"""The certificate every game gives its levels: what an optimal player achieves, in fields all games fill.

A metric that needs the optimum (efficiency = optimal steps / steps taken) reads these fields and
never a game's own keys; whatever only one game knows (Sokoban's pushes, a lake's horizon, a
bandit's arm payoffs) rides along in ``extras``. Episode records store :meth:`Certificate.to_dict`,
the game's extras with the typed fields beside them, and :meth:`Certificate.from_dict` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The typed fields, which are also the keys they take in :meth:`Certificate.to_dict`.
TYPED_FIELDS = ("optimal_steps", "optimal_actions", "optimal_success_probability")


@dataclass(frozen=True)
class Certificate:
    """What optimal play achieves on one level.

    ``optimal_steps``: the fewest actions that can win (None if unknown). ``optimal_actions``: a
    sequence of action ids that wins in that many steps whatever chance does, or None where no fixed
    sequence does (slippery ice). ``optimal_success_probability``: the best chance of winning within
    the game's limits. ``extras``: game-specific, JSON-friendly details.
    """

    optimal_steps: int | None
    optimal_actions: tuple[int, ...] | None
    optimal_success_probability: float
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        steps = self.optimal_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
            raise ValueError(f"Certificate.optimal_steps must be a non-negative int or None, got {steps!r}")
        if self.optimal_actions is not None:
            actions = tuple(self.optimal_actions)
            if any(isinstance(a, bool) or not isinstance(a, int) or a < 0 for a in actions):
                raise ValueError(f"Certificate.optimal_actions must hold action ids (ints >= 0), got {actions!r}")
            if steps is not None and len(actions) != steps:
                raise ValueError(f"Certificate.optimal_actions has {len(actions)} actions but optimal_steps={steps}")
            object.__setattr__(self, "optimal_actions", actions)
        probability = self.optimal_success_probability
        if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
            raise ValueError(f"Certificate.optimal_success_probability must lie in [0, 1], got {probability!r}")
        object.__setattr__(self, "optimal_success_probability", float(probability))
        clash = sorted(set(self.extras) & set(TYPED_FIELDS))
        if clash:
            raise ValueError(f"Certificate.extras must not repeat the typed fields {clash}")
        object.__setattr__(self, "extras", dict(self.extras))

    def to_dict(self) -> dict[str, Any]:
        """JSON form, as ``info["certificate"]`` and episode records hold it: the extras and the typed fields."""
        actions = None if self.optimal_actions is None else list(self.optimal_actions)
        return {**self.extras, "optimal_steps": self.optimal_steps, "optimal_actions": actions,
                "optimal_success_probability": self.optimal_success_probability}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Certificate:
        """Inverse of :meth:`to_dict`; a mapping without the typed fields raises a ValueError naming them."""
        if not isinstance(values, Mapping):
            raise TypeError(f"a certificate must be a mapping, got {type(values).__name__}")
        missing = [name for name in TYPED_FIELDS if name not in values]
        if missing:
            raise ValueError(f"certificate lacks the typed field(s) {missing}; it has {sorted(values)}")
        actions = values["optimal_actions"]
        return cls(
            optimal_steps=values["optimal_steps"],
            optimal_actions=None if actions is None else tuple(actions),
            optimal_success_probability=values["optimal_success_probability"],
            extras={k: v for k, v in values.items() if k not in TYPED_FIELDS},
        )
