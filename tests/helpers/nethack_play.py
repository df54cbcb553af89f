"""Scripted NetHack play for tests: walk to the down staircase and take it."""

from __future__ import annotations

from collections import deque

import numpy as np
from nle import nethack

MOVES = {(-1, 0): "k", (1, 0): "j", (0, -1): "h", (0, 1): "l", (-1, -1): "y", (-1, 1): "u", (1, -1): "b", (1, 1): "n"}
WALKABLE = set(map(ord, ".#<>_{}%$?!/=\"()[*`^+"))
DOOR = ord("+")
OPEN_DOORS = set(map(ord, "|-"))


def action_index(env, key: str) -> int:
    codes = [int(a) for a in env.nle.actions]
    return codes.index(ord(key))


def _next_move(chars: np.ndarray, start: tuple[int, int], goal: tuple[int, int]) -> str | None:
    rows, cols = chars.shape
    prev = {start: None}
    queue = deque([start])
    while queue:
        p = queue.popleft()
        if p == goal:
            while prev[p] != start:
                p = prev[p]
            return MOVES[(p[0] - start[0], p[1] - start[1])]
        for (dy, dx) in MOVES:
            n = (p[0] + dy, p[1] + dx)
            if not (0 <= n[0] < rows and 0 <= n[1] < cols) or n in prev:
                continue
            if chars[n] not in WALKABLE and n != goal:
                continue
            if dy and dx and (chars[p] == DOOR or chars[n] == DOOR):
                continue  # no diagonal moves through doorways
            prev[n] = p
            queue.append(n)
    return None


def descend_once(env, obs: dict, rng: np.random.Generator, max_steps: int = 1500):
    """Walk to a visible '>' (exploring at random until one shows) and press '>'.

    Returns the step tuple of the '>' press, or None if the budget ran out or the
    episode ended first. ``env`` is a NetHackEnv created with extra key 'chars'.
    """
    target = None
    level = int(obs["blstats"][nethack.NLE_BL_DLEVEL])
    for _ in range(max_steps):
        chars = obs["chars"]
        bl = obs["blstats"]
        pos = (int(bl[nethack.NLE_BL_Y]), int(bl[nethack.NLE_BL_X]))
        stairs = np.argwhere(chars == ord(">"))
        if len(stairs):
            target = tuple(int(v) for v in stairs[0])
        if target is not None and pos == target:
            return env.step(action_index(env, ">"))
        move = _next_move(chars, pos, target) if target is not None else None
        key = move or "hjklyubn"[rng.integers(8)]
        obs, reward, terminated, truncated, info = env.step(action_index(env, key))
        if terminated or truncated or int(obs["blstats"][nethack.NLE_BL_DLEVEL]) != level:
            return None
    return None
