"""Crafter's local and item views drawn from cached cell images, pixel for pixel as Crafter draws them.

Crafter draws the 9x7 local view tile by tile (a texture per material, then each object
alpha-blended over it) and the inventory slot by slot, in Python, every step. Each drawn
cell depends only on (material, object texture) and each inventory picture only on the
inventory, so we draw every such cell once *with Crafter's own drawing functions* and then
assemble views by numpy indexing.

Lighting (``LocalView._light`` and ``_sleep``) runs in one numba pass that does Crafter's
float64 operations in Crafter's order (numba without fast-math neither reorders nor fuses
them), truncating to uint8 as ``Env.render`` does when it stores the view. Its one PIL
step, ``ImageEnhance.Color``, is a grey conversion (Pillow's integer ITU-R 601 formula,
checked against Pillow when first used) and ``Image.blend``, whose every (grey, colour)
result is tabulated by Pillow itself. Night noise is Crafter's own ``_noise``, so the
world's random generator draws exactly as in Crafter.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np
from crafter import engine
from PIL import Image, ImageEnhance

OUTSIDE = -1  # cell key of a position outside the world: Crafter leaves it at the canvas grey
_BACKGROUND = 127  # Crafter's local-view canvas value before drawing
_ITEM_CACHE_LIMIT = 4096


class _CellAtlas:
    """Cell images at one unit size, keyed by (material id, object texture name or None)."""

    def __init__(self, textures: engine.Textures, unit: tuple[int, int], mat_names: dict[int, Any]):
        self._textures = textures
        self.unit = unit
        self._mat_names = dict(mat_names)
        self._keys: dict[tuple[int, str | None], int] = {}
        self._cells: list[np.ndarray] = []
        self.images = np.zeros((0, *unit, 3), np.uint8)
        outside = np.full((*unit, 3), _BACKGROUND, np.uint8)
        self._add((OUTSIDE, None), outside)
        #: atlas index of each material id without an object (index 0: outside the world)
        self.material_index = np.array([self.index(i, None) for i in range(len(self._mat_names))], np.int64)
        self._flush()

    def covers(self, mat_names: dict[int, Any]) -> bool:
        return len(mat_names) == len(self._mat_names)

    def index(self, mat_id: int, texture: str | None) -> int:
        key = (mat_id, texture)
        found = self._keys.get(key)
        if found is None:
            found = self._add(key, self._draw(mat_id, texture))
        return found

    def _draw(self, mat_id: int, texture: str | None) -> np.ndarray:
        """One cell drawn exactly as LocalView does: the material with _draw, the object with _draw_alpha."""
        cell = np.full((*self.unit, 3), _BACKGROUND, np.uint8)
        engine._draw(cell, np.array([0, 0]), self._textures.get(self._mat_names[mat_id], self.unit))
        if texture is not None:
            engine._draw_alpha(cell, np.array([0, 0]), self._textures.get(texture, self.unit))
        return cell

    def _add(self, key, cell: np.ndarray) -> int:
        self._keys[key] = len(self._cells)
        self._cells.append(cell)
        return self._keys[key]

    def _flush(self) -> None:
        if len(self._cells) != len(self.images):
            self.images = np.stack(self._cells)


_NIGHT_TINT = np.array((0, 16, 64), np.float64)  # LocalView._light's tint colour (amount 0.5)
_SLEEP_TINT = np.array((0, 0, 16), np.float64)  # LocalView._sleep's tint colour (amount 0.5)
_NIGHT_SATURATION, _SLEEP_SATURATION = 0.4, 0.0  # their ImageEnhance.Color factors


@functools.lru_cache(1)
def _colour_tables() -> tuple[np.ndarray, np.ndarray] | None:
    """Pillow's Image.blend results per (grey, colour) pair at both factors; None if our grey differs."""
    rng = np.random.default_rng(0)
    sample = np.concatenate([rng.integers(0, 256, (1 << 16, 3)), np.repeat(np.arange(256)[:, None], 3, 1),
                             np.eye(3, dtype=np.int64) * 255]).astype(np.uint8)[None]
    pillow_grey = np.asarray(Image.fromarray(sample).convert("L")).astype(np.int64)
    if not np.array_equal(pillow_grey, _grey(sample.astype(np.int64))):
        return None
    grey = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256, 1)
    colour = np.ascontiguousarray(grey.T)
    return tuple(np.asarray(Image.blend(Image.fromarray(grey), Image.fromarray(colour), factor)).copy()
                 for factor in (_NIGHT_SATURATION, _SLEEP_SATURATION))


def _grey(rgb: np.ndarray) -> np.ndarray:
    """Pillow's RGB to L conversion (ITU-R 601-2 luma in 16-bit fixed point, rounded)."""
    return (rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16


@numba.njit(cache=True)
def _lit(canvas, night, daylight, sleeping,
         night_table, sleep_table, night_tint, sleep_tint):  # pragma: no cover - compiled
    """LocalView._light (then _sleep) on uint8 input, truncated to uint8; same float64 steps as Crafter."""
    width, height = canvas.shape[0], canvas.shape[1]
    out = np.empty((width, height, 3), np.uint8)
    dark = 1 - daylight
    for i in range(width):
        for j in range(height):
            r, g, b = np.int64(night[i, j, 0]), np.int64(night[i, j, 1]), np.int64(night[i, j, 2])
            grey = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16
            for c in range(3):
                tinted = (1 - 0.5) * np.float64(night_table[grey, night[i, j, c]]) + 0.5 * night_tint[c]
                out[i, j, c] = np.uint8(daylight * np.float64(canvas[i, j, c]) + dark * tinted)
            if sleeping:
                r, g, b = np.int64(out[i, j, 0]), np.int64(out[i, j, 1]), np.int64(out[i, j, 2])
                grey = (r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16
                for c in range(3):
                    tinted = (1 - 0.5) * np.float64(sleep_table[grey, out[i, j, c]]) + 0.5 * sleep_tint[c]
                    out[i, j, c] = np.uint8(tinted)
    return out


class FastLocalView(engine.LocalView):
    """LocalView whose tiles come from a cell atlas and whose lighting is one numba pass.

    Returns the view already truncated to uint8, which ``Env.render`` would do when it
    stores the float view into its uint8 canvas (and ``_sleep`` does first thing).
    """

    def __init__(self, world, textures, grid):
        super().__init__(world, textures, grid)
        self._atlases: dict[tuple[int, int], _CellAtlas] = {}

    def __call__(self, player, unit):
        self._unit = np.array(unit)
        self._center = np.array(player.pos)
        canvas = self._tiles(self._center, (int(self._unit[0]), int(self._unit[1])))
        daylight = self._world.daylight
        tables = _colour_tables()
        if tables is None:  # a Pillow whose grey we do not reproduce: Crafter's own lighting
            canvas = self._light(canvas, daylight)
            if player.sleeping:
                canvas = self._sleep(canvas)
            return canvas.astype(np.uint8)
        night = canvas
        if daylight < 0.5:  # LocalView._light's condition; _noise draws from the world's generator
            night = self._noise(night, 2 * (0.5 - daylight), 0.5).astype(np.uint8)
        return _lit(canvas, night, np.float64(daylight), bool(player.sleeping),
                    *tables, _NIGHT_TINT, _SLEEP_TINT)

    def _atlas(self, unit: tuple[int, int]) -> _CellAtlas:
        atlas = self._atlases.get(unit)
        if atlas is None or not atlas.covers(self._world._mat_names):
            atlas = self._atlases[unit] = _CellAtlas(self._textures, unit, self._world._mat_names)
        return atlas

    def _tiles(self, center: np.ndarray, unit: tuple[int, int]) -> np.ndarray:
        atlas = self._atlas(unit)
        world = self._world
        (gw, gh), (aw, ah) = self._grid, self._area
        xs = np.arange(gw) + (int(center[0]) - int(self._offset[0]))
        ys = np.arange(gh) + (int(center[1]) - int(self._offset[1]))
        inside = ((xs >= 0) & (xs < aw))[:, None] & ((ys >= 0) & (ys < ah))[None, :]
        ix, iy = np.clip(xs, 0, aw - 1)[:, None], np.clip(ys, 0, ah - 1)[None, :]
        mats = world._mat_map[ix, iy]
        cells = np.where(inside, atlas.material_index[mats], 0)
        objs = np.where(inside, world._obj_map[ix, iy], 0)
        for x, y in zip(*np.nonzero(objs)):
            texture = world._objects[objs[x, y]].texture
            cells[x, y] = atlas.index(int(mats[x, y]), texture)
        atlas._flush()
        tiles = atlas.images[cells]  # (gw, gh, ux, uy, 3)
        return tiles.transpose(0, 2, 1, 3, 4).reshape(gw * unit[0], gh * unit[1], 3)


class FastItemView(engine.ItemView):
    """ItemView that remembers the picture of each inventory it has drawn (drawn by ItemView itself)."""

    def __init__(self, textures, grid):
        super().__init__(textures, grid)
        self._drawn: dict[tuple, np.ndarray] = {}

    def __call__(self, inventory, unit):
        key = (tuple(np.asarray(unit).tolist()), tuple(inventory.items()))
        canvas = self._drawn.get(key)
        if canvas is None:
            if len(self._drawn) >= _ITEM_CACHE_LIMIT:
                self._drawn.clear()
            canvas = super().__call__(inventory, unit)
            canvas.setflags(write=False)
            self._drawn[key] = canvas
        return canvas


class FastSemanticView(engine.SemanticView):
    """SemanticView writing object ids through the object map at once (objects hold distinct cells)."""

    def __call__(self):
        world = self._world
        canvas = world._mat_map.copy()
        xs, ys = np.nonzero(world._obj_map)
        if len(xs):
            objects = world._objects
            canvas[xs, ys] = [self._obj_ids[type(objects[i])] for i in world._obj_map[xs, ys].tolist()]
        return canvas
