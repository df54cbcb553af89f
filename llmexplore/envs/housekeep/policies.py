"""Reference policies: an oracle that knows the correct placements, and uniform random.

They bound what a learned agent can reach: the oracle the ceiling (and a check that every
eligible episode is solvable within the action set and the capacity rule), random the
floor. The oracle reads the env's hidden state; it acts only through the env's actions.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from llmexplore.envs.housekeep.env import HousekeepEnv
from llmexplore.envs.housekeep.packing import fits
from llmexplore.envs.housekeep.world import PLACE, Rearrangement, go_receptacle, go_room, pick

Policy = Callable[[HousekeepEnv, dict], int]


def final_assignment(world: Rearrangement) -> np.ndarray | None:
    """A correct receptacle for every object such that each receptacle's objects fit on it.

    Depth-first search, objects with the fewest options first; an object already on a
    correct receptacle tries to stay. None when no such assignment exists.
    """
    layout = world.layout
    n = world.num_objects
    options = []
    for j in range(n):
        correct = [int(r) for r in np.flatnonzero(world.goals[:, j])]
        here = int(world.location[j])
        correct.sort(key=lambda r: (r != here, world.room_of_receptacle(r) != world.room_of_receptacle(here)
                                    if here >= 0 else False))
        options.append(correct)
    order = sorted(range(n), key=lambda j: len(options[j]))
    load: dict[int, list[tuple[float, float]]] = {}
    target = np.full(n, -1, dtype=np.int64)

    def search(i: int) -> bool:
        if i == n:
            return True
        j = order[i]
        for r in options[j]:
            items = load.get(r, []) + [world.footprints[j]]
            if fits(*layout.rec_size[r], items):
                load[r], target[j] = items, r
                if search(i + 1):
                    return True
                load[r] = items[:-1]
        return False

    return target if search(0) else None


class Oracle:
    """Moves objects to a feasible final assignment, one at a time, nearest first.

    When every remaining object waits for room that another remaining object occupies, it
    carries one of the occupants to a receptacle no remaining object needs, and goes on.
    """

    def __init__(self) -> None:
        self._world: Rearrangement | None = None
        self._target: np.ndarray | None = None

    def __call__(self, env: HousekeepEnv, _obs: dict | None = None) -> int:
        return self.act(env.world)

    def act(self, world: Rearrangement) -> int:
        """The next action towards the final assignment (planned again for each new world);
        with nothing left to do, or no way to do it, it stays put by re-entering its room."""
        if world is not self._world:
            self._world, self._target = world, final_assignment(world)
        target = self._target
        if target is None:
            return go_room(world.room)
        remaining = [j for j in range(world.num_objects) if world.location[j] != target[j]]
        if world.held >= 0:
            j = world.held
            dest = int(target[j])
            if not world.can_place(dest, j):
                dest = self._parking(world, j, {int(target[k]) for k in remaining if k != j})
            return go_room(world.room) if dest is None else self._walk_or(world, dest, PLACE)
        if not remaining:
            return go_room(world.room)
        ready = [j for j in remaining if world.can_place(int(target[j]), j)]
        if not ready:  # deadlock: move an object that sits where another one must go
            needed = {int(target[k]) for k in remaining}
            ready = [j for j in remaining if int(world.location[j]) in needed] or remaining
        here = [j for j in ready if world.room_of_receptacle(int(world.location[j])) == world.room]
        j = (here or ready)[0]
        return self._walk_or(world, int(world.location[j]), pick(j))

    @staticmethod
    def _parking(world: Rearrangement, obj: int, needed: set[int]) -> int | None:
        candidates = [r for r in range(len(world.layout.rec_room)) if r not in needed and world.can_place(r, obj)]
        same_room = [r for r in candidates if world.room_of_receptacle(r) == world.room]
        return (same_room or candidates or [None])[0]

    @staticmethod
    def _walk_or(world: Rearrangement, receptacle: int, then: int) -> int:
        room = world.room_of_receptacle(receptacle)
        if room != world.room:
            return go_room(room)
        if world.at != receptacle:
            return go_receptacle(int(world.layout.rec_slot[receptacle]))
        return then


def random_policy(seed: int = 0) -> Policy:
    """Uniform over the whole action set, as an untrained agent acts."""
    rng = np.random.default_rng(seed)
    return lambda env, _obs: int(rng.integers(env.action_space.n))


def run_episode(env: HousekeepEnv, policy: Policy, options: dict | None = None) -> dict[str, Any]:
    """Play one episode (a chosen one with ``options={"scene": s, "episode": i}``); return its stats."""
    obs, _ = env.reset(options=options)
    while True:
        obs, _, terminated, truncated, info = env.step(policy(env, obs))
        if terminated or truncated:
            return info["episode_extra_stats"]
