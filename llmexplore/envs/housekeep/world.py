"""The rules of one Housekeep episode: moving between rooms and receptacles, picking, placing.

The agent is always in one room, either at one of its receptacles or not at any (just
arrived). It carries at most one object. Actions, in a fixed layout for every scene:

* ``go to room r`` (r < MAX_ROOMS): enter room r of the house; the agent is at no receptacle.
* ``go to receptacle k`` (k < MAX_RECEPTACLES): walk to the k-th receptacle of this room.
* ``pick object j`` (j < MAX_OBJECTS): take object j from the receptacle the agent is at.
* ``place``: put the carried object on the receptacle the agent is at, if its footprint fits.

An action that names nothing (a room or receptacle slot the house does not fill, an object
elsewhere) or cannot be done (pick with full hands, place with empty hands or away from a
receptacle, place on a full receptacle) changes nothing and counts as failed.

Reward, as Housekeep's RL environment computes it (GRIPPED_SUCCESS_REWARD =
DROP_SUCCESS_REWARD = 2.5, wrong ones x -0.1, GRIPPED_DROPPED_FAIL_REWARD = -0.2):
picking a misplaced object for the first time +2.5, picking an object that lies on a
correct receptacle -0.25, picking again 0; placing on a correct receptacle +2.5 when it
is the object's first pick and the object started misplaced, else 0; placing on a wrong
receptacle -0.25; a failed pick or place -0.2; moving 0. The episode ends when every object
lies on a correct receptacle and the hands are empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmexplore.envs.housekeep.data import EpisodeLayout
from llmexplore.envs.housekeep.packing import fits
from llmexplore.envs.housekeep.vocab import MAX_OBJECTS, MAX_RECEPTACLES, MAX_ROOMS

PICK_MISPLACED_REWARD = 2.5
PLACE_CORRECT_REWARD = 2.5
WRONG_FACTOR = -0.1  # picking a correctly placed object or placing on a wrong receptacle
FAILED_PICK_PLACE_REWARD = -0.2

GO_ROOM = 0
GO_RECEPTACLE = MAX_ROOMS
PICK = MAX_ROOMS + MAX_RECEPTACLES
PLACE = MAX_ROOMS + MAX_RECEPTACLES + MAX_OBJECTS
NUM_ACTIONS = PLACE + 1

Event = Literal["move", "pick", "place", "failed"]


def action_names() -> list[str]:
    """Labels of the NUM_ACTIONS (55) actions in id order, numbered
    from 1: rooms, receptacle slots, object slots, place."""
    return ([f"go to room {r + 1}" for r in range(MAX_ROOMS)]
            + [f"go to receptacle {k + 1}" for k in range(MAX_RECEPTACLES)]
            + [f"pick object {j + 1}" for j in range(MAX_OBJECTS)]
            + ["place"])


def go_room(r: int) -> int:
    """Action id of ``go to room r`` (r 0-based; the action fails where the house has no room r)."""
    return GO_ROOM + r


def go_receptacle(k: int) -> int:
    """Action id of ``go to receptacle k``: slot k (0-based) of the current room."""
    return GO_RECEPTACLE + k


def pick(j: int) -> int:
    """Action id of ``pick object j`` (object slot j, 0-based)."""
    return PICK + j


@dataclass
class StepOutcome:
    reward: float
    event: Event
    obj: int = -1  # object picked or placed
    receptacle: int = -1  # receptacle it came from or went to
    correct: bool = False  # a place that put the object on a correct receptacle / a pick of a correct one


class Rearrangement:
    """Mutable state of one episode over a fixed layout.

    ``goals`` is the [receptacles, objects] matrix of correct placements; ``object_order``
    maps object slots (what observations and actions use) to the layout's objects.
    """

    def __init__(self, layout: EpisodeLayout, goals: np.ndarray, object_order: np.ndarray, start_room: int = 0):
        self.layout = layout
        order = np.asarray(object_order, dtype=np.int64)
        self.goals = goals[:, order]
        self.category_ids = layout.obj_category_ids[order]
        self.footprints = [tuple(f) for f in layout.obj_footprint[order]]
        self.object_keys = [layout.obj_key[j] for j in order]
        self.num_objects = len(order)
        self.location = layout.start[order].copy()  # receptacle index, -1 while carried
        self.object_room = layout.rec_room[self.location]  # room of each object, -1 while carried
        self.correct_at_start = self.goals[self.location, np.arange(self.num_objects)]
        self._correct = self.correct_at_start.copy()
        self.picks = np.zeros(self.num_objects, dtype=np.int64)
        self.room = int(start_room)
        self.at = -1  # receptacle index, -1 when at none
        self.held = -1  # object slot, -1 when empty-handed
        self.visited_rooms = {self.room}

    # -- queries --------------------------------------------------------------------------------
    @property
    def num_rooms(self) -> int:
        """Rooms in this house; ``go to room r`` fails for r at or beyond it."""
        return len(self.layout.room_names)

    def correct_now(self) -> np.ndarray:
        """[objects] bool: lies on a correct receptacle (a carried object does not)."""
        return self._correct.copy()

    @property
    def eligible(self) -> bool:
        """Every object misplaced at the start has a correct receptacle in this house."""
        return bool(self.goals[:, ~self.correct_at_start].any(axis=0).all())

    def solved(self) -> bool:
        """Every object lies on a correct receptacle and the hands are empty: the episode's end."""
        return self.held < 0 and bool(self._correct.all())

    def objects_on(self, receptacle: int) -> np.ndarray:
        """Slots of the objects lying on a receptacle (layout index), int64; empty when none."""
        return np.flatnonzero(self.location == receptacle)

    def room_of_receptacle(self, receptacle: int) -> int:
        """Room index of a receptacle (layout index, not slot)."""
        return int(self.layout.rec_room[receptacle])

    def can_place(self, receptacle: int, obj: int) -> bool:
        """Capacity: the footprints of what lies there plus ``obj`` pack onto its surface."""
        w, d = self.layout.rec_size[receptacle]
        return fits(w, d, [self.footprints[j] for j in self.objects_on(receptacle)] + [self.footprints[obj]])

    # -- dynamics -------------------------------------------------------------------------------
    def step(self, action: int) -> StepOutcome:
        """Apply an action id; one that names nothing or cannot be done changes
        nothing (event ``failed``). ValueError outside 0..NUM_ACTIONS-1."""
        action = int(action)
        if not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"action {action} is outside 0..{NUM_ACTIONS - 1}")
        if action < GO_RECEPTACLE:
            return self._go_room(action - GO_ROOM)
        if action < PICK:
            return self._go_receptacle(action - GO_RECEPTACLE)
        if action < PLACE:
            return self._pick(action - PICK)
        return self._place()

    def _go_room(self, r: int) -> StepOutcome:
        if r >= self.num_rooms:
            return StepOutcome(0.0, "failed")
        self.room, self.at = r, -1
        self.visited_rooms.add(r)
        return StepOutcome(0.0, "move")

    def _go_receptacle(self, k: int) -> StepOutcome:
        members = self.layout.room_receptacles[self.room]
        if k >= len(members):
            return StepOutcome(0.0, "failed")
        self.at = int(members[k])
        return StepOutcome(0.0, "move")

    def _pick(self, j: int) -> StepOutcome:
        if self.held >= 0 or self.at < 0 or j >= self.num_objects or self.location[j] != self.at:
            return StepOutcome(FAILED_PICK_PLACE_REWARD, "failed")
        was_correct = bool(self._correct[j])
        self.location[j] = self.object_room[j] = -1
        self._correct[j] = False
        self.held = j
        self.picks[j] += 1
        if was_correct:
            reward = WRONG_FACTOR * PICK_MISPLACED_REWARD
        elif self.picks[j] == 1:
            reward = PICK_MISPLACED_REWARD
        else:
            reward = 0.0
        return StepOutcome(reward, "pick", j, self.at, was_correct)

    def _place(self) -> StepOutcome:
        j = self.held
        if j < 0 or self.at < 0 or not self.can_place(self.at, j):
            return StepOutcome(FAILED_PICK_PLACE_REWARD, "failed")
        self.location[j] = self.at
        self.object_room[j] = self.room
        self.held = -1
        correct = self._correct[j] = bool(self.goals[self.at, j])
        if not correct:
            reward = WRONG_FACTOR * PLACE_CORRECT_REWARD
        elif self.picks[j] == 1 and not self.correct_at_start[j]:
            reward = PLACE_CORRECT_REWARD
        else:
            reward = 0.0
        return StepOutcome(reward, "place", j, self.at, correct)
