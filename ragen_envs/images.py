"""Image observations with the standard library and numpy: frame scaling, PNG files, data URLs, digests.

The text protocol's ``observation="image"`` sends each turn's ``rgb_array`` frame as a PNG data URL (the
OpenAI chat ``image_url`` content part). Everything here needs numpy, ``zlib`` and ``struct`` only, so the
base install (numpy + gymnasium, no pillow) can send pictures; :func:`decode_png` reads back the PNGs that
:func:`encode_png` writes (8-bit RGB, any row filter), which is what the tests and ``ragen-eval show`` need.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from typing import Any

import numpy as np

from ragen_envs.rendering import check_frame

#: How a frame is coloured: ``color`` as the game draws it, ``gray`` its luminance in all three channels.
IMAGE_STYLES = ("color", "gray")

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Prefix of every data URL :func:`png_data_url` writes.
PNG_DATA_URL_PREFIX = "data:image/png;base64,"
# ITU-R BT.601 luma weights, the ones PIL's "L" conversion uses.
_LUMA = np.array([299, 587, 114], dtype=np.uint32)


def styled_frame(frame: np.ndarray, size: int | None = None, style: str = "color") -> np.ndarray:
    """``frame`` scaled (nearest neighbour) so its longer side is ``size`` pixels (None: as drawn), in ``style``."""
    array = check_frame(frame)
    if style not in IMAGE_STYLES:
        raise ValueError(f"style must be one of {IMAGE_STYLES}, got {style!r}")
    if size is not None:
        height, width = array.shape[:2]
        scale = size / max(height, width)
        rows = (np.arange(max(1, round(height * scale))) / scale).astype(np.intp)
        cols = (np.arange(max(1, round(width * scale))) / scale).astype(np.intp)
        array = array[np.minimum(rows, height - 1)][:, np.minimum(cols, width - 1)]
    if style == "gray":
        luma = ((array.astype(np.uint32) @ _LUMA + 500) // 1000).astype(np.uint8)
        array = np.repeat(luma[:, :, None], 3, axis=2)
    return np.ascontiguousarray(array)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(frame: np.ndarray, level: int = 6) -> bytes:
    """The PNG file of an (H, W, 3) uint8 frame: 8-bit RGB, no filter, zlib ``level`` (0-9)."""
    array = check_frame(frame)
    height, width = array.shape[:2]
    # Filter type 0 (none) on every row: game frames are flat colour, which deflate packs well unfiltered.
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 1:] = array.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (_PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
            + _chunk(b"IEND", b""))


def _unfilter(raw: np.ndarray, height: int, stride: int) -> np.ndarray:
    """Undo PNG's per-row filters (types 0-4) for 3 bytes per pixel."""
    rows = raw.reshape(height, 1 + stride)
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            current = line
        elif kind == 2:
            current = (line + prior) & 0xFF
        elif kind in (1, 3, 4):  # these depend on the pixel to the left: decode byte by byte
            current = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                left = current[x - 3] if x >= 3 else 0
                up = prior[x]
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                else:
                    corner = prior[x - 3] if x >= 3 else 0
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                current[x] = (line[x] + predictor) & 0xFF
        else:
            raise ValueError(f"PNG row {y} has unknown filter type {kind}")
        out[y] = current
        prior = current
    return out


def decode_png(data: bytes) -> np.ndarray:
    """The (H, W, 3) uint8 frame of an 8-bit RGB, non-interlaced PNG (what :func:`encode_png` writes)."""
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError("not a PNG file (bad signature)")
    offset, header, idat = len(_PNG_SIGNATURE), None, []
    while offset + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if len(body) != length:
            raise ValueError(f"PNG chunk {kind!r} is cut short")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        offset += 12 + length
    if header is None or not idat:
        raise ValueError("PNG has no IHDR or no IDAT chunk")
    width, height, depth, color, _, _, interlace = header
    if (depth, color, interlace) != (8, 2, 0):
        raise ValueError(f"only 8-bit RGB non-interlaced PNGs are read, got depth {depth}, colour type {color}, "
                         f"interlace {interlace}")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    if raw.size != height * (1 + 3 * width):
        raise ValueError("PNG image data does not match its size")
    return _unfilter(raw, height, 3 * width).reshape(height, width, 3)


def png_data_url(png: bytes) -> str:
    """``data:image/png;base64,...`` for a PNG file's bytes."""
    return PNG_DATA_URL_PREFIX + base64.b64encode(png).decode("ascii")


def png_from_data_url(url: str) -> bytes:
    """The PNG bytes of a ``data:image/png;base64,`` URL; ValueError for anything else."""
    if not isinstance(url, str) or not url.startswith(PNG_DATA_URL_PREFIX):
        raise ValueError(f"expected a URL starting with {PNG_DATA_URL_PREFIX!r}")
    try:
        return base64.b64decode(url[len(PNG_DATA_URL_PREFIX):], validate=True)
    except ValueError as exc:
        raise ValueError(f"the data URL is not valid base64: {exc}") from None


def image_digest(png: bytes) -> str:
    """``sha256:<hex>`` of a PNG file: what a run records instead of the image."""
    return "sha256:" + hashlib.sha256(png).hexdigest()


def image_part(png: bytes) -> dict[str, Any]:
    """The OpenAI chat content part that carries ``png``: ``{"type": "image_url", "image_url": {"url": ...}}``."""
    return {"type": "image_url", "image_url": {"url": png_data_url(png)}}
