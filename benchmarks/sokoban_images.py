"""Pictures for docs/envs/sokoban.md: one frame per preset size, and a GIF of a certificate replay.

    python benchmarks/sokoban_images.py
"""

from __future__ import annotations

import pathlib

from ragen_envs.rendering import frame_with_text, save_gif
from ragen_envs.sokoban import SokobanEnv

IMAGES = pathlib.Path(__file__).resolve().parent.parent / "docs" / "images"


def main() -> None:
    from PIL import Image

    for name, config in {"simple": {}, "larger": {"height": 8, "width": 8, "num_boxes": 2},
                         "boxoban": {"height": 10, "width": 10, "num_boxes": 4}}.items():
        env = SokobanEnv(render_mode="rgb_array", config=config)
        env.reset(seed=0)
        path = IMAGES / f"sokoban_{name}.png"
        Image.fromarray(env.render()).save(path)
        print(path)
    env = SokobanEnv(render_mode="rgb_array", config={"height": 8, "width": 8, "num_boxes": 2})
    _, info = env.reset(seed=0)
    cert = info["certificate"]
    frames = [frame_with_text(env.render(), f"certificate: {cert['moves']} moves, {cert['pushes']} pushes\nstart")]
    for i, action in enumerate(cert["actions"]):
        env.step(action)
        frames.append(frame_with_text(env.render(), f"move {i + 1}/{cert['moves']}: {cert['solution'][i]}"))
    print(save_gif(frames, IMAGES / "sokoban_certificate.gif", fps=3))


if __name__ == "__main__":
    main()
