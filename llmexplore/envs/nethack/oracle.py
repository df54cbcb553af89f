"""The embedded oracle's NetHack knowledge: what counts as progress in a message, under which goal.

The family declares the question kinds it answers (``EnvFamily.oracle_answers``):
``motif_preference`` (``motif_answer``) and ``oni_classification`` (``oni_answer``).

A message is matched against a table of events (a kill, a level-up, gold, stairs, a new
item, damage taken, a wasted move, ...). Each Motif goal weighs the events differently,
so the goal visibly changes preferences: ``combat`` values kills and fights, ``gold``
values gold, ``stairs`` values staircases and descending, ``defaultgoal`` the in-game
score (kills, gold, depth), ``zeroknowledge`` general progress and discovery.

MaestroMotif's skills are goals too (``SKILL_GOALS``): discoverer, descender, ascender,
worshipper and merchant. Their events (climbing up, altars, shops, an angry god) are
matched for every message but weigh only under the goals that list them, so adding them
changed no answer for the older goals.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.lm.oracle import OracleQuery
    from llmexplore.lm.templates import PromptLibrary

GOALS = ("defaultgoal", "zeroknowledge", "combat", "gold", "stairs")
#: MaestroMotif's skills, judged like Motif goals
SKILL_GOALS = ("discoverer", "descender", "ascender", "worshipper", "merchant")

#: event name -> (pattern, what it tells the player, in words for the oracle's reasoning)
EVENTS: dict[str, tuple[str, str]] = {
    "death": (r"\byou die\b|\bdie\.\.\.|killed by\b|\byou starve\b", "the player died"),
    "kill": (r"\byou (?:kill|destroy|slay)\b|\bis (?:killed|destroyed)\b", "the player defeated a monster"),
    "level_up": (r"welcome to experience level|you feel more experienced", "the player gained an experience level"),
    "hit_monster": (r"\byou (?:hit|bite|kick|smite|strike|butt)\b|\bturns to flee\b", "the player landed an attack"),
    "miss_monster": (r"\byou miss\b", "the player attacked but missed"),
    # the hero's own gold: a pet carrying coins about ("The kitten drops a gold piece.") is no gain
    "gold": (r"(?:^|\s)\$ - |\byou (?:see|find|pick up|have|count)\b[^.!?]*\bgold pieces?\b|"
             r"\bthere (?:is|are) [^.!?]*\bgold pieces? here\b", "the player got or found gold"),
    "stairs_down": (r"staircase down|stairs? (?:going )?down|ladder down", "a way down is at hand"),
    "descend": (r"\bdescend|\bdown the (?:stairs|ladder)|\bdeeper\b|dungeon level|you fall through",
                "the player went deeper into the dungeon"),
    "stairs_up": (r"staircase up|stairs? (?:going )?up|ladder up", "a staircase leading up is here"),
    "new_item": (r"^[a-zA-Z] - |\byou (?:pick up|now wield|are now wearing|put on)\b", "the player obtained an item"),
    "see_item": (r"\byou see here\b|\bthere are (?:several|many) objects here\b|\bthings that are here\b",
                 "there is an item on the floor"),
    "discovery": (r"\byou find (?:a )?hidden\b|\bthe door opens\b|\bthere is an? (?:altar|fountain|sink|throne)\b|"
                  r"\byou enter\b|\bwelcome to\b(?! experience| nethack)", "something new was discovered"),
    "hurt": (r"\byou are hit\b|\b(?:hits|bites|stings|kicks|butts|claws|touches you)!|\byou are (?:burned|frozen|shocked)\b",
             "the player took damage"),
    "monster_misses": (r"\bmisses[!.]|\bmisses you\b", "a monster attacked the player and missed"),
    "hunger": (r"\byou (?:are beginning to )?feel (?:hungry|weak)|\bfaint\b|\bweak from hunger\b",
               "the player is getting hungry or weak"),
    "blocked": (r"solid stone|\bis locked\b|can't move diagonally|\byou stop\b|in your way|\bthere is a wall\b|"
                r"\bnothing happens\b|\bwhamm\b", "a move was wasted"),
    "useless": (r"\bunknown command\b|\bnever mind\b|\byou don't have anything\b|\byou cannot\b|\byou can't\b|"
                r"\bnothing to\b|\bwhat do you want to\b", "the command did nothing useful"),
    # -- events only the skill goals weigh -------------------------------------------------------
    "ascend": (r"\byou climb up\b|\bup the (?:stairs|ladder)\b|\byou ascend\b", "the player went up a level"),
    "altar": (r"\baltar\b", "an altar is involved"),
    "buc_test": (r"\b(?:black|amber) flash\b|\b(?:hits|lands on) the altar\b",
                 "an item dropped on an altar showed whether it is blessed or cursed"),
    "god_anger": (r"\bthunder\b|\bbooms? out\b|\bis displeased\b|\byou feel guilty\b|\bsmite",
                  "the player's god is angry"),
    "pray": (r"\byou begin praying\b|\byou finish your prayer\b", "the player prayed"),
    "shop": (r"\bwelcome to\b.*\b(?:store|shop|emporium|delicatessen|boutique|outlet|bookstore|bazaar|"
             r"liquor|lighting|hardware|antiques?)\b|\bshopkeeper\b", "the player is at a shop"),
    "sell": (r"\boffers? \d+ gold pieces?\b|\byou sold\b|\bsell it\?",
             "the player is selling to a shopkeeper"),
    "buy": (r"\bzorkmids?\b|\bunpaid\b|\byou bought\b", "the player is dealing with a shopkeeper's prices"),
    "shop_trouble": (r"\byou owe\b|\byou stole\b|\bthief\b|\bkops?\b|\busage fee\b",
                     "the player is in trouble with a shopkeeper"),
}

#: lower-case words one of which every match of the event's pattern contains: a cheap test that
#: skips most regex searches (a unit test checks they never change the result)
TRIGGERS: dict[str, tuple[str, ...]] = {
    "death": ("die", "killed by", "starve"),
    "kill": ("kill", "destroy", "slay"),
    "level_up": ("experience level", "more experienced"),
    "hit_monster": ("you ", "turns to flee"),
    "miss_monster": ("you miss",),
    "gold": ("gold piece", "$ - "),
    "stairs_down": ("down",),
    "descend": ("descend", "down the", "deeper", "dungeon level", "fall through"),
    "stairs_up": ("up",),
    "new_item": (" - ", "you "),
    "see_item": ("see here", "objects here", "are here"),
    "discovery": ("hidden", "door opens", "there is a", "you enter", "welcome to"),
    "hurt": ("hit", "bites", "stings", "kicks", "butts", "claws", "touches you", "burned", "frozen", "shocked"),
    "monster_misses": ("misses",),
    "hunger": ("feel", "faint", "hunger"),
    "blocked": ("solid stone", "locked", "diagonally", "you stop", "in your way", "wall", "nothing happens", "whamm"),
    "useless": ("unknown command", "never mind", "anything", "cannot", "can't", "nothing to", "what do you want"),
    "ascend": ("climb up", "up the", "ascend"),
    "altar": ("altar",),
    "buc_test": ("flash", "altar"),
    "god_anger": ("thunder", "boom", "displeased", "guilty", "smite"),
    "pray": ("praying", "prayer"),
    "shop": ("welcome to", "shopkeeper"),
    "sell": ("offer", "sold", "sell it"),
    "buy": ("zorkmid", "unpaid", "bought"),
    "shop_trouble": ("owe", "stole", "thief", "kop", "usage fee"),
}

_COMPILED = [(name, re.compile(pattern, re.IGNORECASE).search) for name, (pattern, _) in EVENTS.items()]
#: the same patterns for text already lower-cased (case-insensitive matching costs ~15% more)
_COMPILED_LOWER = [(name, re.compile(pattern).search) for name, (pattern, _) in EVENTS.items()]
#: (trigger word, positions in _COMPILED of the events it may signal): a message is searched only
#: for the events its trigger words may signal
_TRIGGER_WORDS: tuple[tuple[str, tuple[int, ...]], ...] = tuple(
    (word, tuple(i for i, (name, _) in enumerate(_COMPILED) if word in TRIGGERS[name]))
    for word in dict.fromkeys(w for name, _ in _COMPILED for w in TRIGGERS[name]))


def _trie_pattern(words: list[str]) -> str:
    """A regex matching the longest of ``words`` that starts at a position, with shared prefixes
    factored out: the engine tests one character per branch instead of every word in turn."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, dict]) -> str:
        branches = [re.escape(ch) + build(child) for ch, child in node.items() if ch]
        if not branches:
            return ""
        body = "(?:" + "|".join(branches) + ")"
        return body + "?" if "" in node else body  # greedy: a longer word wins over its prefix

    return build(trie)


#: every position's longest trigger word (a zero-width lookahead, so overlapping words are found)
_TRIGGER_SCAN = re.compile("(?=(" + _trie_pattern([w for w, _ in _TRIGGER_WORDS]) + "))").findall
#: word -> the events of it and of every trigger word it starts with (those match at the same place)
_TRIGGER_EVENTS: dict[str, tuple[int, ...]] = {
    word: tuple(sorted({i for prefix, events in _TRIGGER_WORDS if word.startswith(prefix) for i in events}))
    for word, _ in _TRIGGER_WORDS}

#: goal -> event -> weight. Positive weights mark progress under that goal. A reward model learns
#: from orderings, not sizes: an event that beats routine messages under two goals gets the same
#: high score from both goals' models however different its weights. So ``gold`` and ``combat``
#: weigh each other's key event (kills, gold) 0, a tie with routine messages, and their orderings
#: differ where it matters (rule version 2; version 1 gave them 1 and 0.5 and no model could tell
#: the goals apart on kills and gold). Version 2 also counts only the hero's gold as ``gold``.
#: Version 3: under ``gold``, other items seen or picked up tie with routine messages too; they
#: are ~25 times as frequent as gold, so a model that ranked them above routine messages paid
#: mostly for standing on items (78% of its thresholded reward), not for gold.
#: Version 4: a goal counts what the hero does, as version 2 did for gold. Under ``combat``, a
#: monster's attack on the hero (it hits: ``hurt``; it misses) weighs as under every other goal, a
#: loss and routine. Version 3 paid for being bitten almost as much as for a kill (model z 1.98
#: against 2.40), and its agents sought bites, died sooner and killed no more per episode.
#: Version 5: the goals carry Motif's published exclusions: ``combat`` never prefers gold or
#: going down, ``gold`` never prefers fights, kills, levels gained or going down, ``stairs`` never
#: prefers fights, kills, levels gained or gold. Each excluded event weighs 0 (a tie with routine
#: messages): version 4 still paid ``combat`` for descending and ``gold`` and ``stairs`` for each
#: other's events. ONI's classification marks only extremely helpful messages (``HELPFUL_VALUE``).
WEIGHTS: dict[str, dict[str, float]] = {
    "defaultgoal": {"death": -5, "kill": 3, "level_up": 4, "hit_monster": 1, "miss_monster": 0.25, "gold": 2,
                    "stairs_down": 2, "descend": 3, "stairs_up": 0.5, "new_item": 1.5, "see_item": 0.5,
                    "discovery": 0.5, "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -0.5, "useless": -0.5},
    "zeroknowledge": {"death": -5, "kill": 2, "level_up": 3, "hit_monster": 0.5, "miss_monster": 0, "gold": 1,
                      "stairs_down": 1, "descend": 2, "stairs_up": 0.5, "new_item": 2, "see_item": 1,
                      "discovery": 1, "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -0.5, "useless": -0.5},
    "combat": {"death": -5, "kill": 5, "level_up": 4, "hit_monster": 3, "miss_monster": 1.5, "gold": 0,
               "stairs_down": 0, "descend": 0, "stairs_up": 0, "new_item": 0.5, "see_item": 0,
               "discovery": 0, "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -0.5, "useless": -0.5},
    "gold": {"death": -5, "kill": 0, "level_up": 0, "hit_monster": 0, "miss_monster": 0, "gold": 5,
             "stairs_down": 0, "descend": 0, "stairs_up": 0, "new_item": 0, "see_item": 0,
             "discovery": 0.5, "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -0.5, "useless": -0.5},
    "stairs": {"death": -5, "kill": 0, "level_up": 0, "hit_monster": 0, "miss_monster": 0, "gold": 0,
               "stairs_down": 5, "descend": 6, "stairs_up": 1, "new_item": 0.5, "see_item": 0,
               "discovery": 1, "hurt": -1, "monster_misses": 0, "hunger": -1, "blocked": -1, "useless": -0.5},
    # MaestroMotif's skills; events a goal does not list do not matter to it
    "discoverer": {"death": -5, "kill": 3, "level_up": 3, "hit_monster": 1.5, "miss_monster": 0.5, "gold": 3,
                   "new_item": 3, "see_item": 1.5, "discovery": 2, "altar": 0.5, "descend": -4, "ascend": -4,
                   "hurt": -1, "hunger": -1, "blocked": -0.5, "useless": -0.5},
    "descender": {"death": -5, "descend": 6, "stairs_down": 5, "ascend": -5, "stairs_up": -1,
                  "discovery": 0.5, "hurt": -0.5, "hunger": -0.5, "blocked": -1, "useless": -0.5},
    "ascender": {"death": -5, "ascend": 6, "stairs_up": 5, "descend": -5, "stairs_down": -1, "discovery": 0.5,
                 "hurt": -0.5, "hunger": -0.5, "blocked": -1, "useless": -0.5},
    "worshipper": {"death": -5, "altar": 4, "buc_test": 6, "god_anger": -5, "pray": -2, "see_item": 0.5,
                   "new_item": 0.5, "hurt": -0.5, "blocked": -0.5, "useless": -0.5},
    "merchant": {"death": -5, "shop": 4, "sell": 6, "buy": 4, "gold": 1, "shop_trouble": -5, "new_item": 0.5,
                 "hurt": -0.5, "blocked": -0.5, "useless": -0.5},
}

GOAL_SUMMARY = {
    "defaultgoal": "the score rises by defeating monsters, collecting gold and reaching deeper levels",
    "zeroknowledge": "progress means growing stronger, finding things and exploring further",
    "combat": "the aim here is fighting, so the hero's own attacks and kills count most",
    "gold": "the aim here is gold, so anything that yields gold counts most",
    "stairs": "the aim here is to go down, so staircases and descending count most",
    "discoverer": "this player should make the most of the current level, so fights, gold, items and new "
                  "places count, and changing level is unwanted",
    "descender": "this player should go deeper at once, so staircases down and descending count, and going "
                 "up is unwanted",
    "ascender": "this player should climb to a shallower level, so staircases up and climbing count, and "
                "going down is unwanted",
    "worshipper": "this player should use an altar to learn whether items are blessed or cursed, and must "
                  "not anger the god",
    "merchant": "this player should trade with shopkeepers, selling and buying, and must not steal",
}

#: two messages closer than this in value are a tie
TIE_MARGIN = 0.25


@lru_cache(maxsize=200_000)
def message_events(message: str) -> tuple[str, ...]:
    """The events a message signals. ASCII text (all of NetHack's) is lower-cased once and scanned
    for trigger words, and only the events those may signal are searched for; other text gets
    every pattern, case-insensitively (beyond ASCII, e.g. the long s, case rules differ from
    ``lower()``)."""
    if not message.isascii():
        return message_events_slow(message)
    if not message.strip():
        return ()
    low = message.lower()
    words = _TRIGGER_SCAN(low)
    if len(words) < 2:  # most messages hold one trigger word or none
        candidates = _TRIGGER_EVENTS[words[0]] if words else ()
    else:
        candidates = sorted(set().union(*map(_TRIGGER_EVENTS.__getitem__, words)))
    return tuple(_COMPILED_LOWER[i][0] for i in candidates if _COMPILED_LOWER[i][1](low))


def message_events_slow(message: str) -> tuple[str, ...]:
    """Every pattern searched, case-insensitively: the reference ``message_events``'s tests compare to."""
    if not message.strip():
        return ()
    return tuple(name for name, search in _COMPILED if search(message))


def message_value(message: str, goal: str) -> float:
    """The message's value under ``goal``: its events' summed
    weights (0 when routine); KeyError for an unknown goal."""
    return _judged(message, goal)[0]


def describe(message: str, goal: str) -> str:
    """What the message says under ``goal``, worded to follow
    "Message 1" (e.g. "says the player got or found gold")."""
    return _judged(message, goal)[1]


@lru_cache(maxsize=200_000)
def _judged(message: str, goal: str) -> tuple[float, str]:
    """A message's value and description under one goal, computed once: messages repeat across pairs."""
    weights = WEIGHTS[goal]
    return float(sum(weights[e] for e in message_events(message) if e in weights)), _describe(message, goal)


def _describe(message: str, goal: str) -> str:
    events = [e for e in message_events(message) if e in WEIGHTS[goal]]
    if not message.strip():
        return "is empty, so nothing noteworthy happened"
    if not events:
        return "is routine and shows neither gain nor loss"
    good = [EVENTS[e][1] for e in events if WEIGHTS[goal][e] > 0]
    bad = [EVENTS[e][1] for e in events if WEIGHTS[goal][e] < 0]
    parts = []
    if good:
        parts.append("says " + " and ".join(good))
    if bad:
        parts.append(("but " if good else "says ") + " and ".join(bad))
    if not parts:
        parts.append("mentions " + " and ".join(EVENTS[e][1] for e in events) + ", which does not matter for this goal")
    return " ".join(parts)


#: words that open a goal's exclusions ("... never progress", "But never prefer ..."): key words
#: after them name what the goal does not want
_EXCLUSION = re.compile(r"\b(?:but|never|not|except|without)\b|\bno\b|\bany other\b|\bother ways?\b", re.I)


def goal_from_instruction(instruction: str, known: dict[str, str], empty: str = "zeroknowledge") -> str:
    """The goal name behind an instruction: exact match first, then the key words before any exclusion."""
    text = " ".join(instruction.split())
    for name, sentence in known.items():
        if " ".join(sentence.split()) == text and name in WEIGHTS:
            return name
    if not text:
        return empty
    first_sentence = re.split(r"(?<=[.;!?])\s", text, maxsplit=1)[0]
    low = _EXCLUSION.split(first_sentence, maxsplit=1)[0].lower()
    if "gold" in low and "monster" not in low:
        return "gold"
    if any(w in low for w in ("stair", "descend", "deeper", "go down", "going down")) and "gold" not in low:
        return "stairs"
    if any(w in low for w in ("fight", "combat", "kill", "attack")) and "gold" not in low:
        return "combat"
    return "defaultgoal"


def preference_answer(first: str, second: str, goal: str) -> str:
    """A short comparison, then the declared choice, as an LM would write it."""
    (v1, d1), (v2, d2) = _judged(first, goal), _judged(second, goal)
    if abs(v1 - v2) < TIE_MARGIN:
        verdict, why = "none", "Neither message shows clearly more progress than the other."
    elif v1 > v2:
        verdict, why = "1", "Message 1 points to more progress."
    else:
        verdict, why = "2", "Message 2 points to more progress."
    return f"In NetHack {GOAL_SUMMARY[goal]}. Message 1 {d1}. Message 2 {d2}. {why}\nPreferred: {verdict}"


#: ONI labels only extremely helpful messages positive: a value at least that of finding gold
#: under ``defaultgoal`` (a hit or a new item is lukewarm)
HELPFUL_VALUE = 2.0


def classification_answer(message: str, goal: str = "defaultgoal") -> str:
    """ONI's label as the oracle writes it: a reason, then ``Verdict: helpful`` when the
    message is worth at least HELPFUL_VALUE under ``goal``, else ``Verdict: unhelpful``."""
    helpful = message_value(message, goal) >= HELPFUL_VALUE
    verdict = "helpful" if helpful else "unhelpful"
    strength = "extremely helpful" if helpful else "not extremely helpful"
    return (f"In NetHack {GOAL_SUMMARY[goal]}. The message {describe(message, goal)}, so it is {strength} "
            f"for the goal.\nVerdict: {verdict}")


def motif_answer(query: "OracleQuery") -> str:
    """The ``motif_preference`` kind: which of two messages shows more progress under the goal asked."""
    goal = _goal(query.prompts, query.fields["goal_instruction"])
    return preference_answer(query.fields["first"], query.fields["second"], goal)


@lru_cache(maxsize=256)
def _goal(prompts: "PromptLibrary", instruction: str) -> str:
    return goal_from_instruction(instruction, prompts.table("motif_preference", "goals"))


def oni_answer(query: "OracleQuery") -> str:
    """The ``oni_classification`` kind: whether one message is extremely helpful for the goal asked."""
    goals = query.prompts.table("oni_classification", "goals")
    goal = goal_from_instruction(query.fields.get("goal_instruction", ""), goals, empty="defaultgoal")
    return classification_answer(query.fields["message"], goal)
