"""MaestroMotif end to end, as a user runs it, on CPU at small scale with the oracle:
scripts/maestro_pipeline.sh (collect -> annotate per skill -> 5 reward models -> generate and check
code -> train the skill-conditioned policy), a rerun that resumes, zero-shot evaluation on a
published zero-shot task, and the errors a user meets first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmexplore.benchmarks.run.record import read_record
from llmexplore.methods.maestro.skills import SKILLS
from tests.helpers.lm_server import ServerProcess
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.replay import check_evaluates_and_visualizes
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def pipeline(out: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHON=sys.executable)
    return subprocess.run(
        [
            str(REPO / "scripts/maestro_pipeline.sh"),
            "--out",
            str(out),
            "--pairs",
            "1000",
            "--epochs",
            "2",
            "--steps",
            "2048",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO,
    )


def test_maestro_pipeline_end_to_end(tmp_path, capsys):
    out = tmp_path / "maestro"
    started = time.perf_counter()
    result = pipeline(out, "--eval", "none")
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    first = time.perf_counter() - started
    for skill in SKILLS:
        manifest = json.loads((out / "rewards" / skill / "manifest.json").read_text())
        assert manifest["annotation"] == f"{ORACLE_ANNOTATOR}_msg_{skill}_default"
    code = json.loads((out / "code/manifest.json").read_text())
    assert len(code["files"]) == 11 and all(e["attempts"] == 1 for e in code["files"].values())
    run = out / "skills-run"
    record = read_record(run)
    assert record.status == "complete" and record.env_steps >= 2048 and record.spec.ext_coef == 0.0
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rows = [m for m in metrics if "maestro_share_discoverer" in m]
    assert rows and "maestro_reward_discoverer" in rows[0]
    assert all(sum(m[f"maestro_share_{s}"] for s in SKILLS) == pytest.approx(1.0) for m in rows)
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert all(sum(e[f"maestro_steps_{s}"] for s in SKILLS) == e["length"] for e in episodes)

    # rerunning resumes: nothing is collected, annotated, trained or generated again
    started = time.perf_counter()
    again = pipeline(out, "--eval", "none")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("exists: kept") == 1 + len(SKILLS)
    assert all("1 attempt" not in line for line in again.stdout.splitlines() if "accepted" in line)
    assert time.perf_counter() - started < first / 2

    assert record.spec.task == "nethack:maestro-score"
    check_evaluates_and_visualizes(run, "maestro", tmp_path)

    # zero-shot evaluation with the LM-written policy over skills for a published task
    from llmexplore.cli import main

    result_file = tmp_path / "eval.json"
    assert (
        main(
            [
                "maestro",
                "evaluate",
                "--task",
                "gnomish-mines",
                "--run",
                str(run),
                "--episodes",
                "3",
                "--out",
                str(result_file),
            ]
        )
        == 0
    )
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    saved = json.loads(result_file.read_text())
    assert (
        line["episodes"] == 3
        and 0.0 <= line["success_rate"] <= 1.0
        and line["env_task"] == "nethack:gnomish-mines"
    )
    assert saved["successes"] == sum(e["success"] for e in saved["episodes_detail"])
    assert (out / "code/policies/tasks/gnomish-mines.py").is_file()  # the oracle's reference policy
    assert main(["maestro", "evaluate", "--task", "nowhere", "--run", str(run), "--episodes", "1"]) == 2
    assert "unknown zero-shot task 'nowhere'" in capsys.readouterr().err

    # errors stop at once, exit 2, one message naming the problem
    bad = run_cli(
        "run",
        "--method",
        "maestro",
        "--task",
        "nethack:score",
        "--steps",
        "2048",
        "--out",
        str(tmp_path / "bad"),
        "-o",
        f"reward_models={tmp_path / 'missing'}",
        "-o",
        f"code={out / 'code'}",
    )
    assert bad.returncode == 2 and "no reward model for skill 'discoverer'" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = run_cli("maestro", "generate", "--out", str(tmp_path / "c"), "--skills", "discoverer,necromancer")
    assert bad.returncode == 2 and "unknown skill 'necromancer'" in bad.stderr
    refused = "```python\ndef initiation(obs):\n    return obs['altar'] > 0\n```"
    with ServerProcess.scripted([refused], tmp_path / "server") as server:
        bad = run_cli(
            "maestro",
            "generate",
            "--out",
            str(tmp_path / "c"),
            "--skills",
            "worshipper",
            "--backend",
            "openai",
            "--base-url",
            server.base_url,
            "--model",
            server.model,
            "--cache",
            ":memory:",
        )
    assert bad.returncode == 2 and "refused twice" in bad.stderr and "obs has no field 'altar'" in bad.stderr
    assert "rejected/skills/worshipper/initiation.attempt2.py" in bad.stderr
    assert (tmp_path / "c/rejected/skills/worshipper/initiation.attempt2.py").is_file()
