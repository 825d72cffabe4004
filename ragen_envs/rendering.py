"""Pictures of the games: tile images with numpy, a pygame window, animated GIFs.

Every grid game renders its ``rgb_array`` frame the same way: it maps each cell to an index into
a list of :class:`TileStyle` and calls :func:`render_tiles`. Only numpy is needed for that;
pygame (the ``human`` window) and pillow (GIFs, text panels) are imported when first used, so
``pip install ragen-envs`` without the ``[render]`` extra still renders ``rgb_array`` frames.
"""

from __future__ import annotations

import pathlib
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Shapes a tile can carry on top of its background.
SHAPES = ("none", "square", "circle", "diamond", "cross", "plus", "ring", "dot", "triangle")

#: Colour of the one-pixel line drawn between tiles.
GRID_LINE_COLOR = (60, 60, 60)

_INSTALL_HINT = "pip install ragen-envs[render]"


def _check_color(name: str, value: Any) -> None:
    if (
        not isinstance(value, tuple)
        or len(value) != 3
        or not all(isinstance(v, (int, np.integer)) and 0 <= v <= 255 for v in value)
    ):
        raise ValueError(f"TileStyle.{name} must be a tuple of three ints in 0..255, got {value!r}")


@dataclass(frozen=True)
class TileStyle:
    """How one kind of cell looks: a background colour and an optional centred shape."""

    background: tuple[int, int, int]
    shape: str = "none"
    color: tuple[int, int, int] = (0, 0, 0)

    def __post_init__(self) -> None:
        _check_color("background", self.background)
        _check_color("color", self.color)
        if self.shape not in SHAPES:
            raise ValueError(f"unknown TileStyle.shape {self.shape!r}; choose one of {SHAPES}")


def _shape_mask(shape: str, size: int) -> np.ndarray:
    """Boolean (size, size) mask of ``shape``, in coordinates running from -1 to 1 across the tile."""
    centres = (np.arange(size) + 0.5) / size * 2.0 - 1.0
    y, x = np.meshgrid(centres, centres, indexing="ij")
    ax, ay = np.abs(x), np.abs(y)
    radius = np.hypot(x, y)
    # Half the stroke width, never thinner than about one pixel so small tiles stay legible.
    stroke = max(0.14, 2.0 / size)
    if shape == "none":
        return np.zeros((size, size), dtype=bool)
    if shape == "square":
        return np.maximum(ax, ay) <= 0.6
    if shape == "circle":
        return radius <= 0.62
    if shape == "diamond":
        return ax + ay <= 0.75
    if shape == "cross":
        return (np.abs(ax - ay) <= stroke * 1.2) & (np.maximum(ax, ay) <= 0.65)
    if shape == "plus":
        return (np.minimum(ax, ay) <= stroke) & (np.maximum(ax, ay) <= 0.7)
    if shape == "ring":
        return np.abs(radius - 0.5) <= stroke
    if shape == "dot":
        return radius <= 0.25
    if shape == "triangle":
        # Apex up; base at y = 0.55, apex at y = -0.65.
        return (y <= 0.55) & (y >= -0.65) & (ax <= (y + 0.65) / 1.2 * 0.7)
    raise ValueError(f"unknown shape {shape!r}")


def _tile_image(style: TileStyle, size: int) -> np.ndarray:
    tile = np.empty((size, size, 3), dtype=np.uint8)
    tile[:] = style.background
    tile[_shape_mask(style.shape, size)] = style.color
    # The grid line sits on each tile's top and left edge, so it separates neighbours and frames the board
    # on two sides; render_tiles closes the other two.
    tile[0, :] = GRID_LINE_COLOR
    tile[:, 0] = GRID_LINE_COLOR
    return tile


def render_tiles(codes: np.ndarray, styles: Sequence[TileStyle], tile_size: int = 32) -> np.ndarray:
    """Draw a grid of style indices as an RGB image.

    ``codes`` is an integer array (H, W) whose entries index ``styles``. Returns a uint8 array of
    shape (H * tile_size, W * tile_size, 3) with a one-pixel line between tiles and around the board.
    """
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.size == 0:
        raise ValueError(f"codes must be a non-empty 2-D array of style indices, got shape {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer):
        raise TypeError(f"codes must hold integers, got dtype {codes.dtype}")
    if not styles:
        raise ValueError("styles must hold at least one TileStyle")
    if not isinstance(tile_size, (int, np.integer)) or isinstance(tile_size, bool) or tile_size < 4:
        raise ValueError(f"tile_size must be an int of at least 4 pixels, got {tile_size!r}")
    if codes.min() < 0 or codes.max() >= len(styles):
        raise ValueError(f"codes must lie in 0..{len(styles) - 1} (one per style), got {codes.min()}..{codes.max()}")
    tiles = np.stack([_tile_image(s, int(tile_size)) for s in styles])
    h, w = codes.shape
    image = tiles[codes].transpose(0, 2, 1, 3, 4).reshape(h * tile_size, w * tile_size, 3)
    image[-1, :] = GRID_LINE_COLOR
    image[:, -1] = GRID_LINE_COLOR
    return image


def check_frame(frame: Any, what: str = "frame") -> np.ndarray:
    """``frame`` as an array, or ValueError/TypeError unless it is an (H, W, 3) uint8 RGB image."""
    array = np.asarray(frame)
    if array.ndim != 3 or array.shape[2] != 3 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{what} must be an RGB image of shape (H, W, 3), got shape {array.shape}")
    if array.dtype != np.uint8:
        raise TypeError(f"{what} must have dtype uint8, got {array.dtype}")
    return array


def _import_pygame() -> Any:
    try:
        import pygame
    except ImportError as err:
        raise ImportError(f"render_mode='human' needs pygame: {_INSTALL_HINT}") from err
    return pygame


def _import_pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as err:
        raise ImportError(f"GIFs and text panels need pillow: {_INSTALL_HINT}") from err
    return Image, ImageDraw, ImageFont


class HumanWindow:
    """A pygame window that shows frames as they come (``render_mode="human"``)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._pygame = _import_pygame()
        self._screen: Any = None
        self._clock: Any = None

    def show(self, frame: np.ndarray, fps: int) -> None:
        """Draw ``frame`` (H, W, 3 uint8) and wait so that frames come at most ``fps`` per second."""
        array = check_frame(frame)
        pg = self._pygame
        size = (array.shape[1], array.shape[0])
        if self._screen is None or self._screen.get_size() != size:
            pg.display.init()
            pg.display.set_caption(self.title)
            self._screen = pg.display.set_mode(size)
            self._clock = pg.time.Clock()
        # surfarray indexes pixels (x, y), numpy images (row, col).
        self._screen.blit(pg.surfarray.make_surface(array.transpose(1, 0, 2)), (0, 0))
        pg.event.pump()
        pg.display.flip()
        self._clock.tick(fps)

    def close(self) -> None:
        """Close the window (safe to call twice)."""
        if self._screen is not None:
            self._pygame.display.quit()
            self._screen = None


class FrameOutput:
    """Where an env's ``render()`` sends its picture: back to the caller or into a window.

    ``rgb_array`` returns the frame; ``human`` draws it in a :class:`HumanWindow` (opened on the first
    frame, so pygame is imported only then) and returns None. Each env holds one; ``close`` shuts the
    window, and a later ``human`` frame opens a new one.
    """

    def __init__(self, title: str) -> None:
        self.title = title
        self._window: HumanWindow | None = None

    @property
    def window_open(self) -> bool:
        """Whether a ``human`` window is open now."""
        return self._window is not None

    def emit(self, frame: np.ndarray, render_mode: str, fps: int) -> np.ndarray | None:
        """The frame for ``rgb_array``; for ``human``, show it (at most ``fps`` frames a second) and return None."""
        if render_mode == "rgb_array":
            return frame
        if render_mode != "human":
            raise ValueError(f"FrameOutput handles render_mode 'rgb_array' or 'human', got {render_mode!r}")
        if self._window is None:
            self._window = HumanWindow(self.title)
        self._window.show(frame, fps)
        return None

    def close(self) -> None:
        """Close the window, if one is open (safe to call twice)."""
        if self._window is not None:
            self._window.close()
            self._window = None


def save_gif(frames: Sequence[np.ndarray], path: str | pathlib.Path, fps: int = 4) -> pathlib.Path:
    """Write ``frames`` as a looping animated GIF and return its path.

    Frames of different sizes are padded with white at the bottom and right to the largest size,
    so frames whose text panels grow can share one GIF.
    """
    if isinstance(fps, bool) or not isinstance(fps, (int, np.integer)) or fps <= 0:
        raise ValueError(f"fps must be a positive int, got {fps!r}")
    arrays = [check_frame(f, f"frames[{i}]") for i, f in enumerate(frames)]
    if not arrays:
        raise ValueError("save_gif needs at least one frame")
    image_cls, _, _ = _import_pil()
    height = max(a.shape[0] for a in arrays)
    width = max(a.shape[1] for a in arrays)
    padded = []
    for a in arrays:
        canvas = np.full((height, width, 3), 255, dtype=np.uint8)
        canvas[: a.shape[0], : a.shape[1]] = a
        padded.append(image_cls.fromarray(canvas))
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    padded[0].save(
        out,
        format="GIF",
        save_all=True,
        append_images=padded[1:],
        duration=max(1, round(1000 / fps)),
        loop=0,
    )
    return out


def frame_with_text(frame: np.ndarray, text: str, panel_width: int = 360) -> np.ndarray:
    """The frame with a white panel of wrapped ``text`` on its right.

    The result is as tall as the frame or the text, whichever is taller; the frame sits at the top left.
    """
    array = check_frame(frame)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if isinstance(panel_width, bool) or not isinstance(panel_width, (int, np.integer)) or panel_width < 40:
        raise ValueError(f"panel_width must be an int of at least 40 pixels, got {panel_width!r}")
    image_cls, draw_cls, font_mod = _import_pil()
    font = font_mod.load_default()
    margin = 8
    char_width = max(1.0, font.getlength("M"))
    chars_per_line = max(1, int((panel_width - 2 * margin) // char_width))
    left, top, right, bottom = font.getbbox("Mg")
    line_height = int(bottom - top) + 4
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, chars_per_line, replace_whitespace=False) or [""])
    height = max(array.shape[0], 2 * margin + line_height * len(lines))
    canvas = np.full((height, array.shape[1] + panel_width, 3), 255, dtype=np.uint8)
    canvas[: array.shape[0], : array.shape[1]] = array
    picture = image_cls.fromarray(canvas)
    draw = draw_cls.Draw(picture)
    for i, line in enumerate(lines):
        draw.text((array.shape[1] + margin, margin + i * line_height), line, fill=(0, 0, 0), font=font)
    return np.asarray(picture, dtype=np.uint8).copy()
