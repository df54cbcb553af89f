"""The local grid runner as a user runs it (slow: trains small agents)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import read_record

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "tests" / "helpers" / "plugins"
pytestmark = pytest.mark.slow

SMALL = "train: {envs_per_worker: 8, batch_size: 512}"


def grid_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent(body).lstrip())
    return path


def cli_env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(PLUGINS)]))


def run_grid(path: Path, out: Path, *extra: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmexplore", "grid", str(path), "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, env=cli_env(), timeout=timeout)


def records(out: Path) -> dict[str, object]:
    """cell id -> record, for every run directory under the grid's output."""
    return {rec.cell: rec for rec in (read_record(p.parent) for p in (out / "runs").rglob("run.json"))}


def run_dirs(out: Path) -> dict[str, Path]:
    return {read_record(p.parent).cell: p.parent for p in (out / "runs").rglob("run.json")}


@dataclass
class ResumedGrid:
    """A two-task grid stopped by Ctrl-C while one cell had finished and another ran, then run again to the end."""

    out: Path
    interrupted_returncode: int
    interrupted_stderr: str
    interrupted_summary: dict
    complete_before: dict
    leaderboard_before_resume: bool
    result: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def resumed_grid(tmp_path_factory) -> ResumedGrid:
    """The quickstart's shape (none and RND, two seeds, NetHack and Crafter) on small budgets, interrupted once and
    resumed: the resume test and the leaderboard test read the same grid, so the suite trains it once. NetHack's
    episodes are long (2-3 end in 4,096 steps, sometimes none): 8,192 steps there, so that every cell has a final
    value to count."""
    tmp_path = tmp_path_factory.mktemp("grid")
    path = grid_file(tmp_path, f"""
        name: board
        defaults: {{{SMALL}}}
        blocks:
          - vary: {{method: [none, rnd], seed: [0, 1]}}
            tied:
              - {{task: nethack:score, steps: 8192}}
              - {{task: crafter:reward-free, steps: 4096}}
    """)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "llmexplore", "grid", str(path), "--out", str(out), "--jobs", "2",
                             "--quiet", "--no-leaderboard"], env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 900
    while time.time() < deadline:
        done = [r for r in records(out).values() if r.status == "complete"] if (out / "runs").exists() else []
        running = [r for r in records(out).values() if r.status == "running"] if (out / "runs").exists() else []
        if done and running:
            break
        if proc.poll() is not None:
            pytest.fail(f"the grid ended before it could be interrupted: {proc.stderr.read()[-3000:]}")
        time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("never saw one cell complete while another ran")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    summary = json.loads((out / "grid.json").read_text())
    complete_before = {cell: rec for cell, rec in records(out).items() if rec.status == "complete"}
    leaderboard_before_resume = (out / "leaderboard").exists()
    return ResumedGrid(out=out, interrupted_returncode=proc.returncode, interrupted_stderr=stderr,
                       interrupted_summary=summary, complete_before=complete_before,
                       leaderboard_before_resume=leaderboard_before_resume,
                       result=run_grid(path, out, "--jobs", "2", timeout=1500))


def test_interrupted_grid_resumes_without_redoing_complete_cells(resumed_grid):
    assert resumed_grid.interrupted_returncode == 130, resumed_grid.interrupted_stderr[-2000:]
    assert resumed_grid.interrupted_summary["interrupted"] is True
    before = resumed_grid.complete_before
    assert before
    assert not resumed_grid.leaderboard_before_resume  # --no-leaderboard

    out = resumed_grid.out
    assert resumed_grid.result.returncode == 0, resumed_grid.result.stderr[-3000:]
    after = records(out)
    assert len(after) == 8 and all(r.status == "complete" for r in after.values())
    for cell, record in before.items():
        assert after[cell].sessions == record.sessions, f"{cell} was redone"
    for cell, run_dir in run_dirs(out).items():
        steps = [json.loads(line)["env_steps"] for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
        assert steps == sorted(steps), f"{cell}: episodes logged twice"
    assert "| rnd" in (out / "leaderboard" / "leaderboard.md").read_text()


def test_a_cell_that_always_fails_is_reported_and_the_others_finish(tmp_path):
    path = grid_file(tmp_path, f"""
        name: failing
        defaults: {{steps: 4096, task: nethack:score, {SMALL}}}
        vary: {{method: [none, test-exploding, test-steady]}}
    """)
    out = tmp_path / "out"
    result = run_grid(path, out, "--jobs", "2", "--retries", "1")
    assert result.returncode == 1
    summary = json.loads((out / "grid.json").read_text())
    by_id = {c["id"]: c for c in summary["cells"]}
    failed = by_id["test-exploding/nethack:score/seed0"]
    assert failed["status"] == "failed" and failed["attempts"] == 2
    assert "always fails" in (failed["error"] or "") + (failed["log_tail"] or "")
    assert by_id["none/nethack:score/seed0"]["status"] == "complete"
    assert by_id["test-steady/nethack:score/seed0"]["status"] == "complete"
    assert "FAILED test-exploding/nethack:score/seed0" in result.stderr
    # the leaderboard is built from what finished and lists the failure
    md = (out / "leaderboard" / "leaderboard.md").read_text()
    assert "test-steady" in md and "Runs not counted" in md and "failed" in md


def test_leaderboard_files_and_html_links(resumed_grid):
    result = resumed_grid.result
    assert result.returncode == 0, result.stderr[-3000:]
    board = resumed_grid.out / "leaderboard"
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.tex", "index.html",
                 "curves_nethack-score.png", "curves_crafter-reward-free.png", "achievements_crafter-reward-free.png"):
        assert (board / name).is_file(), name
    html = (board / "index.html").read_text()
    import re

    for src in re.findall(r"src='([^']+)'", html):
        assert (board / src).is_file()
    csv = (board / "leaderboard.csv").read_text()
    assert "published" in csv and "Plan2Explore" in csv
    md = (board / "leaderboard.md").read_text()
    assert "Published results (not run here)" in md and "Aggregate across tasks" in md
    # per-run scores: one row per (method, seed, task), the value of the run's own record
    import pandas as pd

    scores = pd.read_csv(board / "scores.csv")
    assert len(scores) == 8 and set(scores["method"]) == {"none", "rnd"}
    for row in scores.itertuples():
        record = read_record(row.run_dir)
        assert record.spec.seed == row.seed and record.final_metrics[record.metric] == pytest.approx(row.metric_value)
    assert len(json.loads((board / "scores.json").read_text())["runs"]) == 8
    assert "P(X > Y)" in md and "P(X &gt; Y)" in html
    tex = (board / "leaderboard.tex").read_text()
    assert "\\label{tab:nethack-score}" in tex and "\\label{tab:pi-all}" in tex
