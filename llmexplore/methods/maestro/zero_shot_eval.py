"""Zero-shot evaluation: the trained skill policy, recomposed by an LM-written policy over skills.

For a task T the policy over skills comes from ``<code>/policies/tasks/T.py``, written by the
LM from T's goal text when missing (through ``codegen``, checked like every generated file).
The run's checkpoint plays N episodes of T's env (fresh evaluation seeds, as ``llmexplore
evaluate`` uses them) with the skills' initiation/termination code and that policy.

Navigation and composite tasks report the share of episodes whose stats say ``success``, with
a 95% Wilson interval. The interaction tasks report, as published, the mean number of events
per episode over the episodes in which a shop (or an altar, for buc-id) was seen
(``metric="count"``); ``metric="success"`` reports them as a success rate over all episodes
instead (our earlier measure).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from llmexplore.atomic import atomic_write_json
from llmexplore.errors import ConfigError, shown
from llmexplore.lm.config import LMConfig
from llmexplore.methods.maestro.codegen import generate_code, task_target
from llmexplore.methods.maestro.program import TASK_PREFIX
from llmexplore.methods.maestro.tasks import get_zero_shot_task


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of ``successes`` out of ``n``, (low, high) within [0, 1]; (0, 1) when n is 0."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, float(centre - half)), min(1.0, float(centre + half)))


def ensure_task_policy(code_dir: Path, task: Any, lm: LMConfig) -> dict[str, Any]:
    """Generate (or keep) the task's policy over skills; returns its manifest entry."""
    from llmexplore.lm.backends import make_lm

    target = task_target(task.name, task.prompt)
    with make_lm(lm, cache_dir=code_dir) as model:
        manifest = generate_code(code_dir, model, [target], prompts=lm.prompts)
    return manifest["files"][target.path]


METRICS = ("count", "success")


def interaction_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean event count per episode over the episodes that saw the venue (MaestroMotif's measure).

    ``mean_count`` is None when no episode saw a shop or altar: there is nothing to average.
    """
    seen = [r["count"] for r in rows if r["venue_seen"]]
    mean = float(np.mean(seen)) if seen else None
    sem = float(np.std(seen, ddof=1) / np.sqrt(len(seen))) if len(seen) > 1 else None
    return {"mean_count": mean, "count_sem": sem, "venue_episodes": len(seen),
            "total_count": int(sum(r["count"] for r in rows))}


def evaluate_task(run_dir: str | Path, task_name: str, episodes: int, *, checkpoint: str = "latest",
                  greedy: bool = False, seed: int = 0, lm: LMConfig | None = None, code: str | None = None,
                  out: str | Path | None = None, metric: str = "count",
                  on_episode: Callable[[int, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Play ``episodes`` episodes of a zero-shot task with a maestro run's checkpoint and the
    task's policy over skills (generated when missing); returns the result record (also written
    to ``out``): success rate with Wilson interval, per-episode rows, counts where measured."""
    from llmexplore.agents.for_methods import build_env, load_policy

    if episodes < 1:
        raise ConfigError(f"--episodes must be at least 1 (got {episodes})")
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {shown(metric)}", hint=f"metrics: {', '.join(METRICS)}")
    task = get_zero_shot_task(task_name)
    policy = load_policy(run_dir, checkpoint)
    settings = policy.settings
    if settings.run.method != "maestro":
        raise ConfigError(f"{run_dir} was trained with method '{settings.run.method}', not 'maestro'",
                          hint="evaluate a run made with `llmexplore run --method maestro`")
    options = dict(settings.run.method_options)
    code_dir = Path(code or options["code"]).expanduser()
    if not code_dir.is_dir():
        raise ConfigError(f"code folder {code_dir} does not exist", hint="pass --code DIR")
    entry = ensure_task_policy(code_dir, task, lm or LMConfig())
    eval_settings = settings.with_run(task=task.task, method_options={
        **options, "code": str(code_dir), "policy": TASK_PREFIX + task.name})
    env = build_env(eval_settings)
    try:
        _check_fit(policy, env, task)
        started = time.perf_counter()
        rows = [_play_one(policy, env, task, seed + i, greedy, i, on_episode) for i in range(episodes)]
    finally:
        env.close()
    successes = sum(r["success"] for r in rows)
    low, high = wilson_interval(successes, len(rows))
    result = {
        "task": task.name, "env_task": task.task, "run": str(run_dir),
        "checkpoint": str(policy.checkpoint.path), "checkpoint_env_steps": policy.checkpoint.env_steps,
        "episodes": len(rows), "successes": successes, "success_rate": successes / len(rows),
        "success_ci95": [low, high], "greedy": greedy, "first_seed": seed,
        "policy_file": str(code_dir / task_target(task.name, "").path), "policy_model": entry.get("model"),
        "mean_length": float(np.mean([r["length"] for r in rows])),
        "seconds": round(time.perf_counter() - started, 2),
        "episodes_detail": rows,
    }
    counted = task.category == "interaction" and all("count" in r for r in rows)
    if counted:
        result.update(interaction_summary(rows))
    result["metric"] = "count" if counted and metric == "count" else "success"
    if out is not None:
        atomic_write_json(Path(out), result)
    return result


def _play_one(policy: Any, env: Any, task: Any, seed: int, greedy: bool, index: int,
              on_episode: Callable[[int, dict[str, Any]], None] | None) -> dict[str, Any]:
    """One episode of the task on ``seed``: its row (success, length, the task's own stats)."""
    from llmexplore.agents.for_methods import play_episode

    trace = play_episode(policy, env, seed, greedy=greedy)
    if "success" not in trace.stats:
        raise ConfigError(f"episodes of {task.task} report no 'success' stat",
                          hint="a zero-shot task's env must put success in its episode stats")
    row = {"seed": seed, "success": int(trace.stats["success"]), "length": trace.length,
           **{k: v for k, v in trace.stats.items()
              if k.startswith("maestro_") or k in ("depth", "return", "count", "venue_seen")}}
    if on_episode:
        on_episode(index, row)
    return row


def _check_fit(policy: Any, env: Any, task: Any) -> None:
    """The network must read the task env's observations and act in it."""
    n_run, n_env = getattr(policy.action_space, "n", None), getattr(env.action_space, "n", None)
    if n_run != n_env:
        raise ConfigError(f"the skill policy acts with {policy.action_space} but {task.task} expects "
                          f"{env.action_space}",
                          hint="train the skill policy on a task with the same action set")
    space = env.observation_space.spaces
    for key in policy.obs_keys:
        if key not in space or space[key].shape != policy.observation_space.spaces[key].shape:
            raise ConfigError(f"{task.task} does not offer the observation '{key}' the skill policy reads")
