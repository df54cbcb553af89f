"""The text view of a Housekeep observation, rebuilt from the observation arrays alone.

``read_view`` turns the arrays into names (room, receptacles in slot order, objects and
what they lie on, the carried object); ``caption`` writes them as sentences for an LM.
``pick_goal`` and ``place_goal`` are the goal strings of ELLM's Housekeep suggestions, and
the env reports achieved picks and places in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from llmexplore.envs.housekeep.data import display_room_names
from llmexplore.envs.housekeep.vocab import Vocabulary, display


@dataclass(frozen=True)
class PlacedObject:
    obj: str  # object category, e.g. "mug"
    receptacle: str  # receptacle category, e.g. "counter"
    slot: int  # receptacle slot in the room (0-based)


@dataclass(frozen=True)
class View:
    """What the agent perceives, in category names (underscored, as in the annotations)."""

    room_type: str
    room_label: str  # "bedroom 2" when the house has two bedrooms
    receptacles: tuple[str, ...]  # the room's receptacles in slot order
    at: int  # slot of the receptacle the agent stands at, -1 for none
    objects: tuple[PlacedObject, ...]  # objects lying in this room
    held: str | None


def _ints(x) -> np.ndarray:
    return np.asarray(x).reshape(-1).astype(np.int64)


def read_view(obs: Mapping[str, np.ndarray], vocab: Vocabulary) -> View:
    """The observation in names: ids 0 (none) are skipped and slots become 0-based (``at`` is -1 at no receptacle)."""
    rooms = [vocab.room_name(i) for i in _ints(obs["rooms"]) if i > 0]
    labels = display_room_names(rooms)
    room = int(_ints(obs["room"])[0])
    receptacles = tuple(vocab.receptacle_name(i) for i in _ints(obs["receptacles"]) if i > 0)
    objects, on = _ints(obs["objects"]), _ints(obs["object_on"])
    placed = tuple(PlacedObject(vocab.object_name(c), receptacles[s - 1], s - 1)
                   for c, s in zip(objects, on) if c > 0 and s > 0)
    held_slot = int(_ints(obs["held"])[0])
    held = vocab.object_name(int(objects[held_slot - 1])) if held_slot > 0 else None
    return View(rooms[room], labels[room], receptacles, int(_ints(obs["at"])[0]) - 1, placed, held)


def _article(name: str) -> str:
    return ("an " if name[:1] in "aeiou" else "a ") + name


def caption(obs: Mapping[str, np.ndarray], vocab: Vocabulary) -> str:
    """E.g. "You are at the counter in the kitchen. You see counter (apple, mug), fridge,
    table. You are holding a book." """
    view = read_view(obs, vocab)
    room = view.room_label if view.room_label[-1].isdigit() else f"the {view.room_label}"
    if view.at >= 0:
        parts = [f"You are at the {display(view.receptacles[view.at])} in {room}."]
    else:
        parts = [f"You are in {room}."]
    on_slot: dict[int, list[str]] = {}
    for p in view.objects:
        on_slot.setdefault(p.slot, []).append(display(p.obj))
    seen = [display(r) + (f" ({', '.join(sorted(on_slot[k]))})" if k in on_slot else "")
            for k, r in enumerate(view.receptacles)]
    if seen:
        parts.append("You see " + ", ".join(seen) + ".")
    if view.held:
        parts.append(f"You are holding {_article(display(view.held))}.")
    return " ".join(parts)


def receptacle_label(room_type: str, receptacle: str) -> str:
    """``kitchen counter``: how ELLM names a receptacle (room type, then category)."""
    return f"{display(room_type)} {display(receptacle)}"


def pick_goal(obj: str) -> str:
    """``pick mug``: ELLM's goal string for picking an object, and what the env reports as achieved."""
    return f"pick {display(obj)}"


def place_goal(obj: str, room_type: str, receptacle: str) -> str:
    """``place mug on kitchen counter``: ELLM's goal string for a placement (room
    type, then receptacle category), and what the env reports as achieved."""
    return f"place {display(obj)} on {receptacle_label(room_type, receptacle)}"
