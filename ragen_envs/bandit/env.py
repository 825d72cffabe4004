"""The Bandit Gymnasium environment: pick one of K named arms once; RAGEN's safe-versus-risky test."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_envs.bandit import text
from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.level import Arm, BanditLevel, certificate, generate
from ragen_envs.bandit.names import NAME_POOLS
from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.rendering import TileStyle

#: Tile looks: an arm not pulled, the arm pulled.
TILE_STYLES = (
    TileStyle((225, 225, 225), "circle", (110, 70, 170)),
    TileStyle((250, 210, 60), "circle", (110, 70, 170)),
)


class BanditEnv(BaseGame):
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
    name, config_class, action_noun, tile_styles, tile_size = "bandit", BanditConfig, "arm index", TILE_STYLES, 48
    #: How the ``rgb_array`` picture shows the arms, added to the legend of image observations.
    image_legend = ("In the picture each arm is a grey tile with a purple disc, in the order the arms are named; "
                    "a pulled arm's tile turns gold.")
    text_defaults: Mapping[str, Any] = {"max_turns": 1, "max_actions_per_turn": 1, "max_actions_per_episode": 1}

    def setup(self) -> None:
        self.observation_space = spaces.MultiBinary(self.config.num_arms)
        #: Names of the arms in the order shown; placeholders until the first reset.
        self.action_names = tuple(f"Arm{i + 1}" for i in range(self.config.num_arms))

    def given_level(self, level: Any) -> BanditLevel:
        if isinstance(level, BanditLevel) and len(level.arms) == self.config.num_arms:
            return level
        raise ValueError(f"options['level'] must be a BanditLevel with {self.config.num_arms} arms, got {level!r:.80}")

    def new_level(self, seed: int) -> BanditLevel:
        return generate(self.config, seed)

    def certify(self, level: BanditLevel) -> Certificate:
        return certificate(level)

    def start(self, level: BanditLevel) -> None:
        self.action_names = tuple(arm.name for arm in level.arms)
        self.chosen: int | None = None
        self.last_reward: float | None = None

    def move(self, action: int) -> Move:
        arm = self.level.arms[action]
        # The fixed arm pays without a draw; only risky arms consume randomness.
        paid = arm.pay_prob >= 1.0 or self.np_random.random() < arm.pay_prob
        self.chosen, self.last_reward = action, arm.payout if paid else 0.0
        return Move(self.last_reward, success=action in self.level.best_arms, over=True,
                    info={"arm": arm.name, "expected_reward": arm.expected_reward})

    def observe(self) -> np.ndarray:
        obs = np.zeros(self.config.num_arms, dtype=np.int8)
        if self.chosen is not None:
            obs[self.chosen] = 1
        return obs

    def views(self, symbols: Mapping[str, str], base: int) -> dict[str, str]:
        """The arms and, after the pull, what it paid; every format reads the same."""
        return {"grid": text.observation_text(self.action_names, self.chosen, self.last_reward)}

    def tiles(self) -> np.ndarray:
        return self.observe()[None, :].astype(np.int64)

    def rules_text(self) -> str:
        """The rules in plain English; payoffs are stated only if ``config.reveal_payoffs``."""
        return text.rules_text(self.config, self.level, self.action_names)

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """How to answer: the arm's name as written (there is no grid)."""
        return text.legend_text(self.action_names)

    def level_key(self) -> bytes | None:
        """The current level's arm names and roles as bytes (:meth:`BanditLevel.level_key`), or None when the
        config can draw only one set of names (``bandit``: Phoenix and Dragon), so there is nothing to hold
        out and every split plays the same names."""
        self._started()
        return None if self.config.name_combinations == 1 else self.level.level_key()

    def state(self) -> dict[str, Any]:
        """``arms`` in shown order (name, expected_reward, variance, low_risk), ``chosen``."""
        return {
            "arms": [
                {"name": a.name, "expected_reward": a.expected_reward, "variance": a.variance, "low_risk": a.low_risk}
                for a in self.level.arms
            ],
            "chosen": self.chosen,
        }

    def plan(self) -> list[int]:
        """The arm with the highest expected reward (the first of equals): the whole optimal game."""
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
