"""The LaTeX labels the README names are the ones a built leaderboard has (issue 52, item 1): a paper's
``\\ref`` written from the README must find its table. One module names the labels (table_labels.py); this
test reads the README's labels and the .tex, so neither can drift from the other."""

from __future__ import annotations

import re
from pathlib import Path

from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from llmexplore.benchmarks.results.table_labels import LABELS, table_label
from tests.unit.test_leaderboard_outputs import _write_runs

README = Path(__file__).resolve().parents[2] / "README.md"
#: the task the README's per-task examples name; the test leaderboard has runs on it
EXAMPLE_TASK = "crafter:reward-free"


def _readme_labels() -> set[str]:
    return set(re.findall(r"`(tab:[A-Za-z0-9:-]+)`", README.read_text()))


def test_every_label_the_readme_names_is_in_a_built_leaderboard(tmp_path):
    runs = tmp_path / "runs"
    _write_runs(runs)  # two methods on NetHack score and Crafter reward-free, with published Crafter rows
    # a method whose intrinsic return never varied: the tab:inert table
    flat = [{"env_steps": s, "episodes": 2, "episode_return": 0.0, "intrinsic_return": 0.5, "metric": 1.0}
            for s in (2048, 4096)]
    _write_runs(runs / "flat", {"e3b": {"crafter:reward-free": [1.0, 2.0]}}, curve=flat)
    (runs / "broken").mkdir()
    (runs / "broken" / "run.json").write_text("{")  # listed as not counted: the tab:not-counted table
    tex = build_leaderboard(runs, tmp_path / "board", reps=100)["latex"].read_text()
    built = set(re.findall(r"\\label\{([^}]+)\}", tex))
    named = _readme_labels()
    assert named, "the README names no LaTeX label"
    assert named <= built, f"README names labels the .tex lacks: {sorted(named - built)}; it has {sorted(built)}"


def test_the_readme_names_every_kind_of_label_the_code_writes():
    named = _readme_labels()
    shown = {kind: table_label(kind, EXAMPLE_TASK) for kind in LABELS}
    missing = {kind: label for kind, label in shown.items() if label not in named}
    assert not missing, f"README.md's leaderboard paragraph does not name: {missing}"


def test_a_task_label_is_one_latex_word():
    assert table_label("improvement", "minihack:keyroom-s5") == "tab:pi-minihack-keyroom-s5"
    assert table_label("aggregate") == "tab:agg"
