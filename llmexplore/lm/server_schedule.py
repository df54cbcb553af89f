"""Fair batching for the LM server: requests are cut into slices and clients are served in turn.

A request's prompts are answered in slices of at most the batch size, and each backend batch
takes slices from the waiting clients round-robin (a client here is one connection), so one
request with a million prompts delays another client's request by about one backend batch, not
by the whole million. Slices in one batch share their sampling parameters; the rest wait for the
next batch, where the clients not served this time come first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Hashable

from llmexplore.lm.base import Completion
from llmexplore.lm.config import SamplingParams


@dataclass(eq=False)
class Job:
    """One request's prompts; its future gets every answer, in order, once the last slice is done."""

    prompts: list[str]
    params: SamplingParams
    future: asyncio.Future
    answers: list[Completion | None] = field(default_factory=list)
    next: int = 0
    answered: int = 0

    def __post_init__(self) -> None:
        self.answers = [None] * len(self.prompts)

    def done(self) -> bool:
        """Whether the request ended (answered, failed, or its client left); its slices left are skipped."""
        return self.future.done()

    def fill(self, start: int, answers: list[Completion]) -> None:
        """Store a slice's answers at ``start``; with the last slice the future gets them all, in order."""
        self.answers[start:start + len(answers)] = answers
        self.answered += len(answers)
        if self.answered == len(self.prompts) and not self.future.done():
            self.future.set_result(list(self.answers))

    def fail(self, exc: BaseException) -> None:
        """End the request with ``exc``, unless it has already ended."""
        if not self.future.done():
            self.future.set_exception(exc)


@dataclass(frozen=True)
class Slice:
    job: Job
    start: int
    end: int

    def prompts(self) -> list[str]:
        """The slice's prompts, in the request's order."""
        return self.job.prompts[self.start:self.end]


class FairQueue:
    """Waiting jobs per client; ``next_batch`` takes slices from the clients in turn."""

    def __init__(self) -> None:
        self._clients: OrderedDict[Hashable, deque[Job]] = OrderedDict()
        self._ready = asyncio.Event()

    def put(self, client: Hashable, job: Job) -> None:
        """Queue a request behind the client's earlier ones and wake the batcher."""
        self._clients.setdefault(client, deque()).append(job)
        self._ready.set()

    def fail_all(self, exc: BaseException) -> None:
        """End every waiting job with ``exc`` (the server is stopping)."""
        for queue in self._clients.values():
            for job in queue:
                job.fail(exc)
        self._clients.clear()

    def _drop_finished(self) -> None:
        for client in list(self._clients):
            queue = self._clients[client]
            while queue and (queue[0].done() or queue[0].next >= len(queue[0].prompts)):
                queue.popleft()
            if not queue:
                del self._clients[client]

    async def next_batch(self, max_batch: int) -> tuple[SamplingParams, list[Slice]]:
        """The next backend batch: at most ``max_batch`` prompts with one set of parameters."""
        while True:
            self._drop_finished()
            if self._clients:
                break
            self._ready.clear()
            await self._ready.wait()
        params = next(iter(self._clients.values()))[0].params
        slices: list[Slice] = []
        count = 0
        served: list[Hashable] = []
        while count < max_batch:
            eligible = [c for c, q in self._clients.items()
                        if q and q[0].params == params and not q[0].done()]
            if not eligible:
                break
            quantum = max(1, (max_batch - count) // len(eligible))
            for client in eligible:
                job = self._clients[client][0]
                take = min(quantum, len(job.prompts) - job.next, max_batch - count)
                if take <= 0:
                    break
                slices.append(Slice(job, job.next, job.next + take))
                job.next += take
                count += take
                if client not in served:
                    served.append(client)
                if job.next >= len(job.prompts):
                    self._clients[client].popleft()
            self._drop_finished()
        for client in served:  # those not served this time come first next time
            if client in self._clients:
                self._clients.move_to_end(client)
        return params, slices
