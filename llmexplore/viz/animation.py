"""Animation frames (screen, a status line, the reward plot) and the GIF/MP4 writers.

One frame per step: frame t shows the observation action t led to, the step number and
both rewards it earned, and the plot cursor at t. The step number makes every frame
differ from the one before, so GIF encoders cannot merge frames and the frame count is
the episode length.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from llmexplore.errors import ConfigError, require, shown
from llmexplore.viz.reward_plot import RewardPlot
from llmexplore.viz.screens import BACKGROUND, monospace_font, text_panel

FORMATS = ("gif", "mp4")
MP4_BLOCK = 16  # H.264 wants sides that are multiples of 16


def default_format() -> str:
    """MP4 streams frames to ffmpeg (small files, little memory) when imageio-ffmpeg is
    installed; GIF otherwise, which Pillow builds in memory (about 0.25 MB per frame)."""
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        return "gif"
    return "mp4"


class FrameComposer:
    """Stacks the screen, text lines and the plot into frames of one fixed size."""

    def __init__(self, screen_shape: tuple[int, int], plot: RewardPlot, caption_lines: int, font_size: int = 12):
        self.font = monospace_font(font_size)
        self.cell_w = int(round(self.font.getlength("M")))
        ascent, descent = self.font.getmetrics()
        self.line_h = ascent + descent
        self.width = max(screen_shape[1], plot.image.shape[1])
        self.screen_shape = screen_shape
        self.plot = plot
        self.text_lines = 1 + caption_lines

    def compose(self, screen: np.ndarray, step: int, status: str, caption: str | None) -> np.ndarray:
        """One frame, (H, width, 3) uint8 and the same size at every step: the screen, the status line with
        ``caption`` under it (None: the screen shows it), and the reward plot with its cursor at ``step``."""
        text = status if caption is None else f"{status}\n{caption}"
        panel = text_panel(text, self.width, self.text_lines, self.font, self.cell_w, self.line_h)
        parts = [self._pad(screen), panel, self._pad(self.plot.with_cursor(step))]
        return np.concatenate(parts, axis=0)

    def _pad(self, image: np.ndarray) -> np.ndarray:
        if image.shape[1] == self.width:
            return image
        out = np.empty((image.shape[0], self.width, 3), dtype=np.uint8)
        out[:] = BACKGROUND
        left = (self.width - image.shape[1]) // 2
        out[:, left : left + image.shape[1]] = image
        return out


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside ``path`` that replaces it only when writing succeeded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_animation(frames: Iterable[np.ndarray], path: Path, fps: float,
                    palette_source: Sequence[np.ndarray] = ()) -> int:
    """Write frames as GIF or MP4 (by the suffix); returns the number of frames written.

    A GIF uses one 256-colour palette taken from ``palette_source`` (a few frames of the
    episode; the first frame when empty): mapping to a fixed palette is 20x faster than
    Pillow's per-frame adaptive palette, the cost that dominated GIF writing.
    """
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ConfigError(f"unknown animation format {shown(fmt)}", hint=f"choose one of {list(FORMATS)}")
    with atomic_path(path) as tmp:
        return _write_gif(frames, tmp, fps, palette_source) if fmt == "gif" else _write_mp4(frames, tmp, fps)


def _write_gif(frames: Iterable[np.ndarray], path: Path, fps: float, palette_source: Sequence[np.ndarray]) -> int:
    from PIL import Image

    count = 0
    palette = _gif_palette(palette_source) if len(palette_source) else None

    def images() -> Iterator[Image.Image]:
        nonlocal count, palette
        for frame in frames:
            count += 1
            if palette is None:
                palette = _gif_palette([frame])
            yield Image.fromarray(frame).quantize(palette=palette, dither=Image.Dither.NONE)

    stream = images()
    first = next(stream, None)
    if first is None:
        raise ValueError("an animation needs at least one frame")
    first.save(path, format="GIF", save_all=True, append_images=stream, duration=int(round(1000 / fps)), loop=0)
    return count


def _gif_palette(samples: Sequence[np.ndarray]):
    from PIL import Image

    width = max(s.shape[1] for s in samples)
    stacked = np.concatenate([np.pad(s, ((0, 0), (0, width - s.shape[1]), (0, 0))) for s in samples], axis=0)
    return Image.fromarray(stacked).quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


def _write_mp4(frames: Iterable[np.ndarray], path: Path, fps: float) -> int:
    imageio = require("imageio.v2", "media", "writing MP4 animations")
    require("imageio_ffmpeg", "media", "writing MP4 animations")
    count = 0
    writer = imageio.get_writer(str(path), format="FFMPEG", mode="I", fps=fps, codec="libx264",
                                pixelformat="yuv420p", macro_block_size=1, ffmpeg_log_level="error")
    try:
        for frame in frames:
            writer.append_data(_pad_to_block(frame))
            count += 1
    finally:
        writer.close()
    return count


def _pad_to_block(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    ph, pw = (-h) % MP4_BLOCK, (-w) % MP4_BLOCK
    if not ph and not pw:
        return frame
    return np.pad(frame, ((0, ph), (0, pw), (0, 0)))
