"""The per-step reward plot shown under each animation frame.

The figure is drawn once per episode; each frame copies its pixels and draws a cursor at
the current step, which costs a copy instead of a matplotlib redraw per frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

EXTRINSIC_COLOR = "#1f77b4"
INTRINSIC_COLOR = "#d62728"
CURSOR = np.array([255, 200, 0], dtype=np.uint8)


class RewardPlot:
    """Extrinsic (top) and intrinsic (bottom) reward per step, sharing the step axis."""

    def __init__(self, extrinsic: np.ndarray, intrinsic: np.ndarray, width: int, height: int = 200,
                 method: str = "intrinsic"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        dpi = 100
        steps = np.arange(1, len(extrinsic) + 1)
        self.figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        canvas = FigureCanvasAgg(self.figure)
        top, bottom = self.figure.subplots(2, 1, sharex=True)
        for ax, values, color, label in ((top, extrinsic, EXTRINSIC_COLOR, "extrinsic"),
                                         (bottom, intrinsic, INTRINSIC_COLOR, f"intrinsic ({method})")):
            ax.plot(steps, values, color=color, linewidth=0.8, drawstyle="steps-mid")
            ax.set_ylabel(label, fontsize=7)
            ax.tick_params(labelsize=6, length=2)
            ax.grid(alpha=0.3, linewidth=0.5)
        bottom.set_xlabel("step", fontsize=7, labelpad=1)
        bottom.set_xlim(0.5, max(len(steps), 1) + 0.5)
        self.figure.subplots_adjust(left=0.1, right=0.99, top=0.97, bottom=0.17, hspace=0.12)
        canvas.draw()
        self.image = np.asarray(canvas.buffer_rgba())[..., :3].copy()
        fig_h = self.image.shape[0]
        self._x = np.rint(bottom.transData.transform(np.c_[steps, np.zeros(len(steps))])[:, 0]).astype(int)
        self._x = np.clip(self._x, 0, self.image.shape[1] - 1)
        y_top = top.get_window_extent().y1
        y_bottom = bottom.get_window_extent().y0
        self._rows = (int(fig_h - y_top), int(fig_h - y_bottom))

    def with_cursor(self, step: int) -> np.ndarray:
        """The plot with a vertical line at ``step`` (1-based, as on the axis)."""
        image = self.image.copy()
        x = self._x[min(max(step, 1), len(self._x)) - 1] if len(self._x) else 0
        image[self._rows[0] : self._rows[1], x] = CURSOR
        return image

    def save(self, path: str | Path) -> None:
        """A PNG of the plot without cursor (written by the caller atomically)."""
        self.figure.savefig(str(path), dpi=self.figure.dpi, format="png")
