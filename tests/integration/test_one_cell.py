"""One-cell runs through the CLI, as a user runs them (slow: they train agents)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def run_cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def crafter_score_as_crafter_computes_it(stats_file: Path, budget: int) -> float:
    """Crafter's analysis, written out independently: episodes until the running sum of
    lengths passes the budget; success rate = % of episodes with the achievement; score =
    exp(mean(ln(1 + rate))) - 1."""
    steps, rows = 0, []
    for line in stats_file.read_text().splitlines():
        episode = json.loads(line)
        steps += episode["length"]
        if steps > budget:
            break
        rows.append(episode)
    keys = sorted(k for k in rows[0] if k.startswith("achievement_"))
    assert len(keys) == 22
    rates = np.array([100 * np.mean([r[k] >= 1 for r in rows]) for k in keys])
    return float(np.exp(np.mean(np.log(1 + rates))) - 1)


def test_rnd_on_crafter_reward_free(tmp_path):
    out = tmp_path / "crafter"
    result = run_cli("run", "--method", "rnd", "--task", "crafter:reward-free", "--seed", "0", "--steps", "20000",
                     "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= 20000
    assert record.metric == "score"
    assert record.final_metrics["score"] == pytest.approx(crafter_score_as_crafter_computes_it(out / "stats.jsonl", 20000))
    assert record.curve and record.files.checkpoints
    assert record.final_metrics["intrinsic_return"] > 0
    assert record.spec.ext_coef == 0.0 and record.spec.int_coef == 0.5
    assert record.environment["crafter_render"] == "accelerated"


def test_rnd_on_nethack_score(tmp_path):
    out = tmp_path / "nethack"
    result = run_cli("run", "--method", "rnd", "--task", "nethack:score", "--seed", "0", "--steps", "20000",
                     "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "complete"
    record = read_record(out)
    assert record.metric == "progression"
    for key in ("return", "score", "depth", "experience_level", "gold", "length", "progression"):
        assert key in record.final_metrics
    assert record.steps_per_second > 0 and record.environment["torch"]
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert episodes and all("env_steps" in e for e in episodes)
    # a rerun of a complete cell does no work and returns the same record
    again = run_cli("run", "--method", "rnd", "--task", "nethack:score", "--seed", "0", "--steps", "20000",
                    "--out", str(out), "--quiet")
    assert again.returncode == 0
    assert read_record(out).sessions == record.sessions
    # the same directory with a different spec is refused, nothing overwritten
    other = run_cli("run", "--method", "none", "--task", "nethack:score", "--seed", "0", "--steps", "20000",
                    "--out", str(out), "--quiet")
    assert other.returncode == 2 and "holds a different run" in other.stderr
    assert read_record(out).spec.method == "rnd"


def test_the_light_preset_and_the_compiled_learner_train_nethack_with_two_workers(tmp_path):
    """Opt-in speed settings, through the CLI: the light network and core (issue 54), and the encoder compiled
    in the learner's own process (two rollout workers, so the learner is a process of its own)."""
    out = tmp_path / "light"
    result = run_cli("run", "--method", "none", "--task", "nethack:score", "--steps", "16384",
                     "-t", "preset=light", "-t", "compile=learner", "-t", "num_workers=2",
                     "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= 16384
    train = ResolvedRun.read(out).train  # what it trained with, the preset filled in
    assert (train.network, train.rnn_size) == ("light", 64)
    assert (train.compile, train.sampling) == ("learner", "batched")
    assert np.isfinite(record.final_metrics["progression"])
    # the policy it saved is the light one: evaluation loads it into the same network
    evaluated = run_cli("evaluate", str(out), "--episodes", "2", "--workers", "1", "--quiet")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
