"""NetHack tasks of the Motif and ONI papers on NLE 1.0.0.

Behaviour follows the published task code (Motif's ``tasks_nle.py``), re-implemented
against NLE 1.0's gymnasium API:

* Score: score delta, -0.01 on steps where game time does not advance (NLE's penalty).
* Staircase / Lvl3 / Lvl4: +50 and the episode ends when the message says the agent
  descended the stairs and the level number (blstats[24]) equals the target (2, 3, 4).
* Continual Staircase Lvl3/4: the same success pays +50 once; the episode ends only on
  death (or the step limit). Used for intrinsic-only runs.
* Oracle: +50 and the episode ends when the Oracle glyph is in the 3x3 neighbourhood.
* OracleSober: as Oracle, and the agent must not be hallucinating. We test the
  hallucination *bit* of the condition mask; the published code compared the whole mask
  with 512, which misses hallucination combined with any other condition.

Two published interface fixes are kept:

* Fixed eat action: while "What do you want to eat?" is showing, the action bound to 'y'
  answers with the first item letter the prompt lists; any other action cancels the prompt.
* "--More--" is skipped as in NLE, but the message "You descend the stairs." that NetHack
  shows behind a --More-- is kept (prefixed to whatever message shows after it), since
  success detection and the LM both need it. The other skipped messages of a step are
  listed in ``more_messages`` (not shown to the agent) so episode stats such as the kill
  count miss nothing.
"""

from __future__ import annotations

import enum
import re

import numpy as np
from nle import nethack
from nle.env import base
from nle.env.tasks import TASK_ACTIONS

ASCII_SPACE = base.ASCII_SPACE
ASCII_ESC = base.ASCII_ESC
SKIP_EXCEPTIONS = base.SKIP_EXCEPTIONS

DESCEND_MESSAGE = b"You descend the stairs"
EAT_PROMPT = b"What do you want to eat"
_EAT_CHOICES = re.compile(rb"\[([a-zA-Z]+)")
_EAT_FIRST_BYTE = EAT_PROMPT[0]

#: ONI's extended action set: the 23 task actions plus cast, quaff, pray, pickup, pay.
EXTENDED_ACTIONS = tuple(TASK_ACTIONS) + (
    nethack.Command.CAST,
    nethack.Command.QUAFF,
    nethack.Command.PRAY,
    nethack.Command.PICKUP,
    nethack.Command.PAY,
)

#: The zero-shot (MaestroMotif) tasks' default: ONI's 28 actions plus drop. Buying needs pickup and
#: pay, selling and altar identification need drop; MaestroMotif's published set had drop too.
MAESTRO_ACTIONS = EXTENDED_ACTIONS + (nethack.Command.DROP,)

SUCCESS_REWARD = 50.0


class StepStatus(enum.IntEnum):
    ABORTED = -1
    RUNNING = 0
    DEATH = 1
    TASK_SUCCESSFUL = 2


class NetHackScore(base.NLE):
    """Score task with the fixed eat action and the kept descend message."""

    StepStatus = StepStatus
    #: yes/no questions left to the agent instead of declined (substrings of the prompt)
    skip_exceptions: tuple[bytes, ...] = SKIP_EXCEPTIONS

    def __init__(self, *args, penalty_step: float = -0.01, **kwargs):
        self.penalty_step = penalty_step
        self._frozen_steps = 0
        #: this step's messages that were skipped behind "--More--" (the descend message aside)
        self.more_messages: list[bytes] = []
        kwargs.setdefault("actions", TASK_ACTIONS)
        super().__init__(*args, **kwargs)
        self._y_action = ord("y")
        self._keys = [int(a) for a in self.actions]  # IntEnum -> int once, not on every step

    # -- reward ---------------------------------------------------------------------------
    def _time_penalty(self, last_observation, observation) -> float:
        old_time = last_observation[self._blstats_index].item(nethack.NLE_BL_TIME)
        new_time = observation[self._blstats_index].item(nethack.NLE_BL_TIME)
        self._frozen_steps = self._frozen_steps + 1 if old_time == new_time else 0
        return self.penalty_step if self._frozen_steps > 0 else 0.0

    def _reward_fn(self, last_observation, action, observation, end_status):
        # NLE's score difference, read with .item(): numpy scalar arithmetic costs more per step
        score_diff = 0.0
        if self.nethack.in_normal_game():  # before the game starts and after it ends blstats read zero
            blstats = self._blstats_index
            score_diff = (observation[blstats].item(nethack.NLE_BL_SCORE)
                          - last_observation[blstats].item(nethack.NLE_BL_SCORE))
        return score_diff + self._time_penalty(last_observation, observation)

    # -- stepping ---------------------------------------------------------------------------
    def _translate_action(self, action: int) -> int:
        """Map the agent's action index to a keypress, answering the eat prompt if showing."""
        key = self._keys[action]
        raw = self.last_observation[self._message_index]
        if raw.item(0) != _EAT_FIRST_BYTE:  # cheap test first: this runs on every step
            return key
        message = raw.tobytes()
        if message.startswith(EAT_PROMPT):
            match = _EAT_CHOICES.search(message)
            if match and key == self._y_action:
                return match.group(1)[0]
            return ASCII_ESC
        return key

    def _snapshot(self, observation: tuple) -> tuple:
        """The previous observation as the reward functions see it. They read only blstats, so only
        blstats is copied (NLE overwrites its arrays in place); the other entries are None, so a
        reward function that starts reading them fails loudly instead of seeing the new state.
        NLE copies every array here, a fifth of the cost of a step."""
        snapshot: list = [None] * len(observation)
        snapshot[self._blstats_index] = observation[self._blstats_index].copy()
        return tuple(snapshot)

    def step(self, action: int):
        """One agent action: the eat prompt answered or cancelled, --More-- skipped (the descend
        message kept, the others in ``more_messages``); a task that ends quits the game."""
        self.more_messages = []
        last_observation = self._snapshot(self.last_observation)
        observation, done = self.nethack.step(self._translate_action(action))
        truncated = bool(self._check_abort(observation))
        is_game_over = observation[self._program_state_index].item(0) == 1
        if is_game_over or not self._allow_all_modes:
            observation, done = self._perform_known_steps(observation, done, exceptions=True)
        self._steps += 1
        self.last_observation = observation
        end_status = self._get_end_status(observation, done)
        reward = float(self._reward_fn(last_observation, action, observation, end_status))
        if end_status and not done:
            # NLE reuses its arrays: keep the state the task ended in, not the post-quit screen
            observation = tuple(a.copy() for a in observation)
            self._quit_game(observation, done)
            done = True
        return self._get_observation(observation), reward, bool(done), truncated, self._get_information(end_status)

    def reset(self, seed=None, options=None):
        """NLE's reset with the frozen-time count and ``more_messages`` cleared."""
        self._frozen_steps = 0
        self.more_messages = []
        return super().reset(seed=seed, options=options)

    def _perform_known_steps(self, observation, done, exceptions=True):
        kept_message = None
        while not done:
            if observation[self._internal_index][3]:  # waiting for --More--
                message = observation[self._message_index]
                if DESCEND_MESSAGE in bytes(message):
                    kept_message = message.copy()
                else:  # skipped: the agent never sees it, episode stats still count it
                    self.more_messages.append(bytes(message).rstrip(b"\0"))
                observation, done = self.nethack.step(ASCII_SPACE)
                continue
            internal = observation[self._internal_index]
            if internal[2]:  # asked for a line of text: decline
                observation, done = self.nethack.step(ASCII_ESC)
                continue
            if internal[1]:  # asked for a single character
                if exceptions:
                    message = bytes(observation[self._message_index])
                    if self._allow_all_yn_questions or any(e in message for e in self.skip_exceptions):
                        break
                observation, done = self.nethack.step(ASCII_ESC)
            break
        if kept_message is not None:
            observation = (
                *observation[: self._message_index],
                _combine_messages(kept_message, observation[self._message_index]),
                *observation[self._message_index + 1 :],
            )
        return observation, done


def _combine_messages(kept: np.ndarray, latest: np.ndarray) -> np.ndarray:
    """Prefix the kept message to the one showing now, within NetHack's 256 bytes."""
    first = bytes(kept).rstrip(b"\0")
    second = bytes(latest).rstrip(b"\0")
    text = first if not second or second == first else first + b" " + second
    out = np.zeros_like(kept)
    out[: min(len(text), len(out))] = np.frombuffer(text[: len(out)], dtype=np.uint8)
    return out


class NetHackStaircase(NetHackScore):
    """Descend to ``target_level``: +50 once, episode ends (unless continual)."""

    target_level = 2
    continual = False

    def reset(self, seed=None, options=None):
        """Clear the success flags, then reset as Score does."""
        self._success_paid = False
        self._succeeded = False
        return super().reset(seed=seed, options=options)

    def _descended_to_target(self, observation) -> bool:
        message = bytes(observation[self._message_index])
        level = observation[self._blstats_index][nethack.NLE_BL_DLEVEL]
        return DESCEND_MESSAGE in message and int(level) == self.target_level

    def _is_episode_end(self, observation):
        if self._descended_to_target(observation):
            self._succeeded = True
            if not self.continual:
                return StepStatus.TASK_SUCCESSFUL
        return StepStatus.RUNNING

    def _reward_fn(self, last_observation, action, observation, end_status):
        if self._succeeded and not self._success_paid:
            self._success_paid = True
            return SUCCESS_REWARD
        return 0.0

    def _get_information(self, end_status):
        info = super()._get_information(end_status)
        info["success"] = bool(getattr(self, "_succeeded", False))
        return info


class NetHackStaircaseLvl3(NetHackStaircase):
    target_level = 3


class NetHackStaircaseLvl4(NetHackStaircase):
    target_level = 4


class NetHackStaircaseLvl3Continual(NetHackStaircaseLvl3):
    continual = True


class NetHackStaircaseLvl4Continual(NetHackStaircaseLvl4):
    continual = True


def _oracle_glyph() -> int:
    for glyph in range(nethack.GLYPH_MON_OFF, nethack.GLYPH_PET_OFF):
        if nethack.permonst(nethack.glyph_to_mon(glyph)).mname == "Oracle":
            return glyph
    raise RuntimeError("NLE has no Oracle monster glyph")


class NetHackOracle(NetHackStaircase):
    """Stand next to the Oracle: +50, episode ends."""

    require_sober = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.oracle_glyph = _oracle_glyph()

    def _oracle_adjacent(self, observation) -> bool:
        glyphs = observation[self._glyph_index]
        blstats = observation[self._blstats_index]
        x, y = int(blstats[nethack.NLE_BL_X]), int(blstats[nethack.NLE_BL_Y])
        neighbours = glyphs[max(y - 1, 0) : y + 2, max(x - 1, 0) : x + 2]
        return bool(np.any(neighbours == self.oracle_glyph))

    def _is_episode_end(self, observation):
        if self._oracle_adjacent(observation):
            hallucinating = bool(
                int(observation[self._blstats_index][nethack.NLE_BL_CONDITION]) & nethack.BL_MASK_HALLU
            )
            if not (self.require_sober and hallucinating):
                self._succeeded = True
                return StepStatus.TASK_SUCCESSFUL
        return StepStatus.RUNNING


class NetHackOracleSober(NetHackOracle):
    require_sober = True
