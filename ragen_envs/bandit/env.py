"""The Bandit Gymnasium environment: pick one of K named arms once; RAGEN's safe-versus-risky test."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ragen_envs.bandit import text
from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.level import Arm, BanditLevel, certificate, generate
from ragen_envs.bandit.names import NAME_POOLS
from ragen_envs.certificate import Certificate
from ragen_envs.config_dicts import coerce_config
from ragen_envs.rendering import FrameOutput, TileStyle, render_tiles
from ragen_envs.seeding import as_optional_seed
from ragen_envs.text_game import OBSERVATION_FORMATS

#: Tile looks: an arm not pulled, the arm pulled.
TILE_STYLES = (
    TileStyle((225, 225, 225), "circle", (110, 70, 170)),
    TileStyle((250, 210, 60), "circle", (110, 70, 170)),
)


class BanditEnv(gym.Env):
    """Pull one of K named arms once; the names are the only hint about their hidden payoffs.

    ## Description
    RAGEN's bandit: a low-risk arm pays a fixed ``low_risk_reward`` (0.1), a high-risk arm pays
    ``high_risk_reward`` (1.0) with probability ``high_risk_prob`` (0.25) and 0 otherwise, so the
    risky arm is the better one on average. Every reset draws names from the config's name set and
    shuffles the order in which the arms are shown (``generate(config, level_seed)``).

    ## Starting State
    No arm pulled; the arms' names and order are new (drawn from the level seed).

    ## Action Space
    ``Discrete(num_arms)``: action ``i`` pulls the arm shown ``i``-th; ``action_names`` lists them
    and changes with every reset.

    ## Observation Space
    ``MultiBinary(num_arms)``: all zeros before the pull, then a one at the pulled arm.

    ## Rewards
    The pulled arm's payout, drawn from ``self.np_random``.

    ## Episode End
    After the single pull.

    ## Information
    At reset: ``level_seed``, ``certificate`` (:class:`ragen_envs.certificate.Certificate` as a dict:
    one step, a best arm, success probability 1; extras: each arm's expected reward and variance, the
    best arms). At the step: ``success`` (the pulled arm has the highest expected reward),
    ``action_is_valid``, ``action_is_effective`` (always True), ``arm``, ``expected_reward``.

    ## Arguments
    ``render_mode`` (``"ansi"``, ``"rgb_array"``, ``"human"``), ``config`` (a :class:`BanditConfig`
    or a dict of its fields), ``symbols`` (accepted for a uniform signature; Bandit has no cells).

    ## Version History
    v0: first version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 4}
    #: How the ``rgb_array`` picture shows the arms, added to the legend of image observations.
    image_legend = ("In the picture each arm is a grey tile with a purple disc, in the order the arms are named; "
                    "a pulled arm's tile turns gold.")
    text_defaults: Mapping[str, Any] = {"max_turns": 1, "max_actions_per_turn": 1, "max_actions_per_episode": 1}
    #: No grid, so no symbol vocabularies.
    symbol_sets: Mapping[str, Mapping[str, str]] = {}
    #: Pixels per arm in ``rgb_array`` frames.
    tile_size: int = 48

    def __init__(
        self,
        render_mode: str | None = None,
        config: BanditConfig | Mapping[str, Any] | None = None,
        symbols: Mapping[str, str] | None = None,
    ) -> None:
        config = coerce_config(BanditConfig, config)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.config = config
        self.render_mode = render_mode
        self.symbols = dict(symbols or {})
        self.action_space = spaces.Discrete(config.num_arms)
        self.observation_space = spaces.MultiBinary(config.num_arms)
        #: Names of the arms in the order shown; placeholders until the first reset.
        self.action_names: tuple[str, ...] = tuple(f"Arm{i + 1}" for i in range(config.num_arms))
        self.level: BanditLevel | None = None
        self.level_seed: int | None = None
        #: The current level's certificate (``info["certificate"]`` holds its ``to_dict()``).
        self.certificate: Certificate | None = None
        self.chosen: int | None = None
        self.last_reward: float | None = None
        self._frames = FrameOutput("ragen Bandit")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw new arm names and a new order (or play ``options["level"]``, a BanditLevel); returns ``(obs, info)``."""
        super().reset(seed=as_optional_seed(seed))  # np.int64 seeds too
        level = (options or {}).get("level")
        if level is None:
            self.level_seed = int(self.np_random.integers(0, 2**31 - 1))
            self.level = generate(self.config, self.level_seed)
        elif isinstance(level, BanditLevel) and len(level.arms) == self.config.num_arms:
            self.level_seed, self.level = None, level
        else:
            raise ValueError(
                f"options['level'] must be a BanditLevel with {self.config.num_arms} arms, got {level!r:.80}"
            )
        self.action_names = tuple(arm.name for arm in self.level.arms)
        self.certificate = certificate(self.level)
        self.chosen = None
        self.last_reward = None
        if self.render_mode == "human":
            self.render()
        return self._observation(), {"level_seed": self.level_seed, "certificate": self.certificate.to_dict()}

    def step(self, action: Any):
        """Pull arm ``action``; the episode ends at once. Returns ``(obs, reward, terminated, truncated, info)``."""
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"Bandit action must be an int arm index, got {action!r} ({type(action).__name__})")
        if not 0 <= action < self.config.num_arms:
            raise ValueError(f"Bandit action must be an arm index in 0..{self.config.num_arms - 1}, got {action}")
        if self.level is None or self.chosen is not None:
            raise RuntimeError("Bandit episode is over (or never started); call reset() first")
        arm = self.level.arms[int(action)]
        # The fixed arm pays without a draw; only risky arms consume randomness.
        paid = arm.pay_prob >= 1.0 or self.np_random.random() < arm.pay_prob
        reward = arm.payout if paid else 0.0
        self.chosen = int(action)
        self.last_reward = reward
        if self.render_mode == "human":
            self.render()
        info = {
            "success": self.chosen in self.level.best_arms,
            "action_is_valid": True,
            "action_is_effective": True,
            "arm": arm.name,
            "expected_reward": arm.expected_reward,
        }
        return self._observation(), float(reward), True, False, info

    def _observation(self) -> np.ndarray:
        obs = np.zeros(self.config.num_arms, dtype=np.int8)
        if self.chosen is not None:
            obs[self.chosen] = 1
        return obs

    def render(self) -> str | np.ndarray | None:
        """``ansi``: the arms as text; ``rgb_array``: one tile per arm, the pulled one gold; ``human``: a window."""
        if self.level is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            return self.observation_text()
        if self.render_mode is None:
            return None
        frame = render_tiles(self._observation()[None, :].astype(np.int64), TILE_STYLES, self.tile_size)
        return self._frames.emit(frame, self.render_mode, self.metadata["render_fps"])

    def close(self) -> None:
        """Close the pygame window, if one is open."""
        self._frames.close()

    # ------------------------------------------------------------------ TextGame protocol
    def action_aliases(self) -> dict[str, int]:
        """Each arm's name in lower case (and without spaces) -> its action id."""
        aliases: dict[str, int] = {}
        for i, name in enumerate(self.action_names):
            aliases[name.lower()] = i
            aliases[name.lower().replace(" ", "")] = i
        return aliases

    def rules_text(self) -> str:
        """The rules in plain English; payoffs are stated only if ``config.reveal_payoffs``."""
        return text.rules_text(self.config, self.level, self.action_names)

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """How to answer: the arm's name as written (there is no grid)."""
        return text.legend_text(self.action_names)

    def observation_text(
        self, fmt: str = "grid", symbols: Mapping[str, str] | None = None, coordinate_base: int = 0
    ) -> str:
        """The arms and, after the pull, what it paid; every format reads the same."""
        if fmt not in OBSERVATION_FORMATS:
            raise ValueError(f"unknown observation format {fmt!r}; choose one of {OBSERVATION_FORMATS}")
        if self.level is None:
            raise RuntimeError("call reset() before observation_text()")
        return text.observation_text(self.action_names, self.chosen, self.last_reward)

    def level_key(self) -> bytes | None:
        """The current level's arm names and roles as bytes (:meth:`BanditLevel.level_key`), or None when the
        config can draw only one set of names (``bandit``: Phoenix and Dragon), so there is nothing to hold
        out and every split plays the same names."""
        if self.level is None:
            raise RuntimeError("call reset() before level_key()")
        return None if self.config.name_combinations == 1 else self.level.level_key()

    def state_dict(self) -> dict[str, Any]:
        """JSON snapshot: ``game``, ``arms`` in shown order (name, expected_reward, variance, low_risk), ``chosen``."""
        if self.level is None:
            raise RuntimeError("call reset() before state_dict()")
        return {
            "game": "bandit",
            "arms": [
                {"name": a.name, "expected_reward": a.expected_reward, "variance": a.variance, "low_risk": a.low_risk}
                for a in self.level.arms
            ],
            "chosen": self.chosen,
        }

    def plan_turn(self, turn_actions: int, actions_left: int, turns_left: int) -> list[int]:
        """The arm with the highest expected reward (the first of equals): the whole optimal game."""
        if self.level is None:
            raise RuntimeError("call reset() before plan_turn()")
        arms = self.level.arms
        return [max(range(len(arms)), key=lambda i: arms[i].expected_reward)]

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> BanditEnv | None:
        """The two arms a chat shows, rebuilt to plan on, or None unless their names are one low-risk and
        one high-risk name of the name pools (so fixed or custom names are not guessed). Payoffs come
        from the rules when revealed ("NAME: pays X with probability P"), else the default config's."""
        low = {name.lower() for pool in NAME_POOLS.values() for name in pool.low_risk}
        high = {name.lower() for pool in NAME_POOLS.values() for name in pool.high_risk}
        kinds = [name.lower() in low if name.lower() in low | high else None for name in action_names]
        if len(kinds) != 2 or None in kinds or kinds[0] == kinds[1]:
            return None
        defaults = BanditConfig()
        arms = []
        for name, low_risk in zip(action_names, kinds):
            payout, pay_prob = (defaults.low_risk_reward, 1.0) if low_risk else (defaults.high_risk_reward,
                                                                                   defaults.high_risk_prob)
            revealed = re.search(rf"^\s*{re.escape(name)}: pays ([-0-9.e+]+)(?: with probability ([0-9.e+-]+))?",
                                 intro, re.MULTILINE)
            if revealed:
                payout, pay_prob = float(revealed.group(1)), float(revealed.group(2) or 1.0)
            arms.append(Arm(name, payout, pay_prob, bool(low_risk)))
        env = cls(config=defaults)
        env.reset(options={"level": BanditLevel(tuple(arms))})
        return env
