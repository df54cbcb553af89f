"""Evaluate and visualize a trained run through the CLI, as the end-to-end tests of each method do:
every method's checkpoint must play back with its own intrinsic reward."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmexplore.benchmarks.evaluation.eval_record import read_evaluation
from tests.integration.test_one_cell import run_cli


def check_evaluates_and_visualizes(run: Path, method: str, work: Path) -> None:
    """One sampled episode through ``llmexplore evaluate`` and one through ``llmexplore visualize``."""
    record_path = work / f"{method}-eval.json"
    result = run_cli("evaluate", str(run), "--episodes", "1", "--workers", "1", "--out", str(record_path), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_evaluation(record_path)
    assert record.method == method and len(record.episodes) == 1
    episode = record.episodes[0]
    assert episode.length > 0 and "intrinsic_return" in record.metrics

    viz = work / f"{method}-viz"
    result = run_cli("visualize", str(run), "--episodes", "1", "--workers", "1", "--out", str(viz), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    index = json.loads((viz / "index.json").read_text())
    shown = index["episodes"][0]
    # the same seed and action selection: the visualizer replays the evaluated episode
    assert shown["length"] == episode.length
    assert shown["intrinsic_return"] == pytest.approx(episode.intrinsic_return)
    assert all((viz / name).is_file() for name in shown["files"].values())
