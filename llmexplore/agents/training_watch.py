"""What the main process does while sample-factory trains: it owns the budget and hears the engine's reports.

``TrainingWatch`` counts the steps trained, stops the runner at the budget (``on_training_step``, a
  sample-factory observer), files episodes and the learner's reports into the run's sink, and says how
  the session ended (``result``). The budget and its one stop rule are ``training_budget.py``'s.

Imported by ``training.train`` only, once sample-factory is known to be the expected one.
"""

from __future__ import annotations

import time
from typing import Any

from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.algo.utils.misc import EPISODIC, ExperimentStatus

from llmexplore.agents import sf_private
from llmexplore.agents.episode_ledger import EpisodeLedger
from llmexplore.agents.learner import REPORT_KEY
from llmexplore.agents.training_budget import TrainingBudget
from llmexplore.agents.training_result import TrainingSink, TrainResult
from llmexplore.agents.vector_env import episode_rows


class TrainingWatch(AlgoObserver):
    """The main process's view of one training session (a sample-factory observer and message handler)."""

    def __init__(self, runner: Any, budget: TrainingBudget, sink: TrainingSink, resume_env_steps: int,
                 serial: bool):
        self.runner = runner
        self.budget = budget
        self.sink = sink
        self.resume_env_steps = resume_env_steps
        self.serial = serial
        cfg = runner.cfg
        self.samples_per_update = cfg.batch_size * cfg.num_batches_per_epoch  # sample-factory's batch_size: minibatch
        self.started = time.time()
        self.ledger = EpisodeLedger(sink, resume_env_steps)  # files each episode under the batch that trained it

    # -- counting ------------------------------------------------------------------------------------
    def reported_steps(self) -> int:
        """The learner's count as the runner last heard it (it hears after each iteration's observers)."""
        return int(self.runner.env_steps.get(0, self.resume_env_steps))

    def trained_steps(self) -> int:
        """The learner's count after the iteration that just ended: in serial mode the learner is here to
        ask; otherwise its report of this iteration is still on the way, which added one batch."""
        learner = sf_private.runner_learners(self.runner).get(0) if self.serial else None
        return int(learner.env_steps) if learner is not None else self.reported_steps() + self.samples_per_update

    # -- sample-factory's calls ------------------------------------------------------------------------
    def on_training_step(self, runner: Any, training_iteration_since_resume: int) -> None:
        """After each iteration: progress to the sink, and the stop at the budget."""
        steps = self.reported_steps()
        elapsed = max(time.time() - self.started, 1e-6)
        self.sink.on_progress(steps, (steps - self.resume_env_steps) / elapsed)
        if self.budget.reached(self.trained_steps()):
            sf_private.stop_training(runner)

    def listen(self) -> None:
        """Hear finished episodes and the learner's reports (after sample-factory's own handlers)."""
        sf_private.add_policy_msg_handler(self.runner, EPISODIC, self.on_episode)
        sf_private.add_policy_msg_handler(self.runner, REPORT_KEY, self.on_report)

    def on_episode(self, _runner: Any, msg: dict, _policy_id: int) -> None:
        """A finished episode: kept until the learner reports the batch that trained its last step."""
        for row in episode_rows(msg[EPISODIC]):  # one per-env episode, or every sub-env's that just ended
            self.ledger.episode(row)

    def on_report(self, _runner: Any, msg: dict, _policy_id: int) -> None:
        """The learner's report of a batch: its metrics row, the episodes it ended, a parent's load."""
        report = msg[REPORT_KEY]
        steps = int(report.get("env_steps", self.reported_steps()))  # the learner's count after the batch
        if report.get("metrics"):  # before the ledger moves the logs' "complete through" mark past this batch
            self.sink.on_metrics(steps, report["metrics"])
        if "episodes" in report:  # one per trained batch (a stop's last metrics row has none)
            self.ledger.batch_trained(steps, [(int(uid), float(total)) for uid, total in report["episodes"]])
        if report.get("parent"):
            self.sink.on_parent(report["parent"])

    # -- the end -------------------------------------------------------------------------------------------
    def result(self, status: Any) -> TrainResult:
        """How the session ended: complete only at the budget and with no child process dead."""
        seconds = time.time() - self.started
        if status is None:  # the engine never started
            return TrainResult("failed", self.resume_env_steps, 0, seconds)
        steps = self.reported_steps()
        outcome = {ExperimentStatus.SUCCESS: "complete",
                   ExperimentStatus.INTERRUPTED: "interrupted"}.get(status, "failed")
        if outcome == "complete" and steps < self.budget.steps:
            outcome = "interrupted"
        watchdog = getattr(self.runner, "watchdog", None)
        error = watchdog.failure if watchdog is not None else None
        if error is not None:
            outcome = "failed"
        return TrainResult(outcome, steps, steps - self.resume_env_steps, seconds, error)
