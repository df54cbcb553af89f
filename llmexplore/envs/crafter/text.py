"""A text view of Crafter states, as ELLM's captioner describes them.

The caption lists what is visible in the agent's local view (unique names, sorted), what
it is facing, the inventory items it holds, and status words for low vitals (below 9).
It is computed from the observation keys ``local_semantic``, ``facing`` and ``inventory``,
so any stored observation can be captioned again later.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

MATERIALS = ("water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron", "diamond", "table", "furnace")
OBJECTS = ("player", "cow", "zombie", "skeleton", "arrow", "plant")
#: semantic ids as Crafter's SemanticView assigns them: 0 = outside the map
SEMANTIC_NAMES = ("none",) + MATERIALS + OBJECTS
INVENTORY = (
    "health", "food", "drink", "energy", "sapling", "wood", "stone", "coal", "iron", "diamond",
    "wood_pickaxe", "stone_pickaxe", "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword",
)
VITALS = {"health": "hurt", "food": "hungry", "drink": "thirsty", "energy": "sleepy"}
LOW_VITAL = 9
#: bytes of the ``message`` key Motif and ONI read (NetHack's message length, which their models take)
MESSAGE_BYTES = 256
#: what a caption too long for ``MESSAGE_BYTES`` leaves out of its view first: common ground and creatures before
#: what only progress puts in view (a placed table, furnace or plant) and the ores deeper in the tech tree
DROP_FIRST = ("path", "sand", "grass", "water", "tree", "stone", "arrow", "cow", "lava", "zombie", "skeleton",
              "coal", "iron", "diamond", "plant", "furnace", "crafting table")


def _display(name: str) -> str:
    return {"table": "crafting table", "sapling": "sapling"}.get(name, name.replace("_", " "))


def visible_names(local_semantic: np.ndarray) -> list[str]:
    """Display names of what the view shows, each once and sorted; the player and off-map cells are left out."""
    ids = np.unique(np.asarray(local_semantic))
    return sorted(_display(SEMANTIC_NAMES[i]) for i in ids if 0 < i < len(SEMANTIC_NAMES) and SEMANTIC_NAMES[i] != "player")


def caption(obs: Mapping[str, np.ndarray], limit: int | None = None) -> str:
    """ELLM's caption: sentences for what is seen, faced, held (vitals aside) and the
    low vitals, each only when there is something to say ("" when nothing is).

    ``limit``: at most that many bytes, leaving names out of the view in ``DROP_FIRST`` order
    (the inventory alone is at most 244 bytes), so a fixed-size ``message`` never cuts a word."""
    seen = visible_names(obs["local_semantic"])
    text = _caption(obs, seen)
    while limit is not None and len(text) > limit and seen:
        seen.remove(min(seen, key=_drop_rank))
        text = _caption(obs, seen)
    return text


def _drop_rank(name: str) -> int:
    return DROP_FIRST.index(name) if name in DROP_FIRST else -1


def message(obs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The caption as Motif and ONI read it: ``MESSAGE_BYTES`` uint8, NUL-padded ASCII, like NetHack's message."""
    data = caption(obs, MESSAGE_BYTES).encode("ascii")
    out = np.zeros(MESSAGE_BYTES, dtype=np.uint8)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def _caption(obs: Mapping[str, np.ndarray], seen: list[str]) -> str:
    parts = []
    if seen:
        parts.append("You see " + ", ".join(seen) + ".")
    facing = int(np.asarray(obs["facing"]).reshape(-1)[0])
    if 0 < facing < len(SEMANTIC_NAMES):
        parts.append(f"You face {_display(SEMANTIC_NAMES[facing])}.")
    inventory = np.asarray(obs["inventory"]).reshape(-1)
    held = [f"{_display(name)} ({int(inventory[i])})" for i, name in enumerate(INVENTORY)
            if name not in VITALS and inventory[i] > 0]
    if held:
        parts.append("You have " + ", ".join(held) + ".")
    low = [word for i, (name, word) in enumerate(VITALS.items()) if inventory[i] < LOW_VITAL]
    if low:
        parts.append("You feel " + ", ".join(low) + ".")
    return " ".join(parts)
