"""Where the intrinsic reward enters sample-factory.

sample-factory 2.1.1 has no reward hook in its learner, so we subclass ``Learner`` here,
and only here. Before each training batch goes through PPO we replace its rewards by
docs/METHODS.md's combination

    r_t = c_ext * clip(reward_scale * r_env, +-reward_clip) + c_int * r_int_t

(the sampler has already scaled and clipped r_env), let the method train online on the
batch, and add the method's state to every checkpoint so a resumed run continues with
everything it had learned. A method may also end returns inside an episode
(``IntrinsicReward.return_ends``, e.g. where a MaestroMotif skill hands over): only the
advantage estimate sees those ends, never the recurrent state's replay, which must match what
the actors computed. With two reward streams (``train.reward_streams=2``, reward_streams.py) the
batch's reward stays r_env, the bonus goes to a value head of its own, and PPO follows
c_ext * A_ext + c_int * A_int. The runners below swap this learner into sample-factory's
``LearnerWorker``. ``IntrinsicLearner.train`` is the whole update step in one place; the parts of
sample-factory's private API it needs are reached through sf_private.py only.
"""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Optional

import numpy as np
import torch
from sample_factory.algo.runners.runner_parallel import ParallelRunner
from sample_factory.algo.runners.runner_serial import SerialRunner
from sample_factory.algo.utils.misc import POLICY_ID_KEY
from sample_factory.algo.utils.tensor_dict import TensorDict
from sample_factory.utils.utils import log

from llmexplore.agents.checkpoints import (CHECKPOINT_KEY, RUN_IDENTITY_KEY, load_checkpoint_file,
                                           reset_policy_parts)
from llmexplore.agents.metrics_schedule import MetricsSchedule, default_metrics_every
from llmexplore.agents.reward_streams import IntrinsicReturnNormalizer, RewardStreams
from llmexplore.agents.run_settings import RunSettings
from llmexplore.agents.sf_private import LearnerHooks, LearnerWorkerHooks, RunnerHooks, child_processes
from llmexplore.envs.base import ENV_UID_KEY
from llmexplore.methods import IntrinsicReward, RewardBatch
from llmexplore.methods.segments import SegmentSums

#: key of our learner's report in sample-factory's stats messages
REPORT_KEY = "llmexplore"
#: key, in our checkpoint entry, of the intrinsic return's normalisation (two reward streams)
STREAMS_KEY = "reward_streams"


class IntrinsicLearner(LearnerHooks):
    """sample-factory's APPO learner, training on c_ext * r_env + c_int * r_int and training the method too."""

    method: IntrinsicReward
    #: two reward streams' settings and RND's normalisation of the bonus; None with one stream (``_init_streams``)
    streams: RewardStreams | None = None
    int_normalizer: IntrinsicReturnNormalizer | None = None

    def init(self):
        """sample-factory's learner set-up, plus the run's method, the metrics schedule and the reward
        sums."""
        self.settings = RunSettings.from_cfg(self.cfg)
        method_cls, options = self.settings.method_class_and_options()
        context = dataclasses.replace(self.settings.method_context(),
                                      num_actions=getattr(self.env_info.action_space, "n", None))
        self.method = method_cls(options, context, self.env_info.obs_space)
        run = self.settings.run  # the resolved run, as the run folder's resolved.json holds it
        self.ext_coef = run.ext_coef
        self.int_coef = run.int_coef
        #: each env's intrinsic return of the episode so far, across batches
        self.episode_returns = SegmentSums()
        self._resumed = False
        self.parent_report: dict | None = None
        self._sums = np.zeros(3)  # r_ext, r_int, steps since the last metrics row
        #: the smallest and largest r_int since the last row: a method whose reward never varies is inert
        self._int_range = [np.inf, -np.inf]
        every = run.train.metrics_every_steps or default_metrics_every(run.budget)
        self._metrics_schedule = MetricsSchedule(every, run.budget)
        #: [N, T] bool, where the current batch's returns end although the episode goes on
        self._return_ends: torch.Tensor | None = None
        self._init_streams(run)
        #: where the method's update runs beside PPO's (``train.update_thread``); None: before it, here.
        #: The thread takes this one's torch threads: a new thread's OpenMP otherwise sizes its team by
        #: the machine's cores, and the team's spinning workers would slow PPO and the envs
        self._update_thread = (ThreadPoolExecutor(1, thread_name_prefix="llmexplore-method-update",
                                                  initializer=torch.set_num_threads,
                                                  initargs=(torch.get_num_threads(),))
                               if run.train.update_thread and method_cls.update_beside_policy else None)
        init_model_data = super().init()
        self._metrics_schedule.restart_from(self.env_steps)  # a resumed run continues the same rows
        return init_model_data

    def _init_streams(self, run) -> None:
        """Two reward streams (``train.reward_streams=2``): their settings, RND's normalisation of the bonus,
        and the current batch's normalised bonus [N, T] between ``train`` and ``prepare_batch``."""
        train = run.train
        self.streams = (RewardStreams(run.ext_coef, run.int_coef, train.intrinsic_gamma, train.intrinsic_episodic,
                                      self.cfg.gae_lambda) if train.reward_streams == 2 else None)
        self.int_normalizer = (IntrinsicReturnNormalizer(train.intrinsic_gamma, train.intrinsic_episodic)
                               if self.streams else None)
        self._intrinsic_rewards: torch.Tensor | None = None

    # -- checkpoints ---------------------------------------------------------------------------
    @staticmethod
    def load_checkpoint(checkpoints, device):
        """The newest of the listed checkpoints, read with our loader (it holds numpy values)."""
        if not checkpoints:
            return None
        return load_checkpoint_file(checkpoints[-1], device)

    def add_to_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Our entry in every checkpoint: the task, the method and everything the method has learned."""
        checkpoint[CHECKPOINT_KEY] = {
            "task": self.settings.run.task,
            "method": self.settings.run.method,
            "method_state": self.method.state_dict(),
            RUN_IDENTITY_KEY: self.settings.run.identity(),  # whose checkpoint it is (checkpoints.py)
        }
        if self.int_normalizer is not None:
            checkpoint[CHECKPOINT_KEY][STREAMS_KEY] = self.int_normalizer.state_dict()

    def after_state_loaded(self, checkpoint_dict: dict[str, Any]) -> None:
        """A resumed run's method continues from the state its checkpoint saved."""
        ours = checkpoint_dict.get(CHECKPOINT_KEY)
        if ours is not None:
            self.method.load_state_dict(ours["method_state"])
            summary = self.method.state_summary()
            if summary:
                log.info("llmexplore: method state loaded %s", json.dumps(summary, sort_keys=True))
            if self.int_normalizer is not None and STREAMS_KEY in ours:
                self.int_normalizer.load_state_dict(ours[STREAMS_KEY])
            # not the open episodes' partial intrinsic returns: a resumed run builds its envs anew and each
            # starts a new episode, which must not inherit what a dead one had earned
        self._resumed = True

    def load_from_checkpoint(self, policy_id, load_progress: bool = True) -> None:
        # runs inside Learner.init(), before the weights are shared with the inference workers
        """Resume from the run's own checkpoint; a fresh fine-tuning run starts from its parent's policy."""
        super().load_from_checkpoint(policy_id, load_progress)
        if not self._resumed and self.settings.run.init_checkpoint:
            self._start_from_parent(self.settings.run.init_checkpoint)

    def _start_from_parent(self, path: str) -> None:
        """Fine-tuning: the parent's policy weights, a fresh optimizer, chosen parts re-initialised."""
        parent = load_checkpoint_file(path, self.device)["model"]
        own = self.actor_critic.state_dict()
        loaded = {k: v for k, v in parent.items() if k in own and own[k].shape == v.shape}
        skipped = sorted(k for k in own if k not in loaded)
        self.actor_critic.load_state_dict(loaded, strict=False)
        reset = self.settings.run.reset_parts
        reset_policy_parts(self.actor_critic, reset)
        self.parent_report = {"checkpoint": str(path), "loaded": sorted(loaded), "not_loaded": skipped,
                              "reset": list(reset)}
        log.info("Started from %s: %d tensors loaded, %d not (shape or name differs), reset %s",
                 path, len(loaded), len(skipped), list(reset))

    # -- training --------------------------------------------------------------------------------
    def train(self, batch: TensorDict) -> Optional[dict]:
        """The update step: the method's reward, the reward PPO trains on, the method's own training, PPO.

        ``batch`` holds N trajectories of T steps (T: ``-t rollout``; N * T: ``-t batch_size``, times
        sample-factory's ``num_batches_per_epoch`` where ``sf_args`` set it):
        ``obs[key]`` [N, T+1, ...] (the last one for bootstrapping), ``actions`` [N, T],
        ``dones`` [N, T] bool (the episode ended with this step), ``rewards`` [N, T] float32: r_env as
        the sampler leaves it, ``clip(reward_scale * r_env, +-reward_clip)``.

        1. ``r_int = method.reward(batch)``: [N, T] float32, no gradient.
        2. ``batch["rewards"] = c_ext * r_env + c_int * r_int``, in place: this is what PPO trains on. With
           two reward streams, r_env stays, and r_int over the running std of its return is kept for the
           intrinsic head (``prepare_batch``; the coefficients then weigh the two advantages).
        3. ``method.return_ends(batch)``: [N, T] bool or None, where returns end inside an episode;
           kept for the advantage estimate of this batch (``prepare_batch``).
        4. ``method.update(batch)``: the method trains its own networks on the batch (RND's predictor,
           ICM's models; nothing for a fixed reward) and returns figures to log.
        5. sample-factory's PPO update of the policy and value networks on the combined reward.

        Steps 4 and 5 share no state, so where the method allows it (``update_beside_policy``) and the run
        does (``train.update_thread``), 4 runs in a second thread during 5 and is waited for before the
        next batch: the results are those of the order above.
        """
        with torch.no_grad(), self.timed("intrinsic_reward"):
            rewards_batch = RewardBatch(obs=batch["obs"], actions=batch["actions"], dones=batch["dones"].float())
            r_int = self.method.reward(rewards_batch).to(batch["rewards"].device, torch.float32)
            finished = self._count_rewards(batch, r_int)
            self._mix_rewards(batch, r_int)
            ends = self.method.return_ends(rewards_batch)
            self._return_ends = None if ends is None else ends.to(batch["dones"].device).bool()
        if self._update_thread is None:
            with self.timed("intrinsic_update"):
                update_metrics = self.method.update(rewards_batch)
            stats = super().train(batch)
        else:
            update_metrics, stats = self._update_beside_ppo(batch, rewards_batch)
        if stats is None:  # a batch of invalid samples only: not trained, but its episodes still ended
            stats = {POLICY_ID_KEY: self.policy_id}
        stats[REPORT_KEY] = self._report(finished, update_metrics)  # every batch: the episode ledger needs each
        return stats

    def _mix_rewards(self, batch: TensorDict, r_int: torch.Tensor) -> None:
        """The reward PPO trains on: one stream's sum in the batch, or two streams' bonus kept aside."""
        if self.int_normalizer is None:
            batch["rewards"].mul_(self.ext_coef).add_(r_int, alpha=self.int_coef)  # in place: the batch owns it
            return
        uids = batch["obs"][ENV_UID_KEY][:, 0, 0].cpu().numpy()
        self._intrinsic_rewards = self.int_normalizer(uids, r_int, batch["dones"])

    def _update_beside_ppo(self, batch: TensorDict,
                           rewards_batch: RewardBatch) -> tuple[dict[str, float], Optional[dict]]:
        """The method's update in the update thread while PPO trains on the same batch here; returns the
        update's figures and PPO's stats once both are done (either's error is raised here)."""
        running: Future = self._update_thread.submit(self.method.update, rewards_batch)
        try:
            stats = super().train(batch)
        finally:
            with self.timed("intrinsic_update"):  # what is left of the method's update once PPO is done
                wait([running])
        return running.result(), stats

    def close_update_thread(self) -> None:
        """Let the update thread go (the worker stops; no update is running between batches)."""
        if getattr(self, "_update_thread", None) is not None:
            self._update_thread.shutdown(wait=True)
            self._update_thread = None

    def _count_rewards(self, batch: TensorDict, r_int: torch.Tensor) -> list[tuple[int, float]]:
        """Add the batch's r_env and r_int to the metrics row's sums; return (env uid, intrinsic return) of
        the episodes that ended in it, in the batch's order (an episode spans batches: each env's sum so far
        is kept by its uid)."""
        r_ext = batch["rewards"]
        self._sums += (float(r_ext.sum()), float(r_int.sum()), r_ext.numel())
        if r_int.numel():
            low, high = torch.aminmax(r_int)
            self._int_range = [min(self._int_range[0], float(low)), max(self._int_range[1], float(high))]
        uids = batch["obs"][ENV_UID_KEY][:, 0, 0].cpu().numpy()
        ended = self.episode_returns.add(uids, r_int.cpu().numpy(), batch["dones"].cpu().numpy())
        return [(int(uids[row]), total) for row, _, total in ended]

    def prepare_batch(self, batch: TensorDict, prepare):
        """sample-factory's batch preparation (returns and advantages of the batch's reward), with the
        method's return ends shown to GAE alone and, with two reward streams, the intrinsic stream's targets
        added (``RewardStreams.add_targets``; its values are computed before the preparation, which drops
        the batch's last step)."""
        ends, self._return_ends = self._return_ends, None
        bonus, self._intrinsic_rewards = self._intrinsic_rewards, None
        values = None
        if bonus is not None:
            with self.timed("intrinsic_values"):  # the one forward pass two streams add to a batch
                values = self.streams.intrinsic_values(self.actor_critic, batch)
        prepared = prepare(batch) if ends is None else self._prepare_with_return_ends(batch, prepare, ends)
        if bonus is not None:  # the preparation has set the batch's valids [N, T+1] in place
            self.streams.add_targets(prepared[0], bonus, batch["dones"], ends, values, batch["valids"])
        return prepared

    def _prepare_with_return_ends(self, batch: TensorDict, prepare, ends: torch.Tensor):
        """GAE reads ``dones`` as "the return stops here"; the recurrent replay reads the same tensor,
        copied to ``dones_cpu`` at the end of the preparation, as "the hidden state was reset here",
        which the actors did only at episode ends. So GAE gets the ends merged in, and both
        ``dones`` tensors of the prepared buffer get the true episode ends back.
        """
        if self.cfg.with_vtrace:  # V-trace computes returns from the same tensor as the replay
            raise RuntimeError("ending returns inside episodes needs GAE; run with with_vtrace off")
        episode_ends = batch["dones"]
        batch["dones"] = episode_ends | ends
        try:
            buff, experience_size, num_invalids = prepare(batch)
        finally:
            batch["dones"] = episode_ends
        flat = episode_ends.reshape(experience_size)
        buff["dones"] = flat
        buff["dones_cpu"] = flat.to("cpu", copy=True, dtype=torch.float)
        return buff, experience_size, num_invalids

    def calculate_losses(self, mb, num_invalids: int, calculate) -> tuple:
        """sample-factory's losses; with two reward streams the value loss also has the intrinsic head's,
        clipped and weighed as the extrinsic head's (RND's code sums the two)."""
        losses = calculate(mb, num_invalids)
        if self.streams is None:
            return losses
        *rest, value_loss, summaries = losses
        intrinsic = self.value_loss(self.actor_critic.last_intrinsic_values, mb["values_int"], mb["returns_int"],
                                    mb.valids, num_invalids)
        return (*rest, value_loss + intrinsic, summaries)

    def _report(self, finished: list[tuple[int, float]], update_metrics: dict[str, float]) -> dict[str, Any]:
        """What the main process gets after each batch: (env uid, intrinsic return) of the episodes that ended
        in it (``episode_ledger.py`` files their rows under this batch), and a metrics row when due.

        ``env_steps`` is the learner's count after this batch, the step the rows belong to, as its
        checkpoint would hold it.
        """
        report: dict[str, Any] = {"episodes": finished, "env_steps": self.env_steps}
        if self.parent_report is not None:
            report["parent"], self.parent_report = self.parent_report, None
        if self._metrics_schedule.due(self.env_steps):
            report["metrics"] = self._metrics_row(update_metrics)
        else:
            self._pending_update_metrics = update_metrics
        return report

    def final_report(self) -> dict[str, Any] | None:
        """The last row when training stops between two rows (interrupted, then checkpointed)."""
        if self._sums[2] == 0 or self._metrics_schedule.final_written:
            return None
        return {"env_steps": self.env_steps,
                "metrics": self._metrics_row(getattr(self, "_pending_update_metrics", {}))}

    def _metrics_row(self, update_metrics: dict[str, float]) -> dict[str, float]:
        """Mean rewards per step since the last row, the method's online-update figures and its own metrics."""
        steps = max(self._sums[2], 1.0)
        metrics = {"reward_ext_mean": self._sums[0] / steps, "reward_int_mean": self._sums[1] / steps}
        if self._int_range[0] <= self._int_range[1]:
            metrics.update(reward_int_min=self._int_range[0], reward_int_max=self._int_range[1])
        self._int_range = [np.inf, -np.inf]
        if self.int_normalizer is not None:
            metrics["intrinsic_return_std"] = self.int_normalizer.std
        metrics.update(update_metrics)
        metrics.update(self.method.metrics())
        self._sums[:] = 0.0
        self._pending_update_metrics = {}
        return {k: float(v) for k, v in metrics.items()}


class IntrinsicLearnerWorker(LearnerWorkerHooks):
    """sample-factory's learner worker, running our learner."""

    learner_class = IntrinsicLearner

    def on_stop(self, *args):
        # the row for the stretch since the last one, at the step of the checkpoint saved next
        """Send the last metrics row and close the method before sample-factory saves and stops."""
        final = self.learner.final_report() if hasattr(self.learner, "_metrics_schedule") else None
        if final is not None:
            self.send_report({REPORT_KEY: final, POLICY_ID_KEY: self.learner.policy_id})
        try:
            self.learner.method.close()
        except AttributeError:
            pass
        self.learner.close_update_thread()
        super().on_stop(*args)


class SerialTrainer(RunnerHooks, SerialRunner):
    """All components in this process (best on a few CPU cores)."""

    learner_worker_class = IntrinsicLearnerWorker


class ParallelTrainer(RunnerHooks, ParallelRunner):
    """Rollout workers and the learner in separate processes (many cores, or a GPU); a watchdog ends the
    run within seconds when one of them dies (``watchdog.py``), instead of waiting for it for good."""

    learner_worker_class = IntrinsicLearnerWorker

    def init(self):
        """sample-factory's start, then the watchdog over the child processes."""
        from llmexplore.agents.watchdog import ChildWatchdog

        status = super().init()
        self.watchdog = ChildWatchdog(self.event_loop, self._children, self._child_died)
        return status

    def _children(self) -> list[Any]:
        return child_processes(self)

    def _child_died(self, message: str) -> None:
        from sample_factory.algo.utils.misc import ExperimentStatus

        log.error(message)
        self.status = ExperimentStatus.FAILURE
        self.stopped = True
        self.event_loop.stop()

    def before_stop_training(self) -> None:
        """Stand the watchdog down: children that exit from now on are the planned stop, not a failure."""
        watchdog = getattr(self, "watchdog", None)
        if watchdog is not None:
            watchdog.stopping = True  # children exit on their own from here
