"""Which trained batch each finished episode belongs to: one consistent cut for every log of a run.

Why: sample-factory sends an episode's statistics from the rollout worker when the episode ends, long
before the learner trains on the batch holding its last step, and a checkpoint saves the learner as
of a batch. A row stamped with the learner's count when the statistics arrive belongs to a later
batch than its stamp says; after a kill, the resume trains that batch again and the row is counted
twice (a "ghost" episode), while the learner's own intrinsic rows are not.

So the statistics wait here until the learner reports the batch that trained them: its report lists
the env uid of every episode that ended in the batch, in order, and each is matched to the oldest
waiting row of that uid (an env's episodes end in the order it plays them, and an env's trajectories
reach the learner in that order too). Both the episode row and its intrinsic-return row then carry
the learner's count after that batch, the count the batch's checkpoint holds, so a resume from a
checkpoint at S keeps exactly the rows of the batches it trained: those stamped at or below S.
Rows of batches never trained (still in flight when training stopped) are never written.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, Protocol

#: the key under which the training env adds its uid to an episode's statistics (sf_env.TrainingEnv)
EPISODE_UID_KEY = "env_uid"


class LedgerSink(Protocol):
    def on_episode(self, row: dict[str, Any]) -> None: ...

    def on_intrinsic_returns(self, env_steps: int, returns: list[float]) -> None: ...

    def on_episodes_through(self, env_steps: int) -> None: ...


class EpisodeLedger:
    """Holds finished episodes' rows until the learner reports the batch that trained them."""

    def __init__(self, sink: LedgerSink, start_steps: int = 0):
        self.sink = sink
        #: (arrival number, row) waiting for their batch's report, per env uid, oldest first
        self._waiting: dict[int, deque[tuple[int, dict[str, Any]]]] = defaultdict(deque)
        self._arrivals = 0
        #: per env uid, (stamp, intrinsic return) of episodes a report named before their row arrived
        self._owed: dict[int, deque[tuple[int, float]]] = defaultdict(deque)
        self._reported_steps = start_steps
        #: how many episodes ``_owed`` holds (kept, not summed over every env at each report)
        self._owed_count = 0

    def episode(self, row: dict[str, Any]) -> None:
        """A finished episode's row from a rollout worker (carrying ``EPISODE_UID_KEY``)."""
        uid = int(row.pop(EPISODE_UID_KEY))
        self._arrivals += 1
        if self._owed[uid]:  # its batch was already reported (messages from two processes crossed)
            steps, intrinsic = self._owed[uid].popleft()
            self._owed_count -= 1
            self._write([(self._arrivals, row, steps, intrinsic)])
            self._advance()
        else:
            self._waiting[uid].append((self._arrivals, row))

    def batch_trained(self, env_steps: int, ended: list[tuple[int, float]]) -> None:
        """The learner trained a batch: its count after it, and (uid, intrinsic return) of each episode
        that ended in it, in the batch's order."""
        matched = []
        for uid, intrinsic in ended:
            if self._waiting[uid]:
                matched.append((*self._waiting[uid].popleft(), env_steps, intrinsic))
            else:
                self._owed[uid].append((env_steps, intrinsic))
                self._owed_count += 1
        self._write(matched)
        self._reported_steps = env_steps
        self._advance()

    def owed(self) -> int:
        """Episodes whose batch has been trained but whose row has not arrived yet."""
        return self._owed_count

    def _write(self, matched: list[tuple[int, dict[str, Any], int, float]]) -> None:
        """Write matched rows in the order their episodes ended (as the log always was), then their
        intrinsic returns under the same stamps."""
        matched.sort(key=lambda m: m[0])
        for _, row, steps, _ in matched:
            row["env_steps"] = steps
            self.sink.on_episode(row)
        by_steps: dict[int, list[float]] = defaultdict(list)
        for _, _, steps, intrinsic in matched:
            by_steps[steps].append(intrinsic)
        for steps, returns in by_steps.items():
            self.sink.on_intrinsic_returns(steps, returns)

    def _advance(self) -> None:
        """Every episode of every reported batch is written: the logs are complete up to the last one."""
        if not self.owed():
            self.sink.on_episodes_through(self._reported_steps)
