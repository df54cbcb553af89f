"""Annotating a Motif pair dataset with LM preferences: chunked, resumable, nothing asked twice.

Labels go to ``preference/<annotator>_msg_<goal>_<version>.npy`` (``PairDataset.open_labels``):
0 first preferred, 1 second, 2 tie, 3 unknown. Only entries still 3 are asked, so a rerun
resumes; labels are flushed after every batch, so a kill loses at most the batch in
flight, and its answers are already in the completion cache. Identical captions are a
tie without a call. Chunk k of n covers a contiguous slice, so several jobs (e.g. SLURM
array tasks) can share one label file.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from llmexplore.errors import ConfigError
from llmexplore.lm.base import LanguageModel
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.envs import get_task
from llmexplore.lm.questions import UnknownAnswerWatch, ask
from llmexplore.lm.templates import PromptLibrary
from llmexplore.methods.message_text import question_class
from llmexplore.methods.motif.questions import LABEL_UNKNOWN, MotifPreference
from llmexplore.methods.motif.dataset import PairDataset, open_pair_dataset, preference_name
from llmexplore.paths import check_name


@dataclass
class AnnotationReport:
    labels_file: str
    chunk: tuple[int, int]
    chunk_pairs: int
    already_labelled: int
    asked_pairs: int = 0
    ties_without_call: int = 0
    retried: int = 0
    unknown: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    pairs_per_second: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready plain data (``chunk`` as a list)."""
        d = asdict(self)
        d["chunk"] = list(self.chunk)
        return d


def annotator_name(model_id: str) -> str:
    """A file-name-safe annotator name from a model id (``_`` would clash with ``_msg_``)."""
    name = re.sub(r"[^a-z0-9.]+", "-", Path(model_id).name.lower()).strip("-.")
    return name or "lm"


def chunk_slice(n: int, chunk: tuple[int, int]) -> tuple[int, int]:
    """[start, stop) of chunk ``(k, parts)`` over ``n`` pairs: contiguous, near-equal
    slices that cover every pair; ConfigError for a chunk that does not exist."""
    k, parts = chunk
    if parts < 1 or not 0 <= k < parts:
        raise ConfigError(f"chunk {k} of {parts} does not exist", hint="chunks are numbered 0 .. n-1")
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    return int(bounds[k]), int(bounds[k + 1])


ProgressFn = Callable[[int, int, float], None]


def annotate_pairs(dataset: str | Path | PairDataset, lm: LanguageModel, *, goal: str = "defaultgoal",
                   version: str = "default", annotator: str | None = None, chunk: tuple[int, int] = (0, 1),
                   batch_size: int = 128, params: SamplingParams | None = None, prompts: str | None = None,
                   progress: ProgressFn | bool = False) -> AnnotationReport:
    """Label one chunk of a pair dataset; rerunning resumes. ``lm`` should be a ``CachedLM`` (``make_lm``).

    ``progress``: True for a display on stderr, or a callback ``(done, total, seconds)``.
    """
    if batch_size < 1:
        raise ConfigError("batch_size must be at least 1")
    ds = dataset if isinstance(dataset, PairDataset) else open_pair_dataset(dataset)
    question = preference_question(ds, goal, version, prompts)
    params = params or SamplingParams()
    start, stop = chunk_slice(len(ds), chunk)
    if annotator is not None:
        check_name(annotator, "annotator")  # it names the label file in preference/
    name = preference_name(annotator or annotator_name(lm.model_id), goal, version)
    labels = ds.open_labels(name)
    todo = start + np.flatnonzero(np.asarray(labels[start:stop]) == LABEL_UNKNOWN)
    report = AnnotationReport(str(ds.preference_path(name)), tuple(chunk), stop - start,
                              (stop - start) - len(todo))
    before = _cache_counters(lm)
    show = _make_progress(progress, len(todo))
    watch = UnknownAnswerWatch(question)
    t0 = time.perf_counter()
    messages = ds.messages
    try:
        for b in range(0, len(todo), batch_size):
            idx = todo[b:b + batch_size]
            pairs = _decode_pairs(np.asarray(messages[idx]))  # one read per batch, not two per pair
            result = ask(lm, question, pairs, params)
            watch.add(lm, len(idx), result)
            labels[idx] = np.asarray(result.labels, dtype=np.uint8)
            labels.flush()
            report.asked_pairs += len(idx) - result.shortcuts
            report.ties_without_call += result.shortcuts
            report.retried += result.retried
            report.unknown += result.unknown
            show(b + len(idx), len(todo), time.perf_counter() - t0)
    finally:
        labels.flush()
        show(-1, len(todo), time.perf_counter() - t0)
    report.seconds = time.perf_counter() - t0
    report.pairs_per_second = len(todo) / report.seconds if report.seconds > 0 else 0.0
    values = np.asarray(labels[start:stop])
    report.counts = {lab: int((values == v).sum()) for v, lab in enumerate(("first", "second", "tie", "unknown"))}
    after = _cache_counters(lm)
    report.cache = {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], int) and k != "entries"}
    if "entries" in after:
        report.cache["entries"] = after["entries"]
    del labels
    return report


def annotate_from_config(dataset: str | Path, config: LMConfig | dict[str, Any], **kwargs: Any) -> AnnotationReport:
    """``annotate_pairs`` with the model built from an ``LMConfig`` (cache defaults to the dataset folder)."""
    from llmexplore.lm.backends import make_lm

    config = config if isinstance(config, LMConfig) else LMConfig(**config)
    ds = open_pair_dataset(dataset)  # check the data before starting a model
    preference_question(ds, kwargs.get("goal", "defaultgoal"), kwargs.get("version", "default"),
                        kwargs.get("prompts", config.prompts))
    kwargs.setdefault("prompts", config.prompts)
    kwargs.setdefault("params", config.sampling())
    with make_lm(config, cache_dir=ds.root) as lm:
        return annotate_pairs(ds, lm, **kwargs)


def preference_question(ds: PairDataset, goal: str, version: str,
                        prompts: PromptLibrary | str | None) -> MotifPreference:
    """Motif's question in the words of the family the pairs were collected in (``collection.json``'s task;
    NetHack's for the published dataset, which has none)."""
    task = ds.collected_task()
    asked = MotifPreference if task is None else question_class(MotifPreference, get_task(task), "motif")
    return asked(goal=goal, version=version, prompts=prompts)


def _decode_pairs(block: np.ndarray) -> list[tuple[str, str]]:
    """(B, 2, L) caption bytes -> B caption pairs; each caption ends at its first NUL byte.
    Viewing rows as fixed-width byte strings turns 2B array reads into one ``tolist``."""
    rows = np.ascontiguousarray(block).view(f"S{block.shape[-1]}").reshape(len(block), 2).tolist()
    return [(_text(first), _text(second)) for first, second in rows]


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("latin-1").strip()


def _cache_counters(lm: LanguageModel) -> dict[str, Any]:
    stats = getattr(lm, "stats", None)
    return dict(stats()) if callable(stats) else {}


def _make_progress(progress: ProgressFn | bool, total: int) -> ProgressFn:
    if callable(progress):
        return lambda done, tot, secs: progress(done, tot, secs) if done >= 0 else None
    if not progress or total == 0:
        return lambda done, tot, secs: None
    if sys.stderr.isatty():
        return _rich_progress(total)
    last = [0.0]

    def line(done: int, tot: int, secs: float) -> None:
        if done < 0 or (secs - last[0] < 5.0 and done < tot):
            return
        last[0] = secs
        rate = done / secs if secs > 0 else 0.0
        eta = (tot - done) / rate if rate > 0 else float("nan")
        print(f"annotate: {done}/{tot} pairs ({100 * done / tot:.0f}%), {rate:.0f} pairs/s, ETA {eta:.0f}s",
              file=sys.stderr, flush=True)

    return line


def _rich_progress(total: int) -> ProgressFn:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeRemainingColumn)

    bar = Progress(TextColumn("annotate"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                   TextColumn("{task.fields[rate]} pairs/s"), TextColumn("ETA"), TimeRemainingColumn(),
                   transient=False)
    task = bar.add_task("annotate", total=total, rate="-")
    bar.start()

    def update(done: int, tot: int, secs: float) -> None:
        if done < 0:
            bar.stop()
            return
        bar.update(task, completed=done, rate=f"{done / secs:.0f}" if secs > 0 else "-")

    return update
