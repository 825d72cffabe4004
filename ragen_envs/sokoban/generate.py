"""Seeded level generation: ``generate(config, seed)`` is a pure function of its arguments.

Each attempt carves a room, places the targets, and searches backwards from the solved room (see
:mod:`ragen_envs.sokoban.reverse_search`). The start position is drawn from the states the
search settled whose certificate lies in the difficulty band: among those with the fewest boxes
already on targets, the ones with the most pushes (``start_selection="hardest"``) or with a push
count drawn uniformly from those present (``"spread"``); then one of them uniformly. Its
certificate is read off the search. An attempt whose search finds no such state is discarded; after
``config.max_attempts`` failed attempts a :class:`GenerationError` says what to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.level import Certificate, SokobanLevel, cells_of
from ragen_envs.sokoban.reverse_search import search_backwards
from ragen_envs.sokoban.room import Draws, carve_room


class GenerationError(RuntimeError):
    """No level in the difficulty band was found within ``max_attempts`` rooms."""


def generate(config: SokobanConfig | Mapping[str, Any] | None, seed: int) -> SokobanLevel:
    """The level of ``seed`` under ``config``, with its certificate (an optimal solution)."""
    config = SokobanConfig.coerce(config)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed = int(seed)
    draws = Draws(np.random.default_rng(seed))
    for _ in range(config.max_attempts):
        level = _attempt(config, draws, seed)
        if level is not None:
            return level
    band = f"{config.min_pushes}..{config.max_pushes if config.max_pushes is not None else 'any'}"
    raise GenerationError(
        f"no {config.height}x{config.width} level with {config.num_boxes} box(es) and a certificate of "
        f"{band} pushes found in {config.max_attempts} attempts (seed {seed}); widen the push band, raise "
        f"search_budget (now {config.search_budget}) or max_attempts, or use a larger room"
    )


def _attempt(config: SokobanConfig, draws: Draws, seed: int) -> SokobanLevel | None:
    h, w, n = config.height, config.width, config.num_boxes
    floor = carve_room(draws, h, w, config.carving_steps, config.p_change_direction)
    cells = []
    m = floor
    while m:
        low = m & -m
        m ^= low
        cells.append(low.bit_length() - 1)
    if len(cells) < n + 1:
        return None
    targets = 0
    for i in range(n):  # partial Fisher-Yates: n distinct cells
        j = i + draws.below(len(cells) - i)
        cells[i], cells[j] = cells[j], cells[i]
        targets |= 1 << cells[i]
    search = search_backwards(w, floor, targets, config.search_budget, config.max_pushes)
    lo = config.min_pushes
    hi = config.max_pushes if config.max_pushes is not None else 1 << 30
    # Prefer starts with as few boxes already on targets as the search offers (Boxoban's levels
    # start with none). Then take the push count (the most found, as gym-sokoban keeps its hardest
    # reverse-played state; or one drawn uniformly from those present) and a state uniformly
    # among those with that count.
    by_pushes: dict[int, list[tuple[int, int, int]]] = {}
    fewest_placed = n
    for boxes, records in search.records.items():
        placed = (boxes & targets).bit_count()
        if placed > fewest_placed or placed == n:
            continue
        for _, pushes, players in records:
            if lo <= pushes <= hi:
                if placed < fewest_placed:
                    fewest_placed, by_pushes = placed, {}
                by_pushes.setdefault(pushes, []).append((boxes, players, players.bit_count()))
    if not by_pushes:
        return None
    counts = sorted(by_pushes)
    chosen = counts[-1] if config.start_selection == "hardest" else counts[draws.below(len(counts))]
    candidates = by_pushes[chosen]
    k = draws.below(sum(count for _, _, count in candidates))
    for boxes, players, count in candidates:
        if k < count:
            break
        k -= count
    for _ in range(k):
        players &= players - 1  # drop the lowest set bits until the k-th is lowest
    player = (players & -players).bit_length() - 1
    actions, pushes = search.solution_from(boxes, player)
    everything = (1 << (h * w)) - 1
    # cells_of lists cells in flat-index order, which is the sorted order the class keeps.
    return SokobanLevel.trusted(
        h, w,
        walls=frozenset(cells_of(everything & ~floor, w)),
        targets=tuple(cells_of(targets, w)),
        boxes=tuple(cells_of(boxes, w)),
        player=divmod(player, w),
        certificate=Certificate(tuple(actions), pushes),
        seed=seed,
    )
