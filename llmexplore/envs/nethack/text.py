"""Text views of NetHack observations for language models."""

from __future__ import annotations

import numpy as np
from nle import nethack

#: NetHack's hunger states (u.uhs) as the status line spells them; a new game is NOT_HUNGRY (1)
_HUNGER = {0: "Satiated", 1: "Not Hungry", 2: "Hungry", 3: "Weak", 4: "Fainting", 5: "Fainted", 6: "Starved"}


def decode_message(message: np.ndarray) -> str:
    """The 256-byte message as text, zero bytes dropped (Motif's caption)."""
    raw = bytes(np.asarray(message, dtype=np.uint8))
    end = raw.find(b"\0")
    if end >= 0:
        raw = raw[:end]
    return raw.decode("latin-1").strip()


def encode_message(text: str) -> np.ndarray:
    """The inverse of ``decode_message``, for tests and scripted observations."""
    out = np.zeros(256, dtype=np.uint8)
    data = text.encode("latin-1")[:256]
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def status_line(blstats: np.ndarray) -> str:
    """A short bottom line, ``Dlvl:1 $:0 HP:14(14) Xp:1`` (Dlvl
    is the depth), then the hunger state unless Not Hungry."""
    b = np.asarray(blstats).astype(np.int64)
    hunger = _HUNGER.get(int(b[nethack.NLE_BL_HUNGER]), "")
    parts = [
        f"Dlvl:{b[nethack.NLE_BL_DEPTH]}",
        f"$:{b[nethack.NLE_BL_GOLD]}",
        f"HP:{b[nethack.NLE_BL_HP]}({b[nethack.NLE_BL_HPMAX]})",
        f"Xp:{b[nethack.NLE_BL_XP]}",
    ]
    if hunger and hunger != "Not Hungry":
        parts.append(hunger)
    return " ".join(parts)
