"""Parts of the visualizer that need no trained agent: screens, caption tables, animations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from llmexplore.envs import make_adapter
from llmexplore.envs.nethack.screen import TERMINAL_PALETTE, TerminalScreen
from llmexplore.envs.nethack.text import encode_message
from llmexplore.errors import ConfigError
from llmexplore.viz.animation import FrameComposer, write_animation
from llmexplore.viz.messages import NO_CAPTION, caption_stats, merge_stats
from llmexplore.viz.reward_plot import RewardPlot
from llmexplore.viz.screens import CaptionScreen, ImageScreen, glyph_masks, screen_for


def test_terminal_screen_draws_each_cell_in_its_colour():
    screen = TerminalScreen(font_size=13)
    masks = glyph_masks(13)
    h, w = masks.shape[1:]
    chars = np.full((24, 80), ord(" "), dtype=np.uint8)
    colors = np.zeros((24, 80), dtype=np.int8)
    chars[3, 10], colors[3, 10] = ord("@"), 1  # red
    chars[5, 20], colors[5, 20] = ord("#"), 4 | 8  # bright blue
    image = screen.render({"tty_chars": chars, "tty_colors": colors})
    assert image.shape == (24 * h, 80 * w, 3) and image.dtype == np.uint8
    at = image[3 * h : 4 * h, 10 * w : 11 * w].reshape(-1, 3)
    hash_cell = image[5 * h : 6 * h, 20 * w : 21 * w].reshape(-1, 3)
    # each pixel is the glyph's coverage times the cell's colour
    np.testing.assert_allclose(at, masks[ord("@")].reshape(-1, 1) * TERMINAL_PALETTE[1], atol=1)
    np.testing.assert_allclose(hash_cell, masks[ord("#")].reshape(-1, 1) * TERMINAL_PALETTE[12], atol=1)
    assert at[:, 0].max() > 100 and at[:, 1:].max() == 0  # red only
    assert image[0:h, 0:w].max() == 0  # blanks stay black


def test_terminal_cursor_is_drawn_under_its_cell():
    screen = TerminalScreen()
    h, w = screen.cell
    chars = np.full((24, 80), ord(" "), dtype=np.uint8)
    image = screen.render({"tty_chars": chars, "tty_colors": np.zeros((24, 80), np.int8),
                           "tty_cursor": np.array([2, 7], np.uint8)})
    assert image[2 * h + h - 1, 7 * w : 8 * w].min() > 0
    assert image[2 * h + h - 1, 8 * w : 9 * w].max() == 0


def test_screens_by_family_and_the_caption_fallback():
    assert isinstance(screen_for(make_adapter("nethack:score")), TerminalScreen)
    assert isinstance(screen_for(make_adapter("crafter:reward")), ImageScreen)
    image = ImageScreen("image", scale=3).render({"image": np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)})
    assert image.shape == (192, 192, 3)
    caption = CaptionScreen(lambda obs: obs["text"], width=320, lines=4)
    a, b = caption.render({"text": "the cup is in the sink"}), caption.render({"text": "the plate is on the shelf"})
    assert a.shape == b.shape and not np.array_equal(a, b)


def test_caption_table_counts_and_rewards_each_caption():
    captions = ["You kill the newt!", "", "You kill the newt!", "It's a wall.", ""]
    intrinsic = np.array([1.0, 0.0, 0.5, 0.25, 0.0])
    extrinsic = np.array([2.0, 0.0, 2.0, -0.01, 0.0])
    table = caption_stats(captions, intrinsic, extrinsic)
    rows = {r.text: r for r in table}
    assert [r.text for r in table][:2] == ["You kill the newt!", NO_CAPTION]  # ties: more intrinsic reward first
    assert rows["You kill the newt!"].count == 2 and rows["You kill the newt!"].intrinsic == pytest.approx(1.5)
    assert rows["You kill the newt!"].intrinsic_mean == pytest.approx(0.75)
    assert rows["It's a wall."].extrinsic == pytest.approx(-0.01)
    merged = merge_stats([table, caption_stats(["It's a wall."] * 3, np.ones(3), np.zeros(3))])
    assert merged[0].text == "It's a wall." and merged[0].count == 4 and merged[0].intrinsic == pytest.approx(3.25)
    with pytest.raises(ValueError):
        caption_stats(["a"], np.zeros(2), np.zeros(2))


def test_nethack_caption_is_the_message():
    adapter = make_adapter("nethack:score")
    assert adapter.caption({"message": encode_message("Welcome to NetHack!")}) == "Welcome to NetHack!"


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_animation_has_one_frame_per_step(tmp_path: Path, fmt: str):
    if fmt == "mp4":
        pytest.importorskip("imageio_ffmpeg")
    steps = 23
    rewards = np.zeros(steps)
    plot = RewardPlot(rewards, np.linspace(0, 1, steps), width=200, height=120)
    composer = FrameComposer((40, 200), plot, caption_lines=1)
    screen = np.zeros((40, 200, 3), dtype=np.uint8)  # the same picture every step
    frames = (composer.compose(screen, t, f"step {t}", "caption") for t in range(1, steps + 1))
    path = tmp_path / f"episode.{fmt}"
    assert write_animation(frames, path, fps=10) == steps
    assert _frame_count(path) == steps
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


def test_unknown_animation_format_is_refused(tmp_path: Path):
    with pytest.raises(ConfigError, match="unknown animation format"):
        write_animation(iter([np.zeros((8, 8, 3), np.uint8)]), tmp_path / "a.avi", fps=10)


def test_plot_cursor_moves_with_the_step():
    plot = RewardPlot(np.zeros(50), np.zeros(50), width=300, height=150)
    first, last = plot.with_cursor(1), plot.with_cursor(50)
    changed_first = np.flatnonzero((first != plot.image).any(axis=(0, 2)))
    changed_last = np.flatnonzero((last != plot.image).any(axis=(0, 2)))
    assert len(changed_first) == 1 and len(changed_last) == 1 and changed_first[0] < changed_last[0]


def _frame_count(path: Path) -> int:
    if path.suffix == ".gif":
        with Image.open(path) as image:
            return image.n_frames
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path), format="FFMPEG")
    try:
        return reader.count_frames()
    finally:
        reader.close()
