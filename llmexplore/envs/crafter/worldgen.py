"""Crafter's world generation (crafter 1.8.3 ``worldgen.generate_world``), per grid instead of per tile.

The same world, bit for bit, because each step is the same arithmetic:

- noise: Crafter calls opensimplex's numba-compiled ``_noise3`` once per tile and field;
  we call that same function over the grid from one numba loop (no fast-math, so no
  reordering or fused multiply-add), with coordinates divided exactly as Crafter divides
  them. Noise has no side effects, so evaluating fields Crafter skips changes nothing.
- the +, -, *, / and sqrt Crafter applies to scalars are IEEE-exact in numpy arrays too;
  ``np.exp`` is not guaranteed to be (its SIMD loop may differ from the scalar path), so it
  is applied per scalar as Crafter does.
- random draws: Crafter draws ``world.random.uniform()`` only in some branches. The
  branches run in Crafter's order in a numba loop over pre-drawn numbers; the generator is
  then rewound and advanced by exactly the count used (a batch of n uniforms is the same
  stream as n single draws), so later draws, and the game, are unchanged.
- objects are added in Crafter's order, so object indices and update order match.

Without numba opensimplex runs in pure Python; we then use Crafter's own generator.
"""

from __future__ import annotations

import numba
import numpy as np
import opensimplex
from crafter import constants, objects
from crafter import worldgen as crafter_worldgen
from opensimplex import internals as simplex_internals

_COMPILED_NOISE = isinstance(simplex_internals._noise3, numba.core.registry.CPUDispatcher)
_COW, _ZOMBIE, _SKELETON = 1, 2, 3
_CREATURES = {_COW: objects.Cow, _ZOMBIE: objects.Zombie, _SKELETON: objects.Skeleton}


@numba.njit(cache=True)
def _noise_grid(xs, ys, z, perm, perm_grad_index3):  # pragma: no cover - compiled
    out = np.empty(xs.shape, np.float64)
    for i in range(xs.shape[0]):
        for j in range(xs.shape[1]):
            out[i, j] = simplex_internals._noise3(xs[i, j], ys[i, j], z, perm, perm_grad_index3)
    return out


@numba.njit(cache=True)
def _materials(start, water, mountain, cave, tunnel_h, tunnel_v, coal, iron, lava, sand, tree,
               uniforms, ids):  # pragma: no cover - compiled
    """Crafter's ``_set_material`` branch order; returns material ids, tunnels and draws used."""
    grass, path, coal_id, iron_id, diamond = ids[0], ids[1], ids[2], ids[3], ids[4]
    lava_id, stone, sand_id, water_id, tree_id = ids[5], ids[6], ids[7], ids[8], ids[9]
    width, height = start.shape
    out = np.empty((width, height), np.uint8)
    tunnels = np.zeros((width, height), np.bool_)
    k = 0
    for x in range(width):
        for y in range(height):
            m = mountain[x, y]
            w = water[x, y]
            if start[x, y] > 0.5:
                out[x, y] = grass
            elif m > 0.15:
                if cave[x, y] > 0.15 and m > 0.3:
                    out[x, y] = path
                elif tunnel_h[x, y] > 0.4:
                    out[x, y] = path
                    tunnels[x, y] = True
                elif tunnel_v[x, y] > 0.4:
                    out[x, y] = path
                    tunnels[x, y] = True
                else:
                    placed = False
                    if coal[x, y] > 0:
                        k += 1
                        if uniforms[k - 1] > 0.85:
                            out[x, y] = coal_id
                            placed = True
                    if not placed and iron[x, y] > 0.4:
                        k += 1
                        if uniforms[k - 1] > 0.75:
                            out[x, y] = iron_id
                            placed = True
                    if not placed and m > 0.18:
                        k += 1
                        if uniforms[k - 1] > 0.994:
                            out[x, y] = diamond
                            placed = True
                    if not placed:
                        if m > 0.3 and lava[x, y] > 0.35:
                            out[x, y] = lava_id
                        else:
                            out[x, y] = stone
            elif 0.25 < w and w <= 0.35 and sand[x, y] > -0.2:
                out[x, y] = sand_id
            elif 0.3 < w:
                out[x, y] = water_id
            else:
                out[x, y] = grass
                if tree[x, y] > 0:
                    k += 1
                    if uniforms[k - 1] > 0.8:
                        out[x, y] = tree_id
    return out, tunnels, k


@numba.njit(cache=True)
def _creatures(materials, tunnels, dist, uniforms, grass, sand, path):  # pragma: no cover - compiled
    """Crafter's ``_set_object`` branch order; returns (x, y, kind) rows in Crafter's order and draws used."""
    width, height = materials.shape
    found = np.zeros((width * height, 3), np.int64)
    n = 0
    k = 0
    for x in range(width):
        for y in range(height):
            material = materials[x, y]
            if material != grass and material != sand and material != path:
                continue
            kind = 0
            if dist[x, y] > 3 and material == grass:
                k += 1
                if uniforms[k - 1] > 0.985:
                    kind = _COW
            if kind == 0 and dist[x, y] > 10:
                k += 1
                if uniforms[k - 1] > 0.993:
                    kind = _ZOMBIE
            if kind == 0 and material == path and tunnels[x, y]:
                k += 1
                if uniforms[k - 1] > 0.95:
                    kind = _SKELETON
            if kind:
                found[n, 0] = x
                found[n, 1] = y
                found[n, 2] = kind
                n += 1
    return found[:n], k


def _field(noise, x, y, z: int, sizes, normalize: bool = True) -> np.ndarray:
    """Crafter's ``_simplex`` over the whole grid: the same divisions and sums in the same order."""
    if not isinstance(sizes, dict):
        sizes = {sizes: 1}
    value = 0
    for size, weight in sizes.items():
        value = value + weight * noise(x / size, y / size, z)
    if normalize:
        value = value / sum(sizes.values())
    return value


def _exp_per_scalar(values: np.ndarray) -> np.ndarray:
    """``np.exp`` of each element as a numpy scalar, the call Crafter makes per tile."""
    flat = values.ravel()
    return np.fromiter((np.exp(v) for v in flat), np.float64, count=flat.size).reshape(values.shape)


def _draws(random: np.random.RandomState, bound: int, consume) -> tuple:
    """``consume(uniforms)`` on pre-drawn uniforms; ``random`` is then left as if it drew only those used."""
    state = random.get_state()
    result = consume(random.uniform(size=bound))
    used = result[-1]
    random.set_state(state)
    random.uniform(size=used)
    return result


def generate_world(world, player) -> None:
    """Fill ``world`` exactly as ``crafter.worldgen.generate_world(world, player)`` does."""
    if not _COMPILED_NOISE:
        crafter_worldgen.generate_world(world, player)
        return
    simplex = opensimplex.OpenSimplex(seed=world.random.randint(0, 2 ** 31 - 1))
    perm, grad = simplex._perm, simplex._perm_grad_index3

    def noise(xs, ys, z):
        xs, ys = np.broadcast_arrays(xs, ys)
        return _noise_grid(np.ascontiguousarray(xs, np.float64), np.ascontiguousarray(ys, np.float64),
                           z, perm, grad)

    width, height = world.area
    x, y = np.meshgrid(np.arange(width), np.arange(height), indexing="ij")
    px, py = player.pos[0], player.pos[1]
    start = 4 - np.sqrt((x - px) ** 2 + (y - py) ** 2)
    start = start + 2 * _field(noise, x, y, 8, 3)
    start = 1 / (1 + _exp_per_scalar(-start))
    water = _field(noise, x, y, 3, {15: 1, 5: 0.15}, False) + 0.1
    water = water - 2 * start
    mountain = _field(noise, x, y, 0, {15: 1, 5: 0.3})
    mountain = mountain - (4 * start + 0.3 * water)
    fields = (
        _field(noise, x, y, 6, 7),  # cave
        _field(noise, 2 * x, y / 5, 7, 3),  # horizontal tunnel
        _field(noise, x / 5, 2 * y, 7, 3),  # vertical tunnel
        _field(noise, x, y, 1, 8),  # coal
        _field(noise, x, y, 2, 6),  # iron
        _field(noise, x, y, 6, 5),  # lava
        _field(noise, x, y, 4, 9),  # sand
        _field(noise, x, y, 5, 7),  # tree
    )
    ids = world._mat_ids
    names = ("grass", "path", "coal", "iron", "diamond", "lava", "stone", "sand", "water", "tree")
    material_ids = np.array([ids[name] for name in names], np.int64)
    materials, tunnels, _ = _draws(world.random, 3 * width * height,
                                   lambda u: _materials(start, water, mountain, *fields, u, material_ids))
    world._mat_map[:, :] = materials

    dist = np.sqrt((x - px) ** 2 + (y - py) ** 2)
    walkable = [ids[name] for name in ("grass", "sand", "path")]
    assert sorted(constants.walkable) == sorted(("grass", "sand", "path")), "Crafter's walkable set changed"
    rows, _ = _draws(world.random, 3 * width * height,
                     lambda u: _creatures(materials, tunnels, dist, u, *walkable))
    for cx, cy, kind in rows.tolist():
        cls = _CREATURES[kind]
        world.add(cls(world, (cx, cy)) if cls is objects.Cow else cls(world, (cx, cy), player))
