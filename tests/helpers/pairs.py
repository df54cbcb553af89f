"""Small Motif pair datasets built from realistic NetHack messages, for LM tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from llmexplore.methods.motif.dataset import PairDataset, write_pair_dataset

MESSAGES = [
    "", "You kill the newt!", "You kill the jackal! Welcome to experience level 2.", "You hit the grid bug.",
    "You miss the jackal.", "The jackal bites!", "The newt misses!", "$ - 12 gold pieces.",
    "You see here 7 gold pieces.", "There is a staircase down here.", "There is a staircase up here.",
    "f - an uncursed +0 dagger.", "You see here a scroll labeled ELBIB YLOH.", "You find a hidden passage.",
    "The door opens.", "This door is locked.", "It's solid stone.", "You can't move diagonally out of an intact doorway.",
    "You hear some noises in the distance.", "You are beginning to feel hungry.", "You stop. Your kitten is in the way.",
    "Hello Agent, welcome to NetHack!  You are a neutral male gnomish Caveman.", "Unknown command ' '.",
    "You swap places with your kitten.", "There is an altar to Anhur (chaotic) here.",
]


def encode(text: str) -> np.ndarray:
    out = np.zeros(256, dtype=np.uint8)
    data = text.encode("latin-1")[:256]
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def make_pairs(n: int, seed: int = 0, tie_share: float = 0.1) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        a = MESSAGES[rng.integers(len(MESSAGES))]
        b = a if rng.random() < tie_share else MESSAGES[rng.integers(len(MESSAGES))]
        pairs.append((a, b))
    return pairs


def make_dataset(root: Path, pairs: list[tuple[str, str]]) -> PairDataset:
    message = np.stack([np.stack([encode(a), encode(b)]) for a, b in pairs])
    blstats = np.zeros((len(pairs), 2, 27), dtype=np.int64)
    return write_pair_dataset(root, {"message": message, "blstats": blstats}, {})
