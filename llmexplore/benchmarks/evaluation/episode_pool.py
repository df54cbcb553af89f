"""Play episodes (one per seed) in worker processes that each load the policy once.

Episodes are independent and fixed by their seed (see ``agents.rollout``), so they can go
to any worker in any order and the results do not depend on how many workers there are.
Workers are spawned, not forked: the parent may already run torch's thread pools, which do
not survive a fork.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Protocol, Sequence

from llmexplore.agents.sf_env import QUIET_ENV


class EpisodeJob(Protocol):
    """Picklable work: ``setup`` runs once per worker (load the policy, build the env)."""

    def setup(self) -> None:
        """Runs once per worker before its first episode: the costly part (load the policy, build the env)."""
        ...

    def run(self, seed: int) -> dict[str, Any]:
        """Play the episode of seed ``seed``; the row must be picklable and depend on the seed alone."""
        ...


_JOB: EpisodeJob | None = None


def _init_worker(job: EpisodeJob) -> None:
    global _JOB
    from llmexplore.agents.sf_env import quiet_sample_factory_console

    quiet_sample_factory_console()
    job.setup()
    _JOB = job


def _run_in_worker(seed: int) -> dict[str, Any]:
    assert _JOB is not None, "worker was not initialised"
    return _JOB.run(seed)


#: episodes each worker should have before another one is worth its start-up (importing
#: torch, NLE or Crafter and loading the policy took 5-6 s on the 2-core reference machine,
#: as long as a 1,500-step NetHack episode)
EPISODES_PER_WORKER = 8


def default_workers(episodes: int) -> int:
    """One worker per CPU core, each with at least ``EPISODES_PER_WORKER`` episodes."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, episodes // EPISODES_PER_WORKER))


def run_episodes(job: EpisodeJob, seeds: Sequence[int], workers: int,
                 on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Results in the order of ``seeds``; ``on_result`` sees each as it finishes."""
    seeds = list(seeds)
    if not seeds:
        return []
    done: dict[int, dict[str, Any]] = {}

    def finished(seed: int, result: dict[str, Any]) -> None:
        done[seed] = result
        if on_result is not None:
            on_result(result)

    if workers <= 1 or len(seeds) == 1:
        job.setup()
        for seed in seeds:
            finished(seed, job.run(seed))
    else:
        os.environ.setdefault(QUIET_ENV, "1")
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(seeds)), mp_context=context,
                                 initializer=_init_worker, initargs=(job,)) as pool:
            pending: dict[Future, int] = {pool.submit(_run_in_worker, s): s for s in seeds}
            try:
                while pending:
                    ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in ready:
                        finished(pending.pop(future), future.result())
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
    return [done[s] for s in seeds]
