"""Replay a run's policy and write, per episode, an animation, a reward plot, a step log,
a caption summary and a page; then an index page linking all episodes.

Episodes are seeded exactly as ``llmexplore evaluate`` seeds them, so seed s here is the
episode s of an evaluation with the same checkpoint and action selection.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from llmexplore.agents.policy import Policy, load_policy
from llmexplore.agents.rollout import EpisodeTrace, play_episode, require_replayable, score_episode
from llmexplore.atomic import atomic_write_json, atomic_write_text
from llmexplore.benchmarks.evaluation.episode_pool import default_workers, run_episodes
from llmexplore.benchmarks.evaluation.episode_progress import EpisodeProgress
from llmexplore.benchmarks.evaluation.run_eval import check_seeds, relative_to_run
from llmexplore.envs import make_adapter
from llmexplore.errors import ConfigError, shown
from llmexplore.viz.animation import FORMATS, FrameComposer, atomic_path, default_format, write_animation
from llmexplore.viz.messages import CaptionStat, caption_stats, from_dicts, merge_stats
from llmexplore.viz.pages import episode_page, index_page
from llmexplore.viz.reward_plot import RewardPlot
from llmexplore.viz.screens import screen_for

VIZ_DIR = "viz"
INDEX = "index.html"
TOP_CAPTIONS = 25
CAPTION_LINES = 2  # caption lines under screens that do not show it themselves
PALETTE_SAMPLES = 6  # frames a GIF's palette is taken from


def episode_files(seed: int, fmt: str) -> dict[str, str]:
    """The names of the files written for one episode (page, animation, plot, step log, summary)."""
    stem = f"seed{seed}"
    return {"page": f"{stem}.html", "animation": f"{stem}.{fmt}", "plot": f"{stem}_rewards.png",
            "log": f"{stem}_steps.tsv", "summary": f"{stem}.json"}


class VisualizeJob:
    """Replays and renders one episode per seed; picklable (loaded parts stay behind)."""

    def __init__(self, run_dir: str, checkpoint: str, greedy: bool, out_dir: str, fmt: str, fps: float,
                 run_info: Mapping[str, Any], policy: Policy | None = None):
        self.args = dict(run_dir=run_dir, checkpoint=checkpoint, greedy=greedy, out_dir=out_dir, fmt=fmt, fps=fps,
                         run_info=dict(run_info))
        self.out_dir, self.fmt, self.fps, self.greedy, self.run_info = Path(out_dir), fmt, fps, greedy, dict(run_info)
        self._policy = policy

    def __getstate__(self) -> dict[str, Any]:
        return self.args

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def setup(self) -> None:
        """Load the policy, its env, its method and the family's screen once per worker process."""
        if self._policy is None:
            self._policy = load_policy(self.args["run_dir"], self.args["checkpoint"])
        self.adapter = make_adapter(self._policy.settings.run.task)
        self.screen = screen_for(self.adapter)
        self.env = self._policy.make_env(extra_keys=self.screen.extra_keys)
        self.method = self._policy.make_method()

    def run(self, seed: int) -> dict[str, Any]:
        """Play and record one episode on ``seed``, then write its files."""
        policy = self._policy
        trace = play_episode(policy, self.env, seed, greedy=self.greedy, extra_keys=self.screen.extra_keys)
        score_episode(self.method, policy, trace)
        captions = [self.adapter.caption(_obs_at(trace, t)) for t in range(1, trace.length + 1)]
        table = caption_stats(captions, trace.intrinsic, trace.rewards)
        files = episode_files(seed, self.fmt)
        names = self._action_names(trace)

        self._write_log(files["log"], trace, names, captions)
        first = self.screen.render(_obs_at(trace, 1))
        plot = RewardPlot(trace.rewards, trace.intrinsic, width=max(first.shape[1], 480), method=policy.settings.run.method)
        with atomic_path(self.out_dir / files["plot"]) as tmp:
            plot.save(tmp)
        composer = FrameComposer(first.shape[:2], plot, 0 if self.screen.shows_caption else CAPTION_LINES)

        def frame(t: int) -> np.ndarray:
            screen = first if t == 1 else self.screen.render(_obs_at(trace, t))
            status = (f"step {t}/{trace.length}  {names[t - 1]:<12} extrinsic {trace.rewards[t - 1]:+.2f}  "
                      f"intrinsic {trace.intrinsic[t - 1]:.4f}")
            return composer.compose(screen, t, status, None if self.screen.shows_caption else captions[t - 1])

        samples = [frame(t) for t in sorted({1, *np.linspace(1, trace.length, PALETTE_SAMPLES).astype(int).tolist()})]
        frame_count = write_animation((frame(t) for t in range(1, trace.length + 1)), self.out_dir / files["animation"],
                                      self.fps, palette_source=samples if self.fmt == "gif" else ())
        summary = {
            "seed": seed, "length": trace.length, "frames": frame_count, "return": float(trace.rewards.sum()),
            "intrinsic_return": float(trace.intrinsic.sum()), "terminated": trace.terminated,
            "truncated": trace.truncated, "stats": _plain(trace.stats), "files": files,
            "top_caption": table[0].text if table else "", "captions": [r.to_dict() for r in table],
        }
        atomic_write_json(self.out_dir / files["summary"], summary)
        label = self.screen.caption_label
        atomic_write_text(self.out_dir / files["page"],
                          episode_page(self.run_info, summary, table, TOP_CAPTIONS, label))
        return summary

    def _action_names(self, trace: EpisodeTrace) -> list[str]:
        known = self._policy.action_names
        return [known[a] if 0 <= a < len(known) else str(a) for a in trace.actions.tolist()]

    def _write_log(self, name: str, trace: EpisodeTrace, names: Sequence[str], captions: Sequence[str]) -> None:
        lines = ["step\taction\textrinsic\tintrinsic\tcaption"]
        for t in range(trace.length):
            text = captions[t].replace("\t", " ").replace("\n", " ")
            lines.append(f"{t + 1}\t{names[t]}\t{trace.rewards[t]:.4f}\t{trace.intrinsic[t]:.6f}\t{text}")
        atomic_write_text(self.out_dir / name, "\n".join(lines) + "\n")


def _obs_at(trace: EpisodeTrace, t: int) -> dict[str, np.ndarray]:
    obs = {k: v[t] for k, v in trace.observations.items()}
    obs.update({k: v[t] for k, v in trace.extras.items()})
    return obs


def _plain(stats: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in stats.items()}


def visualize(run_dir: str | Path, seeds: Sequence[int], *, checkpoint: str = "latest", greedy: bool = False,
              out: str | Path | None = None, fmt: str | None = None, fps: float = 10.0, workers: int | None = None,
              progress: bool = True) -> Path:
    """Render one episode per seed and the index page; returns the index page's path."""
    from llmexplore.atomic import ensure_writable

    seeds = check_seeds(seeds)
    fmt = fmt or default_format()
    if fmt not in FORMATS:
        raise ConfigError(f"unknown animation format {shown(fmt)}", hint=f"choose one of {list(FORMATS)}")
    if fmt == "mp4":
        from llmexplore.errors import require

        require("imageio_ffmpeg", "media", "writing MP4 animations")
    if not (fps > 0 and math.isfinite(fps)):
        raise ConfigError(f"--fps must be a positive number, got {fps}")
    policy = load_policy(run_dir, checkpoint)
    require_replayable(policy)
    run_path = Path(policy.settings.run_dir)
    mode = "greedy" if greedy else "sample"
    out_dir = Path(out).expanduser().resolve() if out else run_path / VIZ_DIR / f"{policy.checkpoint.path.stem}.{mode}"
    ensure_writable(out_dir)
    run_info = {
        "run_dir": str(run_path), "method": policy.settings.run.method, "task": policy.settings.run.task,
        "checkpoint": relative_to_run(policy.checkpoint.path, run_path), "env_steps": policy.checkpoint.env_steps,
        "action_selection": mode,
    }
    job = VisualizeJob(str(run_path), str(policy.checkpoint.path), greedy, str(out_dir), fmt, fps, run_info,
                       policy=policy)
    view = EpisodeProgress(f"visualize {policy.settings.run.method}/{policy.settings.run.task}", len(seeds), enabled=progress)
    try:
        episodes = run_episodes(job, seeds, default_workers(len(seeds)) if workers is None else workers,
                                lambda e: view.episode(e["seed"], e["length"], f"return {e['return']:.2f}"))
    finally:
        view.close()

    adapter = make_adapter(policy.settings.run.task)
    metrics = adapter.summarize([e["stats"] for e in episodes])
    metrics["intrinsic_return"] = float(np.mean([e["intrinsic_return"] for e in episodes]))
    metrics = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
    merged: list[CaptionStat] = merge_stats(from_dicts(e["captions"]) for e in episodes)
    label = screen_for(adapter).caption_label
    atomic_write_text(out_dir / INDEX, index_page(run_info, episodes, merged, metrics, adapter.metric, TOP_CAPTIONS, label))
    atomic_write_json(out_dir / "index.json", {
        "run": run_info, "metric": adapter.metric, "metrics": metrics,
        "episodes": [{k: v for k, v in e.items() if k != "captions"} for e in episodes],
        "captions": [r.to_dict() for r in merged[:200]],
    })
    return out_dir / INDEX


def read_index(out_dir: str | Path) -> dict[str, Any]:
    """The index.json of a visualisation folder."""
    return json.loads((Path(out_dir) / "index.json").read_text())
