"""MaestroMotif's zero-shot evaluation tasks as NLE tasks: +50 once on success.

Navigation and composite tasks end at their success. The interaction tasks (transaction,
price-id, buc-id) play on, as in the published evaluation, counting their events
(``info["count"]``) and noting whether a shop or altar was seen (``info["venue_seen"]``):
their published measure is the mean count over the episodes that saw the venue.

The success conditions live in ``goals.py`` as pure functions of ``GameState`` snapshots;
this module turns each into an NLE task (reward, termination, ``info["success"]``) and
lists the tasks with the prompt a language model gets when it writes a policy over the
skills discoverer, descender, ascender, worshipper and merchant.

Interface for the shop and altar tasks. The default action set is ``MAESTRO_ACTIONS``
(ONI's 28 plus drop). NLE declines every yes/no question the agent was not meant to see;
these tasks leave the drop, sell, pay and credit questions to the agent instead, and
answer them like the fixed eat action: the action bound to 'y' says yes (for "What do you
want to drop?" it names the first listed item the hero did not start with, as MaestroMotif's
drop macro did), any other action declines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from llmexplore.envs.nethack import goals, tasks
from llmexplore.envs.nethack.game_state import GameState

StepStatus = tasks.StepStatus

DROP_PROMPT = b"What do you want to drop?"
#: questions a shop asks: sell an item, accept credit instead of gold, pay (itemized or not)
SHOP_PROMPTS = (b"Sell it?", b"in credit for", b"Pay?", b"Itemized billing?")
_LISTED = re.compile(rb"\[([^\]\s]+)")  # "[$a-ikn or ?*]" -> "$a-ikn"
_GOLD = ord("$")


def listed_letters(prompt: bytes) -> list[int]:
    """The inventory letters an item prompt offers, ranges expanded ("$a-ckn" -> $ a b c k n)."""
    match = _LISTED.search(prompt)
    if not match:
        return []
    spec, out, i = match.group(1), [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == ord("-"):
            out.extend(range(spec[i], spec[i + 2] + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return out


class NetHackInteractive(tasks.NetHackScore):
    """NetHack Score where the agent answers the drop, sell, pay and credit questions itself.

    The zero-shot tasks build on it, and MaestroMotif's skills train in it
    (``nethack:maestro-score``), so a skill policy meets the same actions and questions in
    training as in evaluation.
    """

    #: yes/no questions the agent answers itself (see the module docstring)
    answered_prompts: ClassVar[tuple[bytes, ...]] = (DROP_PROMPT, *SHOP_PROMPTS)
    skip_exceptions = tasks.SKIP_EXCEPTIONS + answered_prompts

    def __init__(self, *args, **kwargs):
        keys = kwargs.get("observation_keys")
        if keys is not None:  # the snapshot and the drop answer need the inventory
            kwargs["observation_keys"] = tuple(dict.fromkeys((*keys, "inv_strs", "inv_letters")))
        kwargs.setdefault("actions", tasks.MAESTRO_ACTIONS)
        super().__init__(*args, **kwargs)
        self._inv_strs_index = self._observation_keys.index("inv_strs")
        self._inv_letters_index = self._observation_keys.index("inv_letters")
        self._start_letters: frozenset[int] = frozenset()

    def reset(self, seed=None, options=None):
        """Reset, then note the inventory letters the hero starts with: the drop answer never picks them."""
        self._start_letters = frozenset()
        result = super().reset(seed=seed, options=options)
        self._start_letters = frozenset(int(c) for c in self.last_observation[self._inv_letters_index] if c)
        return result

    # -- answering the questions left to the agent -------------------------------------------------
    def _translate_action(self, action: int) -> int:
        if not self.last_observation[self._internal_index][1]:  # no yes/no question: every ordinary step
            return super()._translate_action(action)
        message = bytes(self.last_observation[self._message_index])
        if not any(p in message for p in self.answered_prompts):
            return super()._translate_action(action)
        if self._keys[action] != self._y_action:
            return tasks.ASCII_ESC
        if DROP_PROMPT in message:
            return self._drop_choice(message)
        return self._y_action

    def _drop_choice(self, prompt: bytes) -> int:
        for letter in listed_letters(prompt):
            if letter != _GOLD and letter not in self._start_letters:
                return letter
        return tasks.ASCII_ESC


class NetHackZeroShot(NetHackInteractive):
    """Base of the zero-shot tasks: the goal decides success; no other reward."""

    goal: ClassVar[goals.Goal]
    #: the interaction tasks count their events and do not end at the first one (as published)
    counted: ClassVar[goals.InteractionCount | None] = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._new_episode()

    def _new_episode(self) -> None:
        self.memory = self.goal.initial
        self.previous_state: GameState | None = None
        self._succeeded = False
        self._success_paid = False
        self.event_count = 0
        self.venue_seen = False

    def reset(self, seed=None, options=None):
        """Fresh goal memory, success flags and event count, then the interactive reset."""
        self._new_episode()
        return super().reset(seed=seed, options=options)

    # -- success --------------------------------------------------------------------------------
    def snapshot(self, observation) -> GameState:
        """The game state of a raw NLE observation tuple, with this step's skipped messages."""
        return GameState.from_arrays(
            observation[self._blstats_index],
            observation[self._message_index],
            glyphs=observation[self._glyph_index],
            inv_strs=observation[self._inv_strs_index],
            skipped=self.more_messages,
        )

    def _is_episode_end(self, observation):
        if not self._succeeded or self.counted is not None:
            state = self.snapshot(observation)
            if state.in_game:
                if not self._succeeded:
                    self.memory, self._succeeded = self.goal.update(self.memory, self.previous_state, state)
                if self.counted is not None:
                    self.event_count, self.venue_seen = self.counted.update(
                        self.event_count, self.venue_seen, state)
                self.previous_state = state
        if self._succeeded and self.counted is None:
            return StepStatus.TASK_SUCCESSFUL
        return StepStatus.RUNNING

    def _get_end_status(self, observation, done):
        # the goal sees every step, the one that hits the step limit included
        success = self._is_episode_end(observation) == StepStatus.TASK_SUCCESSFUL
        if done:
            return StepStatus.DEATH  # NLE's reading of any game over
        if success:
            return StepStatus.TASK_SUCCESSFUL
        return StepStatus.ABORTED if self._check_abort(observation) else StepStatus.RUNNING

    def _reward_fn(self, last_observation, action, observation, end_status):
        if self._succeeded and not self._success_paid:
            self._success_paid = True
            return tasks.SUCCESS_REWARD
        return 0.0

    def _get_information(self, end_status):
        info = super()._get_information(end_status)
        info["success"] = bool(self._succeeded)
        if self.counted is not None:
            info["count"] = int(self.event_count)
            info["venue_seen"] = bool(self.venue_seen)
        return info


class NetHackGnomishMines(NetHackZeroShot):
    goal = goals.GOALS["gnomish-mines"]


class NetHackDelphi(NetHackZeroShot):
    goal = goals.GOALS["delphi"]


class NetHackMinetown(NetHackZeroShot):
    goal = goals.GOALS["minetown"]


class NetHackTransaction(NetHackZeroShot):
    goal = goals.GOALS["transaction"]
    counted = goals.INTERACTION_COUNTS["transaction"]


class NetHackPriceId(NetHackZeroShot):
    goal = goals.GOALS["price-id"]
    counted = goals.INTERACTION_COUNTS["price-id"]


class NetHackBucId(NetHackZeroShot):
    goal = goals.GOALS["buc-id"]
    counted = goals.INTERACTION_COUNTS["buc-id"]


class NetHackGoldenExit(NetHackZeroShot):
    """Also leaves "Still climb?" (level 1's up staircase) to the agent: 'y' leaves the dungeon."""

    goal = goals.GOALS["golden-exit"]
    answered_prompts = NetHackZeroShot.answered_prompts + (goals.EXIT_PROMPT.encode(),)
    skip_exceptions = tasks.SKIP_EXCEPTIONS + answered_prompts


class NetHackLevelUpAndSell(NetHackZeroShot):
    goal = goals.GOALS["level-up-and-sell"]


class NetHackDiscoveryHunger(NetHackZeroShot):
    goal = goals.GOALS["discovery-hunger"]


TASK_CLASSES: dict[str, type[NetHackZeroShot]] = {
    cls.goal.name: cls
    for cls in (
        NetHackGnomishMines,
        NetHackDelphi,
        NetHackMinetown,
        NetHackTransaction,
        NetHackPriceId,
        NetHackBucId,
        NetHackGoldenExit,
        NetHackLevelUpAndSell,
        NetHackDiscoveryHunger,
    )
}


@dataclass(frozen=True)
class ZeroShotTask:
    """One zero-shot task: its env, its category and the goal in words for a language model."""

    name: str
    task: str  # the registered env task, "nethack:<name>"
    category: Literal["navigation", "interaction", "composite"]
    prompt: str
    #: how success is decided, in one line (docs/maestro.md has the detail)
    success: str
    #: what our condition does differently from the published one ("" when it follows it)
    proxy: str = ""


def _task(name: str, category: str, prompt: str, success: str, proxy: str = "") -> ZeroShotTask:
    return ZeroShotTask(name, f"nethack:{name}", category, prompt, success, proxy)  # type: ignore[arg-type]


ZERO_SHOT_TASKS: dict[str, ZeroShotTask] = {
    t.name: t
    for t in (
        _task(
            "gnomish-mines",
            "navigation",
            "Reach the Gnomish Mines: on dungeon level 2, 3 or 4 there is a second down staircase that "
            "leads into this side branch, and the task is done on its first level.",
            "the dungeon number is the Mines'",
        ),
        _task(
            "delphi",
            "navigation",
            "Reach Delphi, the Oracle's level, which lies between dungeon levels 5 and 9 of the main "
            "Dungeons of Doom (not the Gnomish Mines); the task is done once you see the Oracle's "
            "centre room.",
            "levels 5-9 of the Dungeons of Doom and the Oracle or a centaur statue on the map",
            "published: the dungeon overview lists level 7",
        ),
        _task(
            "minetown",
            "navigation",
            "Reach Minetown, the town with shops and a temple on the third or fourth level of the Gnomish "
            "Mines, whose entrance is a second down staircase on dungeon level 2, 3 or 4.",
            "Mines level 3 or 4 with a fountain, altar, shopkeeper, priest or watchman seen, or a shop "
            "or temple greeting",
            "published: the overview lists three Mines levels",
        ),
        _task(
            "transaction",
            "interaction",
            "Trade with a shopkeeper: sell one of the items you picked up (or buy one) in a shop; shops "
            "only appear below the first dungeon level.",
            'a "You sold ..." or "You bought ..." message',
            "published: sales only",
        ),
        _task(
            "price-id",
            "interaction",
            "Get a shopkeeper to name a price for an item, for example by offering one of your items for "
            "sale in a shop; shops only appear below the first dungeon level.",
            'a sale offer, a "(for sale, N zorkmids)" tag or the pick-up quote',
            "published: a sale offer whose price narrows down an unidentified item",
        ),
        _task(
            "buc-id",
            "interaction",
            "Learn whether an item is blessed, uncursed or cursed by dropping it on an altar, where a "
            "flash (or none) tells its status; altars can appear on any level, often in temples.",
            "an altar flash or lands-on-the-altar message for an item of unknown status",
        ),
        _task(
            "golden-exit",
            "composite",
            "Travel between the first three levels of the Dungeons of Doom, reaching level 3 at least "
            "once, until you carry at least 20 gold pieces and have killed 25 monsters; then climb the up "
            "staircase of level 1 to leave the dungeon.",
            "25 kills, 20 gold and depth 3 held together, then the exit question at level 1's up stairs",
        ),
        _task(
            "level-up-and-sell",
            "composite",
            "Stay on the first dungeon level until you reach experience level 4, then go down, find a "
            "shopkeeper and sell an item you picked up, and finally stay alive for another 300 steps.",
            "XP level 4 before leaving level 1, then a sale, then 300 more steps alive",
            "published evaluation: the sale and the 300 steps only",
        ),
        _task(
            "discovery-hunger",
            "composite",
            "Enter the Gnomish Mines and stay there until you are hungry, then eat some food there; only "
            "after that, return to the Dungeons of Doom and reach the Oracle's level (levels 5 to 9).",
            "ate in the Mines while Hungry or worse, then the Delphi condition",
            "Delphi as in 'delphi'",
        ),
    )
}
