"""`llmexplore bench`: how fast this machine runs a task's env and its training, for a fixed time each.

Why: a table's wall times, and the budget a machine can afford, depend on the hardware; one command
that measures the same things everywhere (the env alone, in one and in N processes; training with
chosen methods and presets) gives comparable figures with the machine they came from (``hardware``,
as run records state it) and, where `nvidia-smi` exists, the GPU's utilisation while training.
Rates are steady-state: training is timed after its first quarter (start-up, first batches). Other work
on the machine lowers every rate, so the report holds the load average at the start and after each
measurement, and a line on stderr announces each measurement as it starts.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

#: bench.json's schema name and version
SCHEMA, SCHEMA_VERSION = "llmexplore.bench", 1


@dataclass
class Measurement:
    what: str  # "env" | "train"
    task: str
    detail: str  # "1 process", "2 processes", "none, preset default", ...
    steps_per_second: float
    seconds: float
    gpu_utilisation: float | None = None  # mean %, sampled while training
    note: str = ""
    #: the machine's 1-minute load average as the measurement ended: a rate taken beside other work reads lower
    load_average: float | None = None


@dataclass
class BenchReport:
    created_at: str
    environment: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``bench.json``: schema name and version, when it was made, the machine, every measurement."""
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "created_at": self.created_at,
                "environment": self.environment, "measurements": [asdict(m) for m in self.measurements]}

    def markdown(self) -> str:
        """``bench.md``: the machine in one line, then a table with one row per measurement."""
        hw = self.environment.get("hardware", {})
        gpus = ", ".join(hw.get("gpus") or []) or "no GPU"
        load = self.environment.get("load_average")
        loads = f" Load average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in load)}." if load else ""
        lines = [f"# llmexplore bench, {self.created_at}", "",
                 f"Machine: {hw.get('cpus_usable')} usable CPUs ({hw.get('cpu_model')}), {gpus}; "
                 f"commit {str(self.environment.get('git_commit'))[:7]}, torch {self.environment.get('torch')}."
                 + loads, "",
                 "| what | task | setting | env steps/s | seconds | GPU busy | load |",
                 "| --- | --- | --- | --- | --- | --- | --- |"]
        for m in self.measurements:
            busy = "—" if m.gpu_utilisation is None else f"{m.gpu_utilisation:.0f}%"
            load_now = "—" if m.load_average is None else f"{m.load_average:.2f}"
            lines.append(f"| {m.what} | {m.task} | {m.detail}{' (' + m.note + ')' if m.note else ''} | "
                         f"{m.steps_per_second:,.0f} | {m.seconds:.1f} | {busy} | {load_now} |")
        ratios = sampling_ratios(self.measurements)
        if ratios:
            lines += ["", "Batched / per-env sampling, the same training otherwise: " + "; ".join(ratios) + "."]
        return "\n".join(lines) + "\n"


def sampling_ratios(measurements: list[Measurement]) -> list[str]:
    """``task, setting: 1.42x`` for each training measured on both sampling paths (issue 54)."""
    rates: dict[tuple[str, str], dict[str, float]] = {}
    for m in measurements:
        for path in ("per-env", "batched"):
            mark = f", sampling={path}"
            if m.what == "train" and mark in m.detail and m.steps_per_second > 0:
                rates.setdefault((m.task, m.detail.replace(mark, "")), {})[path] = m.steps_per_second
    return [f"{task}, {detail}: {pair['batched'] / pair['per-env']:.2f}x" for (task, detail), pair in rates.items()
            if len(pair) == 2]


# -- the env alone ------------------------------------------------------------------------------------

def _env_steps_for(task: str, seconds: float, seed: int) -> tuple[int, float]:
    """Random actions on the task's adapter env for about ``seconds``: (steps, elapsed)."""
    from llmexplore.envs import make_adapter

    env = make_adapter(task).make_env()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for action in rng.integers(0, env.action_space.n, 64):  # warm-up: first-use compilation, caches
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            env.reset()
    steps, start = 0, time.perf_counter()
    while True:
        for action in rng.integers(0, env.action_space.n, 256):
            _, _, terminated, truncated, _ = env.step(int(action))
            steps += 1
            if terminated or truncated:
                env.reset()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            env.close()
            return steps, elapsed


def _env_worker(args: tuple[str, float, int]) -> tuple[int, float]:
    return _env_steps_for(*args)


def env_rate(task: str, seconds: float, processes: int) -> Measurement:
    """Env steps/s of the adapter env in ``processes`` processes at once (their rates summed)."""
    if processes == 1:
        steps, elapsed = _env_steps_for(task, seconds, 0)
        rate = steps / elapsed
    else:
        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            results = pool.map(_env_worker, [(task, seconds, seed) for seed in range(processes)])
        rate, elapsed = sum(s / e for s, e in results), max(e for _, e in results)
    label = "1 process" if processes == 1 else f"{processes} processes"
    return Measurement("env", task, label, rate, elapsed)


# -- training -----------------------------------------------------------------------------------------

class _TimedSink:
    """Training progress points; asks the run to stop ``seconds`` after its first progress report (start-up,
    which differs a lot between machines, is not part of the measured time)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.points: list[tuple[float, int]] = []

    def on_progress(self, env_steps: int, steps_per_second: float) -> None:
        from llmexplore.agents import stop_requests

        now = time.perf_counter()
        self.points.append((now, env_steps))
        if now >= self.points[0][0] + self.seconds:
            stop_requests.request_stop_quietly("bench time")

    def __getattr__(self, name: str) -> Any:  # on_episode, on_metrics, ...: nothing to keep
        return lambda *args, **kwargs: None


class _GpuSampler:
    """Mean GPU utilisation from `nvidia-smi`, sampled once a second on a thread (None without it)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True) if shutil.which("nvidia-smi") else None

    def __enter__(self) -> _GpuSampler:
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5)
                self.samples.append(float(out.stdout.split()[0]))
            except (OSError, subprocess.SubprocessError, ValueError, IndexError):
                return

    @property
    def mean(self) -> float | None:
        return statistics.mean(self.samples) if self.samples else None


def _flat_settings(settings: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"sf_args": {"batched_sampling": True}}`` -> ``[("sf_args.batched_sampling", True)]``: the -t form, for labels."""
    out: list[tuple[str, Any]] = []
    for key, value in settings.items():
        if isinstance(value, dict):
            out += _flat_settings(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def train_rate(task: str, method: str, preset: str | None, seconds: float, train: dict[str, Any]) -> Measurement:
    """Steady env steps/s of real training for about ``seconds`` (the first quarter of the time left out)."""
    from llmexplore.agents import stop_requests
    from llmexplore.agents.training import train as run_training
    from llmexplore.benchmarks.run.spec import RunSpec, resolve

    options = dict(train)
    if preset and preset != "default":
        options["preset"] = preset
    spec = RunSpec(method=method, task=task, seed=0, steps=10**12, train=options)
    resolved = resolve(spec, check_parent=False)
    sink = _TimedSink(seconds)
    stop_requests.reset()
    try:
        with tempfile.TemporaryDirectory() as tmp, _GpuSampler() as gpu:
            run_training(resolved, tmp, sink)  # type: ignore[arg-type]
    finally:
        stop_requests.reset()
    detail = f"{method}, preset {preset or 'default'}" + "".join(f", {k}={v}" for k, v in _flat_settings(train))
    points = sink.points
    if len(points) < 2:
        return Measurement("train", task, detail, 0.0, 0.0, gpu.mean, note="too short for two progress reports")
    start = points[0][0] + (points[-1][0] - points[0][0]) / 4
    steady = [p for p in points if p[0] >= start] or points
    if len(steady) < 2:
        steady = points
    (t0, s0), (t1, s1) = steady[0], steady[-1]
    return Measurement("train", task, detail, (s1 - s0) / (t1 - t0), t1 - points[0][0], gpu.mean)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages (None where the system has none): other work on the machine
    lowers every rate, so a report says how busy the machine was."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def run_bench(tasks: list[str], methods: list[str], presets: list[str], seconds: float, processes: list[int],
              train: dict[str, Any], skip_training: bool = False,
              report_line: Callable[[str], None] | None = None,
              samplings: tuple[str | None, ...] = (None,)) -> BenchReport:
    """For each task: its env alone in each process count, then (unless ``skip_training``) training with each
    preset and method, on each sampling path in turn (``samplings``; None: the family's), each measured for
    about ``seconds``; ``report_line`` gets a line before each (with how many are left), as a bench of several
    minutes would otherwise be silent."""
    from datetime import datetime, timezone

    from llmexplore.benchmarks.run.provenance import environment_info

    report_line = report_line or _to_stderr
    plan: list[tuple[str, str, Any]] = []
    for task in tasks:
        plan += [("env", task, count) for count in processes]
        if not skip_training:
            plan += [("train", task, (preset, method, sampling))
                     for preset in presets for method in methods for sampling in samplings]
    trainings = sum(kind == "train" for kind, _, _ in plan)
    total = len(plan) * seconds
    report_line(f"bench: {len(plan)} measurement(s) of about {seconds:g} s each, about "
                + (f"{total / 60:,.1f} minutes" if total >= 60 else f"{total:g} s")
                + (" plus each training run's start-up (often 10-40 s)" if trainings else ""))
    report = BenchReport(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                         {**environment_info(), "load_average": load_average()})
    for number, (kind, task, setting) in enumerate(plan, 1):
        if kind == "env":
            report_line(f"bench [{number}/{len(plan)}]: {task}, the env alone in {setting} process(es)")
            measured = env_rate(task, seconds, setting)
        else:
            preset, method, sampling = setting
            path = {"sampling": sampling} if sampling else {}
            report_line(f"bench [{number}/{len(plan)}]: {task}, training {method} with preset {preset}"
                        + (f", {sampling} sampling" if sampling else ""))
            measured = train_rate(task, method, preset, seconds, {**train, **path})
        loads = load_average()
        measured.load_average = loads[0] if loads else None
        report.measurements.append(measured)
    return report


def write_report(report: BenchReport, out: Path) -> dict[str, Path]:
    """Write ``bench.json`` and ``bench.md`` into ``out`` (created if missing); their paths by format."""
    import json

    from llmexplore.atomic import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "bench.json", "markdown": out / "bench.md"}
    atomic_write_text(files["json"], json.dumps(report.to_json(), indent=2) + "\n")
    atomic_write_text(files["markdown"], report.markdown())
    return files
