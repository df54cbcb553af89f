"""The accelerated Crafter path gives Crafter's own observations, rewards, infos and stats, byte for byte."""

from __future__ import annotations

import collections

import crafter
import numpy as np
import pytest
from crafter import constants, engine, objects
from crafter import worldgen as crafter_worldgen
from PIL import Image

from llmexplore.envs.base import EPISODE_STATS_KEY
from llmexplore.envs.crafter import adapter, render, worldgen
from llmexplore.envs.crafter.adapter import RENDER_ENV, RENDER_PATHS, CrafterEnv
from llmexplore.errors import ConfigError

#: resources some episodes start with, so that random actions also place tables, furnaces and
#: stone, craft every tool and mine coal, iron and stone (a random policy alone rarely does)
STOCK = {"wood": 9, "stone": 9, "coal": 2, "iron": 2, "sapling": 3, "wood_pickaxe": 1, "stone_pickaxe": 1}


def test_unknown_render_path_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(RENDER_ENV, "fast")
    with pytest.raises(ConfigError) as err:
        CrafterEnv()
    assert RENDER_ENV in str(err.value) and "reference" in str(err.value)


def test_default_is_accelerated_and_reference_is_crafters_own(monkeypatch):
    monkeypatch.delenv(RENDER_ENV, raising=False)
    assert adapter.render_path() == "accelerated"
    assert type(CrafterEnv().crafter) is adapter._AcceleratedCrafter
    monkeypatch.setenv(RENDER_ENV, "reference")
    env = CrafterEnv()
    assert type(env.crafter) is adapter._ReproducibleCrafter
    assert type(env.crafter._local_view) is engine.LocalView


def _world(seed: int, generate) -> engine.World:
    world = engine.World((64, 64), constants.materials, (12, 12))
    world.reset(seed=seed)
    player = objects.Player(world, (32, 32))
    world.add(player)
    generate(world, player)
    return world


@pytest.mark.parametrize("seeds", [range(12)])
def test_generated_worlds_and_generator_state_are_crafters(seeds):
    for seed in seeds:
        ours, theirs = _world(seed, worldgen.generate_world), _world(seed, crafter_worldgen.generate_world)
        assert np.array_equal(ours._mat_map, theirs._mat_map), seed
        assert np.array_equal(ours._obj_map, theirs._obj_map), seed
        placed = [[(type(o), o.pos.tolist()) for o in world.objects] for world in (ours, theirs)]
        assert placed[0] == placed[1], seed
        for a, b in zip(ours.random.get_state(), theirs.random.get_state()):
            assert np.array_equal(a, b), seed


def test_grey_conversion_is_pillows_for_every_colour():
    """The lighting's grey is Pillow's RGB->L on all 2**24 colours (its blend table is Pillow's own)."""
    values = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([(values >> 16) & 255, (values >> 8) & 255, values & 255], -1).reshape(4096, 4096, 3)
    pillow = np.asarray(Image.fromarray(rgb.astype(np.uint8)).convert("L"))
    assert np.array_equal(render._grey(rgb), pillow)
    assert render._colour_tables() is not None


def _same(a, b, where: str) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), where
    else:
        assert type(a) is type(b) and a == b, where


def compare_paths(tmp_path, runs: list[tuple[int, int, int]], stock_every: int = 3) -> collections.Counter:
    """Step both paths in lockstep with one random action stream; every output must be identical.

    ``runs`` holds (seed, steps, episode length). Returns what the steps covered.
    """
    rng = np.random.default_rng(0)
    seen: collections.Counter = collections.Counter()
    for seed, steps, length in runs:
        envs = {}
        for path in RENDER_PATHS:
            env = CrafterEnv(reward=True, length=length, extra_keys=("semantic",), render=path)
            env.seed_episodes(seed)
            env.crafter = crafter.Recorder(env.crafter, tmp_path / f"{path}-{seed}", save_stats=True,
                                           save_video=False, save_episode=False)
            envs[path] = env
        episode = 0

        def reset():
            out = {path: env.reset() for path, env in envs.items()}
            _same(*out.values(), f"seed {seed} episode {episode} reset")
            if episode % stock_every == stock_every - 1:
                for env in envs.values():
                    env.crafter._player.inventory.update(STOCK)

        reset()
        for step in range(steps):
            action = int(rng.integers(len(adapter.ACTIONS)))
            out = {path: env.step(action) for path, env in envs.items()}
            _same(*out.values(), f"seed {seed} step {step}")
            world, player = envs["reference"].crafter._world, envs["reference"].crafter._player
            seen["steps"] += 1
            seen["night"] += world.daylight < 0.5
            seen["sleeping"] += player.sleeping
            _, _, terminated, truncated, info = out["reference"]
            if terminated or truncated:
                states = [env.crafter._world.random.get_state() for env in envs.values()]
                _same(*[dict(enumerate(s)) for s in states], f"seed {seed} episode {episode} generator")
                seen["deaths"] += terminated
                seen["episodes"] += 1
                for name, count in info[EPISODE_STATS_KEY].items():
                    if name.startswith("achievement_") and count:
                        seen[name] += 1
                episode += 1
                reset()
        files = [(tmp_path / f"{path}-{seed}" / "stats.jsonl").read_bytes() for path in RENDER_PATHS]
        assert files[0] == files[1], f"seed {seed}: stats.jsonl differ"
    return seen


def test_paths_identical_for_a_few_episodes(tmp_path):
    seen = compare_paths(tmp_path, [(3, 1500, 10000)], stock_every=2)
    assert seen["deaths"] >= 2 and seen["achievement_place_table"] >= 1


@pytest.mark.slow
def test_paths_identical_for_20000_steps(tmp_path):
    """Deaths, time-outs, sleep, night-time darkness, tables, furnaces, many achievements: all identical."""
    seen = compare_paths(tmp_path, [(0, 8000, 10000), (1, 6000, 200), (2, 6000, 10000)])
    print(dict(seen))
    assert seen["steps"] >= 20000
    assert seen["deaths"] >= 20 and seen["episodes"] > seen["deaths"]
    assert seen["night"] >= 1000 and seen["sleeping"] >= 500
    for name in ("place_table", "place_furnace", "place_stone", "place_plant", "make_wood_pickaxe",
                 "make_stone_pickaxe", "collect_wood", "collect_stone", "wake_up"):
        assert seen[f"achievement_{name}"] >= 1, name


def test_run_record_names_the_crafter_path(monkeypatch):
    from llmexplore.benchmarks.run.provenance import environment_info
    from llmexplore.envs import make_adapter

    crafter_adapter = make_adapter("crafter:reward-free")
    monkeypatch.delenv(RENDER_ENV, raising=False)
    info = environment_info(crafter_adapter)
    assert info["crafter_render"] == "accelerated" and info["crafter"] == "1.8.3"
    monkeypatch.setenv(RENDER_ENV, "reference")
    assert crafter_adapter.environment_info()["crafter_render"] == "reference"
