"""The embedded oracle's MiniHack knowledge: what counts as progress toward a MiniHack level's goal.

MiniHack's levels are won at the staircase down, which ends the episode, so NetHack's goals (the
score, gold, combat, going deeper) call almost nothing a MiniHack level prints extremely helpful:
under them ONI-Retrieval rewarded 0% of steps on KeyRoom and MultiRoom (issue 53). This module
answers the questions that ask MiniHack's own goal, ``minihack`` in the goal tables of
``motif_preference`` and ``oni_classification`` (the family declares them as
``<kind>@minihack``); every other goal stays with NetHack's rules (``envs/nethack/oracle.py``).

A message is matched against NetHack's events (a kill, an item, a wasted move, ...: the same
game) and against the events only MiniHack's levels make common (a key, a door opening or
locked, a way across water or lava, a wall bumped into, a prompt that led nowhere). Each event
weighs what it is worth for reaching the stairs. ONI's classification applies its published
threshold (ONI's ``classification_prompt_templates``): only extremely helpful messages are
helpful, lukewarm, neutral and bad ones are not; here that is a value of at least
``HELPFUL_VALUE``, reached by a key in hand, an unlocked or opened door, a way across, a kill or
the stairs themselves, the examples the goal's sentence gives the LM.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from llmexplore.envs.nethack import oracle as nethack

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.lm.oracle import OracleQuery

GOAL = "minihack"

#: MiniHack's common events beyond NetHack's table: name -> (pattern on lower-cased text, what it tells)
EVENTS: dict[str, tuple[str, str]] = {
    "key_obtained": (r"(?:^|\s)[a-z] - (?:an? |the )?[\w ]*?\b(?:key|lock pick|credit card)\b",
                     "the player now holds a key that opens locked doors"),
    "key_seen": (r"\byou see here\b[^.!?]*\b(?:key|lock pick|credit card)\b", "a key lies here"),
    "unlock_prompt": (r"\bunlock it\?", "the player is about to unlock something"),
    "unlocked": (r"\byou succeed in (?:unlocking|picking)\b", "the player unlocked a door"),
    "door_opened": (r"\bthe door opens\b|\bthe door crashes open\b|\byou break open the lock\b",
                    "a door to the next part of the level is open"),
    "crossing": (r"\bnow you can cross it\b|\bthe lava cools and solidifies\b|\byou start to float\b|"
                 r"\byou float up\b|\b(?:water|moat|pool) (?:freezes|is frozen)\b",
                 "a way across water or lava is open"),
    "boulder_moved": (r"\bwith great effort you move the boulder\b", "the player pushed a boulder along"),
    "boulder_stuck": (r"\byou try to move the boulder, but in vain\b", "a boulder would not move"),
    "water_or_lava": (r"\bpheew\b|\bcrawl out of the water\b|\bburn to a crisp\b|\bouch!|\bit burns up\b",
                      "the player fell into water or got burnt"),
    "wall": (r"\bit's a wall\b", "the player walked into a wall"),  # "It's solid stone." is NetHack's ``blocked``
    "fountain": (r"\bfountain\b", "a fountain is here"),
    "no_effect": (r"\bnothing here to pick up\b|\bstrange direction\b|\bdon't know how to\b|"
                  r"\bsilly thing\b|\bcannot reach the floor\b|\bsolidly fixed\b|\bcome off the hinges\b|"
                  r"\bdoor resists\b", "the action had no effect"),
}
_COMPILED = [(name, re.compile(pattern).search) for name, (pattern, _) in EVENTS.items()]

#: event -> weight under the ``minihack`` goal, NetHack's events and MiniHack's together (a message's
#: value is the sum). Reaching the stairs is the goal; a key in hand, an unlocked or opened door, a
#: way across and a kill in the way each open the path (2 or more: extremely helpful); items,
#: boulders pushed, fountains and a key on the floor are lukewarm; gold and the score are not the goal.
WEIGHTS: dict[str, float] = {
    # NetHack's events
    "death": -5, "kill": 3, "level_up": 1, "hit_monster": 1, "miss_monster": 0.25, "gold": 0,
    "stairs_down": 6, "descend": 6, "stairs_up": 0, "new_item": 0.5, "see_item": 0.5, "discovery": 0.5,
    "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -0.5, "useless": -0.5,
    # MiniHack's events (a message may match one of each: a key picked up is also a new item)
    "key_obtained": 2.5, "key_seen": 1, "unlock_prompt": 1, "unlocked": 3, "door_opened": 2, "crossing": 4,
    "boulder_moved": 0.5, "boulder_stuck": -0.5, "water_or_lava": -1, "wall": -0.5, "fountain": 0.5,
    "no_effect": -0.5,
}

SUMMARY = ("In this MiniHack level the aim is the staircase down, so keys for locked doors, doors opened, ways "
           "across water or lava and monsters defeated in the way count most")

#: ONI's published threshold: only extremely helpful messages are helpful (a key in hand, a door opened, ...)
HELPFUL_VALUE = 2.0


@lru_cache(maxsize=100_000)
def message_events(message: str) -> tuple[str, ...]:
    """NetHack's events of the message, then MiniHack's; a message can match one of each."""
    low = message.lower()
    return nethack.message_events(message) + tuple(name for name, search in _COMPILED if search(low))


def message_value(message: str) -> float:
    """The message's worth for reaching the stairs: its events' summed weights (0 when routine)."""
    return float(sum(WEIGHTS[e] for e in message_events(message) if e in WEIGHTS))


def describe(message: str) -> str:
    """What the message says for the goal, worded to follow "Message 1" or "The message"."""
    if not message.strip():
        return "is empty, so nothing noteworthy happened"
    events = [e for e in message_events(message) if e in WEIGHTS]
    meaning = {**{name: text for name, (_, text) in nethack.EVENTS.items()},
               **{name: text for name, (_, text) in EVENTS.items()}}
    good = list(dict.fromkeys(meaning[e] for e in events if WEIGHTS[e] > 0))
    bad = list(dict.fromkeys(meaning[e] for e in events if WEIGHTS[e] < 0))
    if not good and not bad:
        return "is routine and shows neither gain nor loss"
    parts = ["says " + " and ".join(good)] if good else []
    if bad:
        parts.append(("but " if good else "says ") + " and ".join(bad))
    return " ".join(parts)


def preference_answer(first: str, second: str) -> str:
    """Which of two messages shows more progress toward the stairs, as an LM would write it."""
    v1, v2 = message_value(first), message_value(second)
    if abs(v1 - v2) < nethack.TIE_MARGIN:
        verdict, why = "none", "Neither message shows clearly more progress than the other."
    else:
        verdict, why = ("1", "Message 1") if v1 > v2 else ("2", "Message 2")
        why += " points to more progress."
    return f"{SUMMARY}. Message 1 {describe(first)}. Message 2 {describe(second)}. {why}\nPreferred: {verdict}"


def classification_answer(message: str) -> str:
    """ONI's label: ``Verdict: helpful`` only when the message is extremely helpful for reaching the stairs."""
    helpful = message_value(message) >= HELPFUL_VALUE
    strength = "extremely helpful" if helpful else "not extremely helpful"
    return (f"{SUMMARY}. The message {describe(message)}, so it is {strength} for the goal.\n"
            f"Verdict: {'helpful' if helpful else 'unhelpful'}")


def motif_answer(query: "OracleQuery") -> str:
    """``motif_preference@minihack``: which of two messages shows more progress toward the stairs."""
    return preference_answer(query.fields["first"], query.fields["second"])


def oni_answer(query: "OracleQuery") -> str:
    """``oni_classification@minihack``: whether one message is extremely helpful for reaching the stairs."""
    return classification_answer(query.fields["message"])
