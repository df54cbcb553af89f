"""Success conditions of MaestroMotif's zero-shot NetHack tasks, as pure functions.

Every goal is ``update(memory, previous, current) -> (memory, success)`` over read-only
``GameState`` snapshots; the memory is a small frozen dataclass (or None) that carries
what a composite task must remember across the episode. Nothing here touches a game, so
each condition can be checked on scripted or recorded states.

Published definitions (Klissarov et al., 2024, "MaestroMotif: Skill Design from Artificial
Intelligence Feedback", ICLR 2025) are read from the authors' code release: the task prompts
in ``code_generation/<task>/initial.txt`` and the evaluation in ``rl_baseline/obs_wrappers.py``
and ``rl_baseline/monk_tasks_nle.py``. Where NLE's observations cannot say something exactly
(which level is Delphi or Minetown), the condition is a documented proxy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
from nle import nethack

from llmexplore.envs.nethack.game_state import Dungeon, GameState, Hunger, count_kills

# -- level facts from NetHack 3.6's dungeon.def ------------------------------------------------
#: "oracle" @ (5, 5): Delphi is one of levels 5-9 of the Dungeons of Doom
ORACLE_LEVELS = range(5, 10)
#: "minetn" @ (3, 2) in the Mines: Minetown is the Mines' 3rd or 4th level (depth 5-8);
#: the filler levels around it have no fountains, altars, shops or watch, Mines' End is level 8+
MINETOWN_LEVELS = (3, 4)

# -- glyphs -----------------------------------------------------------------------------------
#: indices into NetHack 3.6's defsym table (S_altar, S_fountain)
S_ALTAR, S_FOUNTAIN = 27, 31
ALTAR_GLYPH = nethack.GLYPH_CMAP_OFF + S_ALTAR
FOUNTAIN_GLYPH = nethack.GLYPH_CMAP_OFF + S_FOUNTAIN
_NUM_MONSTERS = nethack.GLYPH_PET_OFF - nethack.GLYPH_MON_OFF


def _monster_indices(names: set[str]) -> list[int]:
    found = [m for m in range(_NUM_MONSTERS) if nethack.permonst(m).mname in names]
    if len(found) != len(names):
        raise RuntimeError(f"NLE lacks some of the monsters {sorted(names)}")
    return found


def _monster_glyphs(names: set[str]) -> np.ndarray:
    """Every glyph that shows one of these monsters: seen, tame, detected or ridden."""
    offsets = (
        nethack.GLYPH_MON_OFF, nethack.GLYPH_PET_OFF, nethack.GLYPH_DETECT_OFF, nethack.GLYPH_RIDDEN_OFF
    )
    return np.array(sorted(off + m for m in _monster_indices(names) for off in offsets), dtype=np.int64)


#: the Oracle herself, and the centaur statues that ring her room (oracle.des)
ORACLE_GLYPHS = _monster_glyphs({"Oracle"})
_CENTAURS = {"plains centaur", "forest centaur", "mountain centaur"}
CENTAUR_STATUE_GLYPHS = np.array([nethack.GLYPH_STATUE_OFF + m for m in _monster_indices(_CENTAURS)])
#: Minetown's residents: shopkeepers, the temple priest, the watch (mines.des, every variant but Orcish Town)
MINETOWN_RESIDENT_GLYPHS = _monster_glyphs({"shopkeeper", "aligned priest", "watchman", "watch captain"})
#: Minetown's fixtures: every variant has fountains and a temple altar, Mines filler levels have neither
MINETOWN_FEATURE_GLYPHS = np.array([ALTAR_GLYPH, FOUNTAIN_GLYPH])

# -- messages ---------------------------------------------------------------------------------
#: a shop's greeting and a temple's entry messages (shk.c, priest.c)
_TOWN_MESSAGE = re.compile(
    r"Welcome to \w[\w' -]*'s |you enter a sacred place|You have a (?:strange )?forbidding feeling"
    r"|You experience a strange sense of peace"
)
#: the Oracle's greeting when the hero steps into her centre room (hack.c, check_special_room)
_DELPHI_WELCOME = re.compile(r"welcome to Delphi!")
_SOLD = re.compile(r"\bYou sold ")
_TRADE = re.compile(r"\bYou (?:bought|sold) ")
_PRICE_QUOTE = re.compile(
    r"\boffers \d+ gold pieces? for "  # dropping wares: "Shk offers 5 gold pieces for your egg.  Sell it?"
    r"|\(for sale, \d+ zorkmids?\)"  # standing on wares: "You see here an egg (for sale, 12 zorkmids)."
    r"|\bonly \d+ zorkmids?\b"  # picking wares up: "For you, good sir; only 12 zorkmids for this egg."
    r"|\b\d+ zorkmids? in credit for "  # a shopkeeper short of gold offers credit for the item
)
_ALTAR_DROP = re.compile(r"^There is an? \w+ flash as .+ hits? the altar\b|^.+ lands? on the altar\b")
_BUC_WORD = re.compile(r"\b(?:blessed|uncursed|cursed)\b")
_COINS = re.compile(r"^\d+ gold pieces? lands? on the altar")
_EAT_PROMPT = re.compile(r"What do you want to eat\?|; eat (?:it|one)\?")
EXIT_PROMPT = "Still climb?"


# -- single-state conditions ----------------------------------------------------------------------
def in_gnomish_mines(state: GameState) -> bool:
    """On any level of the Gnomish Mines (exact: the dungeon number)."""
    return state.in_game and state.dnum == Dungeon.GNOMISH_MINES


def at_delphi(state: GameState) -> bool:
    """Proxy for "on the Oracle's level": Delphi's depth range plus one of its landmarks seen.

    True on levels 5-9 of the Dungeons of Doom once the Oracle greets the hero ("welcome
    to Delphi!") or, while not hallucinating (which paints random monsters), the map shows
    the Oracle or one of the centaur statues around her room. Misses: arriving at Delphi
    and leaving before the centre room comes into view. False alarms need a random centaur
    statue on levels 5-9, which is rare.
    """
    if not (state.in_game and state.dnum == Dungeon.DUNGEONS_OF_DOOM and state.dlevel in ORACLE_LEVELS):
        return False
    if state.said(_DELPHI_WELCOME):
        return True
    if state.hallucinating:
        return False
    return state.sees_any(ORACLE_GLYPHS) or state.sees_any(CENTAUR_STATUE_GLYPHS)


def at_minetown(state: GameState) -> bool:
    """Proxy for "in Minetown": the Mines' 3rd or 4th level plus one of the town's marks.

    Marks: a fountain or altar on the map, a shopkeeper, temple priest or watchman in
    view (not while hallucinating), or a shop greeting / temple entry message. Mines
    filler levels have none of these. Misses: reaching the town and leaving before any
    mark shows (possible in the dark Orcish Town or Grotto Town variants).
    """
    if not (state.in_game and state.dnum == Dungeon.GNOMISH_MINES and state.dlevel in MINETOWN_LEVELS):
        return False
    if state.sees_any(MINETOWN_FEATURE_GLYPHS) or state.said(_TOWN_MESSAGE):
        return True
    return not state.hallucinating and state.sees_any(MINETOWN_RESIDENT_GLYPHS)


def made_trade(state: GameState) -> bool:
    """A purchase or sale completed this step: "You bought ..." or "You sold ..."."""
    return state.in_game and state.said(_TRADE)


def sold_item(state: GameState) -> bool:
    """A sale completed this step ("You sold ..."), in the shown or a skipped message."""
    return state.in_game and state.said(_SOLD)


def got_price_quote(state: GameState) -> bool:
    """A shopkeeper named a price: a sale offer, a "for sale" tag, or the pick-up quote."""
    return state.in_game and state.said(_PRICE_QUOTE)


def learned_buc(state: GameState) -> bool:
    """An item dropped on an altar showed its status: a black/amber flash, or none ("lands").

    Items whose status was already known (NetHack then names it: "an uncursed scroll ...
    lands on the altar") and gold teach nothing; while hallucinating the flash colour is
    random and NetHack does not mark the status as known.
    """
    if not state.in_game or state.hallucinating:
        return False
    return any(
        _ALTAR_DROP.search(s) and not _BUC_WORD.search(s) and not _COINS.search(s) for s in state.sentences
    )


def exit_attempt(state: GameState) -> bool:
    """On level 1 at the up staircase, NetHack asks "Beware, there will be no return!  Still climb?"."""
    return (
        state.in_game
        and state.dnum == Dungeon.DUNGEONS_OF_DOOM
        and state.dlevel == 1
        and EXIT_PROMPT in state.message
    )


def ate(previous: Optional[GameState], current: GameState) -> bool:
    """An eat prompt was answered with food: it showed last step and game time moved on."""
    return (
        previous is not None
        and previous.in_game
        and current.in_game
        and bool(_EAT_PROMPT.search(previous.message))
        and current.time > previous.time
    )


# -- interaction counts (MaestroMotif's published measure for the shop and altar tasks) -------------
#: shopkeepers on the map, and a shop's greeting, mean the hero has seen a shop
SHOPKEEPER_GLYPHS = _monster_glyphs({"shopkeeper"})
_SHOP_GREETING = re.compile(r"Welcome to \w[\w' -]*'s ")


def shop_seen(state: GameState) -> bool:
    """A shop is in view: a shopkeeper on the map (not while hallucinating) or a shop's greeting."""
    if not state.in_game:
        return False
    return state.said(_SHOP_GREETING) or (not state.hallucinating and state.sees_any(SHOPKEEPER_GLYPHS))


def altar_seen(state: GameState) -> bool:
    """An altar is on the map (its glyph is not a monster's, so hallucination does not fake it)."""
    return state.in_game and state.sees_any(np.array([ALTAR_GLYPH]))


def _counter(condition: Callable[[str], bool]) -> Callable[[GameState], int]:
    def count(state: GameState) -> int:
        return sum(1 for s in state.sentences if condition(s)) if state.in_game else 0

    return count


count_trades = _counter(lambda s: bool(_TRADE.search(s)))
count_price_quotes = _counter(lambda s: bool(_PRICE_QUOTE.search(s)))


def count_buc_learned(state: GameState) -> int:
    """Items of unknown status dropped on an altar this step (see ``learned_buc``)."""
    if not state.in_game or state.hallucinating:
        return 0
    return sum(
        1 for s in state.sentences
        if _ALTAR_DROP.search(s) and not _BUC_WORD.search(s) and not _COINS.search(s)
    )


@dataclass(frozen=True)
class InteractionCount:
    """How often an interaction happened in an episode, and whether its venue was ever seen.

    MaestroMotif reports its interaction tasks as the mean number of events per episode over
    the episodes in which a shop (transactions, price identification) or an altar (BUC
    identification) was seen; episodes that never met the venue are left out.
    """

    events: Callable[[GameState], int]
    venue: Callable[[GameState], bool]
    venue_name: str

    def update(self, count: int, seen: bool, state: GameState) -> tuple[int, bool]:
        """One step of an episode: the running event count and whether the venue was seen so far.

        An event implies its venue (the hero standing on an altar hides the altar's glyph).
        """
        events = self.events(state)
        return count + events, seen or events > 0 or self.venue(state)


INTERACTION_COUNTS: dict[str, InteractionCount] = {
    "transaction": InteractionCount(count_trades, shop_seen, "shop"),
    "price-id": InteractionCount(count_price_quotes, shop_seen, "shop"),
    "buc-id": InteractionCount(count_buc_learned, altar_seen, "altar"),
}


# -- goals ----------------------------------------------------------------------------------------
Update = Callable[[Any, Optional[GameState], GameState], "tuple[Any, bool]"]


@dataclass(frozen=True)
class Goal:
    """A task's success condition: the memory it starts from and its pure update rule."""

    name: str
    update: Update
    initial: Any = None


def _stateless(condition: Callable[[GameState], bool]) -> Update:
    def update(memory: Any, previous: Optional[GameState], current: GameState) -> tuple[Any, bool]:
        return memory, condition(current)

    update.__doc__ = condition.__doc__
    return update


GOLDEN_EXIT_GOLD = 20
GOLDEN_EXIT_KILLS = 25
GOLDEN_EXIT_DEPTH = 3


@dataclass(frozen=True)
class GoldenExitMemory:
    kills: int = 0
    max_depth: int = 1
    #: 20 gold, 25 kills and depth 3 reached held together once; the exit may come later
    ready: bool = False


def golden_exit(
    memory: GoldenExitMemory, previous: Optional[GameState], current: GameState
) -> tuple[GoldenExitMemory, bool]:
    """Published: kills >= 25, gold >= 20 and depth 3 reached (at once), then try to leave via level 1's '<'.

    Kills are the player's announced kills ("You kill/destroy ..."), skipped messages
    included; the published evaluation counted steps whose message said "kill" or
    "destroy", pets' kills included. Gold is what the hero carries when the condition is met.
    """
    if not current.in_game:
        return memory, False
    kills = memory.kills + sum(count_kills(m) for m in current.messages)
    max_depth = max(memory.max_depth, current.depth)
    ready = memory.ready or (
        kills >= GOLDEN_EXIT_KILLS and current.gold >= GOLDEN_EXIT_GOLD and max_depth >= GOLDEN_EXIT_DEPTH
    )
    return GoldenExitMemory(kills, max_depth, ready), ready and exit_attempt(current)


LEVEL_UP_XP = 4
SURVIVE_STEPS = 300


@dataclass(frozen=True)
class LevelUpSellMemory:
    steps: int = 0
    #: experience level 4 reached while still on dungeon level 1
    leveled: bool = False
    #: left level 1 before that: the task can no longer succeed
    left_early: bool = False
    #: the step of the first sale after levelling up
    sold_at: Optional[int] = None


def level_up_and_sell(
    memory: LevelUpSellMemory, previous: Optional[GameState], current: GameState
) -> tuple[LevelUpSellMemory, bool]:
    """Published: reach XP level 4 before leaving level 1, then sell an item, then survive 300 more steps.

    The published evaluation code checked only the sale and the 300 steps; the task prompt
    adds the level rule, which we enforce. Steps are agent steps (one per update after the first).
    """
    if not current.in_game:
        return memory, False
    steps = memory.steps + (previous is not None)
    on_first_level = current.dnum == Dungeon.DUNGEONS_OF_DOOM and current.dlevel == 1
    leveled = memory.leveled or (not memory.left_early and on_first_level and current.xp_level >= LEVEL_UP_XP)
    left_early = memory.left_early or (not leveled and not on_first_level)
    sold_at = memory.sold_at
    if sold_at is None and leveled and sold_item(current):
        sold_at = steps
    success = sold_at is not None and steps - sold_at >= SURVIVE_STEPS
    return LevelUpSellMemory(steps, leveled, left_early, sold_at), success


@dataclass(frozen=True)
class DiscoveryHungerMemory:
    #: ate food in the Gnomish Mines while hungry (or worse)
    ate_in_mines: bool = False


def discovery_hunger(
    memory: DiscoveryHungerMemory, previous: Optional[GameState], current: GameState
) -> tuple[DiscoveryHungerMemory, bool]:
    """Published: enter the Mines, get hungry and eat there; only then reach the Oracle's level.

    The eating must answer an eat prompt shown in the Mines while the status line said
    Hungry, Weak or worse. Reaching Delphi uses the ``at_delphi`` proxy; being there
    before eating does not fail the task, only arriving afterwards counts.
    """
    if not current.in_game:
        return memory, False
    ate_now = (
        previous is not None
        and previous.dnum == Dungeon.GNOMISH_MINES
        and previous.hunger >= Hunger.HUNGRY
        and ate(previous, current)
    )
    done_eating = memory.ate_in_mines or ate_now
    return DiscoveryHungerMemory(done_eating), done_eating and at_delphi(current)


GOALS: dict[str, Goal] = {
    "gnomish-mines": Goal("gnomish-mines", _stateless(in_gnomish_mines)),
    "delphi": Goal("delphi", _stateless(at_delphi)),
    "minetown": Goal("minetown", _stateless(at_minetown)),
    "transaction": Goal("transaction", _stateless(made_trade)),
    "price-id": Goal("price-id", _stateless(got_price_quote)),
    "buc-id": Goal("buc-id", _stateless(learned_buc)),
    "golden-exit": Goal("golden-exit", golden_exit, GoldenExitMemory()),
    "level-up-and-sell": Goal("level-up-and-sell", level_up_and_sell, LevelUpSellMemory()),
    "discovery-hunger": Goal("discovery-hunger", discovery_hunger, DiscoveryHungerMemory()),
}
