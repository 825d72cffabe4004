"""Every preset's seeded play, byte for byte, against golden digests recorded before a refactor.

For each preset and seed the digest covers what a player or a run directory can see: the reset
observation and info (level seed, certificate), the level key, the state, the text in every format
and coordinate base, the legend, the rules, the aliases, the first frame, a raw Gymnasium episode
(every step's 5-tuple), and the records and chats of an oracle episode and a random episode under
the text protocol. Refactoring a game (moving it onto ``ragen_envs.base_game``) must leave all of
them unchanged. ``python tests/envs/test_game_digests.py`` rewrites the fixture (only on purpose).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys

import numpy as np
import pytest

import ragen_envs
from ragen_envs.text import TextEpisode
from ragen_envs.text.jsonable import to_jsonable
from ragen_envs.text.parser import format_reply
from ragen_envs.text.players import oracle_actions, random_actions

GOLDEN = pathlib.Path(__file__).parent / "data" / "game_digests.json"
#: Preset -> seeds: every preset of the three games the refactor may touch.
SEEDS: dict[str, list[int]] = {
    name: [*range(60), 2**31 - 1] for name in (
        "bandit", "bandit_heldout", "bandit_reversed", "frozenlake", "frozenlake_8x8", "frozenlake_det",
        "visual_frozenlake", "sokoban", "simple_sokoban", "simple_sokoban_hard", "larger_sokoban",
        "larger_sokoban_hard", "boxoban", "boxoban_hard", "visual_sokoban")
}


def _rounded(value: object) -> object:
    """``value`` with every float to 12 significant digits: numpy releases differ in the last bits of
    sums (a certificate's success probability), which is not a change of the game."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def _hash(value: object) -> str:
    return hashlib.sha256(json.dumps(_rounded(value), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _env_view(preset: str, seed: int) -> dict[str, object]:
    """What the Gymnasium env shows at reset and over a seeded random episode of raw steps."""
    env = ragen_envs.make(preset, render_mode="rgb_array")
    obs, info = env.reset(seed=seed)
    game = env.unwrapped
    key = game.level_key()
    view: dict[str, object] = {
        "obs": np.asarray(obs).tolist(), "info": to_jsonable(info),
        "level_key": None if key is None else key.hex(), "state": game.state_dict(),
        "text": {f"{fmt}/{base}": game.observation_text(fmt, coordinate_base=base)
                 for fmt in ("grid", "coords", "grid+coords") for base in (0, 1)},
        "legend": [game.legend_text(coordinate_base=base) for base in (0, 1)],
        "rules": game.rules_text(), "aliases": list(game.action_aliases().items()),
        "names": list(game.action_names), "text_defaults": dict(game.text_defaults),
        "frame": hashlib.sha256(np.ascontiguousarray(env.render()).tobytes()).hexdigest(),
        "plan": game.plan_turn(3, 10, 5),
    }
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(12):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        steps.append([np.asarray(obs).tolist(), reward, terminated, truncated, to_jsonable(info),
                      game.observation_text("grid+coords")])
        if terminated or truncated:
            break
    view["steps"] = steps
    env.close()
    return view


def _episode(preset: str, seed: int, player: str) -> dict[str, object]:
    """The record and every chat of one text-protocol episode played by the oracle or the random player."""
    episode = TextEpisode(preset, seed)
    rng = np.random.default_rng(seed)
    chats = []
    while not episode.done:
        chats.append(_hash(episode.messages))
        names = oracle_actions(episode) if player == "oracle" else random_actions(episode, rng)
        episode.step(format_reply(names, episode.config.action_separator, "play"))
    record = episode.record()
    episode.close()
    return {"record": record, "chats": chats}


def digest(preset: str, seed: int) -> str:
    """One hash of everything above for ``preset`` at ``seed``."""
    return _hash({"env": _env_view(preset, seed), "oracle": _episode(preset, seed, "oracle"),
                  "random": _episode(preset, seed, "random")})


def current_digests() -> dict[str, dict[str, str]]:
    """Preset -> seed -> digest, for every preset of :data:`SEEDS`."""
    return {preset: {str(seed): digest(preset, seed) for seed in seeds} for preset, seeds in SEEDS.items()}


@pytest.mark.parametrize("preset", sorted(SEEDS))
def test_seeded_play_matches_the_golden_digests(preset: str) -> None:
    golden = json.loads(GOLDEN.read_text())[preset]
    assert sorted(golden, key=int) == [str(s) for s in SEEDS[preset]]
    changed = [seed for seed in SEEDS[preset] if digest(preset, seed) != golden[str(seed)]]
    assert not changed, f"{preset}: seeded play changed at seeds {changed}"


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(current_digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)
