"""What an episode looks like on screen, one image per observation.

Each environment family names its ``Screen`` (``EnvFamily.screen``), its own (NetHack's terminal,
``envs/nethack/screen.py``) or a generic one here: ``ImageScreen`` scales an image observation
up (Crafter's). A family without one (observations that are not pictures) falls back to
its caption as text (``CaptionScreen``), so every adapter can be visualized. ``glyph_masks``
and ``monospace_font`` draw text for any screen.
"""

from __future__ import annotations

import textwrap
from functools import lru_cache
from typing import Callable, Mapping, Protocol

import numpy as np

from llmexplore.envs.base import EnvAdapter
from llmexplore.envs.family import import_path
from llmexplore.envs.registry import find_family

BACKGROUND = np.array([0, 0, 0], dtype=np.uint8)
TEXT = np.array([220, 220, 220], dtype=np.uint8)

class Screen(Protocol):
    #: observation keys to ask the adapter for (``make_env(extra_keys=...)``)
    extra_keys: tuple[str, ...]
    #: whether the picture already shows the caption (NetHack's message line does)
    shows_caption: bool
    #: what the adapter's caption is called in summaries ("message" on NetHack)
    caption_label: str

    def render(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """An RGB image (H, W, 3) uint8 of the same size for every observation."""


@lru_cache(maxsize=None)
def monospace_font(size: int):
    """DejaVu Sans Mono, which matplotlib ships, so no system font is needed."""
    from matplotlib import font_manager
    from PIL import ImageFont

    path = font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans Mono"), fallback_to_default=False)
    return ImageFont.truetype(path, size)


@lru_cache(maxsize=None)
def glyph_masks(size: int) -> np.ndarray:
    """Coverage (0..1) of each byte's glyph in one terminal cell: [256, cell_h, cell_w]."""
    from PIL import Image, ImageDraw

    font = monospace_font(size)
    width = int(round(font.getlength("M")))
    ascent, descent = font.getmetrics()
    height = ascent + descent
    masks = np.zeros((256, height, width), dtype=np.float32)
    for code in range(33, 256):
        if 127 <= code < 160:  # control characters in latin-1
            continue
        cell = Image.new("L", (width, height), 0)
        ImageDraw.Draw(cell).text((0, 0), bytes([code]).decode("latin-1"), font=font, fill=255)
        masks[code] = np.asarray(cell, dtype=np.float32) / 255.0
    return masks


class ImageScreen:
    """An image observation (Crafter's view), scaled up without blurring."""

    extra_keys: tuple[str, ...] = ()
    shows_caption = False
    caption_label = "caption"

    def __init__(self, key: str = "image", scale: int = 6):
        self.key, self.scale = key, scale

    def render(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The image under ``key``, each pixel a ``scale``-wide square: (H * scale, W * scale, 3) uint8."""
        image = np.asarray(obs[self.key], dtype=np.uint8)
        return np.repeat(np.repeat(image, self.scale, axis=0), self.scale, axis=1)


class CaptionScreen:
    """For observations that are not pictures: the adapter's caption as a text page."""

    extra_keys: tuple[str, ...] = ()
    shows_caption = True
    caption_label = "caption"

    def __init__(self, caption: Callable[[Mapping[str, np.ndarray]], str], width: int = 640, lines: int = 14,
                 font_size: int = 13):
        self.caption = caption
        self.font = monospace_font(font_size)
        self.cell_w = int(round(self.font.getlength("M")))
        ascent, descent = self.font.getmetrics()
        self.line_h = ascent + descent
        self.width, self.lines = width, lines

    def render(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The caption (``(no caption)`` if empty) wrapped on a fixed panel: (lines*line_h+4, W, 3) uint8."""
        return text_panel(self.caption(obs) or "(no caption)", self.width, self.lines, self.font, self.cell_w,
                          self.line_h)


def text_panel(text: str, width: int, lines: int, font, cell_w: int, line_h: int) -> np.ndarray:
    """Wrapped text on a dark background, cut to ``lines`` lines."""
    from PIL import Image, ImageDraw

    wrapped: list[str] = []
    for paragraph in text.splitlines() or [""]:
        wrapped.extend(textwrap.wrap(paragraph, max(width // cell_w - 1, 8)) or [""])
    panel = Image.new("RGB", (width, lines * line_h + 4), tuple(int(v) for v in BACKGROUND))
    draw = ImageDraw.Draw(panel)
    for i, line in enumerate(wrapped[:lines]):
        draw.text((4, 2 + i * line_h), line, font=font, fill=tuple(int(v) for v in TEXT))
    return np.asarray(panel)


def screen_for(adapter: EnvAdapter) -> Screen:
    """The screen the adapter's family names, else its caption as text."""
    family = find_family(adapter.family)
    if family is None or family.screen is None:
        return CaptionScreen(adapter.caption)
    return import_path(family.screen.factory)(**family.screen.options)
