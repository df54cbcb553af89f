"""Evaluating and visualizing trained agents (slow: trains one tiny run per environment)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from llmexplore.agents.checkpoints import list_checkpoints
from llmexplore.agents.policy import load_policy
from llmexplore.benchmarks.evaluation.run_eval import evaluate
from llmexplore.benchmarks.evaluation.eval_record import read_evaluation
from llmexplore.errors import ConfigError
from llmexplore.viz.visualize import read_index, visualize
from tests.conftest import SHARED_DATA

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

#: one tiny run per environment: (method, task, env-step budget)
RUNS = {
    "nethack": ("rnd", "nethack:score", 2048),
    "crafter": ("rnd", "crafter:reward", 1024),
    "housekeep": ("rnd", "housekeep:pomaria_2", 1024),
}
if not (SHARED_DATA / "housekeep").is_dir():  # Housekeep's tasks need its data (../shared/data/housekeep)
    del RUNS["housekeep"]


def run_cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "llmexplore", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def train(out: Path, method: str, task: str, steps: int) -> Path:
    result = run_cli("run", "--method", method, "--task", task, "--steps", str(steps), "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    assert list_checkpoints(out)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trained")
    return {env: train(root / env, *spec) for env, spec in RUNS.items()}


@pytest.mark.parametrize("env", sorted(RUNS))
def test_evaluating_twice_with_the_same_seeds_gives_identical_records(runs, tmp_path, env):
    run = runs[env]
    seeds = [0, 1, 2]
    first, first_path = evaluate(run, seeds, workers=2, out=tmp_path / "a.json", progress=False)
    second, _ = evaluate(run, seeds, workers=1, out=tmp_path / "b.json", progress=False)
    assert first.results() == second.results()
    assert read_evaluation(first_path).results() == first.results()

    method, task, _ = RUNS[env]
    assert (first.method, first.task, first.action_selection) == (method, task, "sample")
    assert first.checkpoint.path.startswith("sf/checkpoint_p0/") and first.checkpoint.kind == "latest"
    assert [e.seed for e in first.episodes] == seeds
    assert first.metric in first.metrics and first.metrics["episodes"] == 3
    for episode in first.episodes:
        assert episode.length > 0 and (episode.terminated or episode.truncated)
        assert episode.stats["length"] == episode.length
        assert episode.stats["return"] == pytest.approx(episode.episode_return)
        assert episode.intrinsic_return > 0  # RND pays for every transition
    # seeds are fresh episodes, not one episode three times
    assert len({(e.length, round(e.episode_return, 6)) for e in first.episodes}) > 1
    assert first.metrics["intrinsic_return"] == pytest.approx(sum(e.intrinsic_return for e in first.episodes) / 3)


def test_greedy_evaluation_through_the_cli_and_resume(runs, tmp_path):
    run = runs["nethack"]
    out = tmp_path / "greedy.json"
    result = run_cli("evaluate", str(run), "--seeds", "4-5", "--greedy", "--workers", "1", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["record"] == str(out) and summary["action_selection"] == "greedy" and summary["episodes"] == 2
    full = read_evaluation(out)
    assert full.seeds == [4, 5] and full.timing.resumed_episodes == 0

    # an evaluation cut short after the first episode picks it up again
    partial = out.with_name(out.name + ".partial.jsonl")
    first = full.model_dump(by_alias=True, mode="json")["episodes"][0]
    partial.write_text(json.dumps({"checkpoint_sha256": full.checkpoint.sha256, "action_selection": "greedy",
                                   "episode": first}) + "\n")
    resumed, _ = evaluate(run, [4, 5], greedy=True, workers=1, out=out, progress=False)
    assert resumed.timing.resumed_episodes == 1
    assert resumed.results() == full.results()
    assert not partial.exists()


def test_a_run_without_checkpoints_is_refused_naming_what_is_missing(runs, tmp_path):
    empty = tmp_path / "untrained"
    (empty / "sf").mkdir(parents=True)
    shutil.copy(runs["nethack"] / "sf" / "config.json", empty / "sf" / "config.json")
    with pytest.raises(ConfigError) as info:
        load_policy(empty)
    assert "has no checkpoint" in str(info.value) and "checkpoint_*.pth" in str(info.value)
    result = run_cli("evaluate", str(empty), "--episodes", "1", "--quiet")
    assert result.returncode == 2 and "has no checkpoint" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("visualize", str(runs["nethack"]), "--checkpoint", "best", "--episodes", "1", "--quiet")
    assert result.returncode == 2 and "no 'best' checkpoint" in result.stderr


@pytest.mark.parametrize("text", ["[1, 2, 3]", "null"])
def test_a_run_record_that_is_not_an_object_is_one_error_before_any_episode(runs, tmp_path, text):
    """Issue 28: valid JSON that is not an object in run.json: one clear error, nothing played or written."""
    copy = tmp_path / "run"
    shutil.copytree(runs["nethack"], copy)
    (copy / "run.json").write_text(text)
    result = run_cli("evaluate", str(copy), "--episodes", "1", "--quiet")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "instead of a JSON object" in result.stderr
    assert not (copy / "eval").exists() and (copy / "run.json").read_text() == text


def test_a_checkpoint_of_another_env_is_refused(runs):
    crafter_checkpoint = list_checkpoints(runs["crafter"])[-1]
    with pytest.raises(ConfigError) as info:
        load_policy(runs["nethack"], str(crafter_checkpoint))
    message = str(info.value)
    assert "task 'crafter:reward'" in message and "task 'nethack:score'" in message


def test_a_checkpoint_of_another_method_is_refused(runs, tmp_path):
    other = train(tmp_path / "none", "none", "nethack:score", 2048)
    result = run_cli("evaluate", str(runs["nethack"]), "--checkpoint", str(list_checkpoints(other)[-1]),
                     "--episodes", "1", "--quiet")
    assert result.returncode == 2, result.stderr
    assert "belongs to method 'none' on task 'nethack:score'" in result.stderr
    assert "is method 'rnd' on task 'nethack:score'" in result.stderr
    # and the method that trained it evaluates it: none pays no intrinsic reward
    record, _ = evaluate(other, [0], workers=1, out=tmp_path / "none.json", progress=False)
    assert record.method == "none" and record.episodes[0].intrinsic_return == 0.0


@pytest.mark.parametrize("env,fmt", [("nethack", "gif"), ("crafter", "mp4"), ("housekeep", "gif")])
def test_visualizer_outputs_open_and_match_the_evaluation(runs, tmp_path, env, fmt):
    if fmt == "mp4":
        pytest.importorskip("imageio_ffmpeg")
    if env not in runs:
        pytest.skip(f"no {env} data")
    run = runs[env]
    seeds = [0, 1]
    out = tmp_path / "viz"
    index = visualize(run, seeds, out=out, fmt=fmt, workers=2, progress=False)
    assert index == out / "index.html"
    record, _ = evaluate(run, seeds, workers=1, out=tmp_path / "eval.json", progress=False)

    data = read_index(out)
    assert [e["seed"] for e in data["episodes"]] == seeds
    for episode, evaluated in zip(data["episodes"], record.episodes):
        # extra observation keys for the screen change nothing: the same episodes as evaluate's
        assert episode["length"] == evaluated.length
        assert episode["return"] == pytest.approx(evaluated.episode_return)
        assert episode["intrinsic_return"] == pytest.approx(evaluated.intrinsic_return)
        animation = out / episode["files"]["animation"]
        assert animation.suffix == f".{fmt}" and frame_count(animation) == episode["length"]
        with Image.open(out / episode["files"]["plot"]) as plot:
            assert plot.size[0] > 0
        log_lines = (out / episode["files"]["log"]).read_text().splitlines()
        assert len(log_lines) == episode["length"] + 1
        summary = json.loads((out / episode["files"]["summary"]).read_text())
        assert sum(c["count"] for c in summary["captions"]) == episode["length"]
        assert sum(c["intrinsic"] for c in summary["captions"]) == pytest.approx(episode["intrinsic_return"])

    pages = [index] + [out / e["files"]["page"] for e in data["episodes"]]
    linked = set()
    for page in pages:
        links = page_links(page)
        assert links, f"{page.name} links nothing"
        for link in links:
            assert (page.parent / link).is_file(), f"{page.name} links {link}, which does not exist"
            linked.add(link)
    for episode in data["episodes"]:
        assert set(episode["files"].values()) <= linked | {"index.html"}


def frame_count(path: Path) -> int:
    if path.suffix == ".gif":
        with Image.open(path) as image:
            return image.n_frames
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path), format="FFMPEG")
    try:
        return reader.count_frames()
    finally:
        reader.close()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def page_links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text())
    return parser.links
