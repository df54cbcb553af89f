"""NetHack's screen for the visualiser: the 24x80 terminal drawn from ``tty_chars`` and ``tty_colors``
in a monospace font (``EnvFamily.screen`` of NetHack and MiniHack)."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from llmexplore.viz.screens import TEXT, glyph_masks

#: NetHack's 16 terminal colours (CLR_BLACK .. CLR_WHITE); black is drawn dark grey, as
#: terminals with NetHack's ``use_darkgray`` do, so black monsters stay visible.
TERMINAL_PALETTE = np.array([
    (85, 85, 85), (170, 0, 0), (0, 170, 0), (170, 85, 0), (0, 0, 170), (170, 0, 170), (0, 170, 170), (170, 170, 170),
    (128, 128, 128), (255, 85, 85), (85, 255, 85), (255, 255, 85), (85, 85, 255), (255, 85, 255), (85, 255, 255),
    (255, 255, 255),
], dtype=np.uint8)


class TerminalScreen:
    """NetHack's 24x80 terminal; a glyph atlas per colour makes a frame one array lookup."""

    extra_keys = ("tty_chars", "tty_colors", "tty_cursor")
    shows_caption = True
    caption_label = "message"

    def __init__(self, font_size: int = 13):
        masks = glyph_masks(font_size)  # 256, h, w
        # atlas[colour, char] = the glyph drawn in that colour on black: [16, 256, h, w, 3]
        self.atlas = np.rint(masks[None, :, :, :, None] * TERMINAL_PALETTE[:, None, None, None, :]).astype(np.uint8)
        self.cell = masks.shape[1:]

    def render(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The terminal as an RGB uint8 image, (24 x cell height, 80 x cell
        width, 3), the cursor underlined when ``tty_cursor`` is given."""
        chars = np.asarray(obs["tty_chars"], dtype=np.uint8)
        colors = np.asarray(obs["tty_colors"]).astype(np.int64) & 15
        rows, cols = chars.shape
        h, w = self.cell
        image = self.atlas[colors, chars].transpose(0, 2, 1, 3, 4).reshape(rows * h, cols * w, 3)
        cursor = obs.get("tty_cursor")
        if cursor is not None:
            r, c = (int(v) for v in np.asarray(cursor).reshape(-1)[:2])
            if 0 <= r < rows and 0 <= c < cols:
                image[r * h + h - 2 : r * h + h, c * w : (c + 1) * w] = TEXT
        return image
