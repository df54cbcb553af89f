"""A method that ran but contributed nothing is reported as inert, never ranked (issue 53, item 1). The
records are real: MiniHack KeyRoom runs of oni-retrieval, whose intrinsic return is 0 at every curve point
and at the end with c_int 0.4, beside the `none` runs of the same task."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

from llmexplore.benchmarks.results.inert import inert_reason
from llmexplore.benchmarks.results.leaderboard import InertWarning, build_leaderboard
from llmexplore.benchmarks.run.record import RunRecord

RECORDS = Path(__file__).resolve().parents[2] / "results" / "minihack" / "records"
TASK = "minihack-keyroom-s5"


def _copy(root: Path) -> None:
    for method in ("none", "oni-retrieval", "rnd"):
        shutil.copytree(RECORDS / method / TASK, root / method / TASK)


def test_an_inert_method_is_listed_apart_and_never_ranked(tmp_path):
    _copy(tmp_path / "runs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=100)
    assert any(issubclass(w.category, InertWarning) and "5 inert run(s)" in str(w.message) for w in caught)
    md = files["markdown"].read_text()
    ranked, inert = md.split("## Inert runs (not ranked)", 1)
    task_table = [line for line in ranked.split("\n") if line.startswith("| ")]
    assert task_table and not any("oni-retrieval" in line for line in task_table)  # nor in P(X > Y)
    assert "Not ranked, inert: oni-retrieval" in ranked
    assert "intrinsic return 0 at all 20 curve points and at the end, with c_int 0.4" in inert
    assert "Inert: a run of a method other than none" in inert and "\\label{tab:inert}" in files["latex"].read_text()
    assert "oni-retrieval" in files["html"].read_text().split("Inert runs", 1)[1]
    with open(files["csv"]) as fh:
        rows = [r for r in csv.DictReader(fh) if r["label"] == "oni-retrieval"]
    assert [(r["kind"], r["seeds"]) for r in rows] == [("inert", "5")]
    with open(files["scores_csv"]) as fh:
        marked = {r["method"]: bool(r["inert"]) for r in csv.DictReader(fh)}
    assert marked == {"none": False, "oni-retrieval": True, "rnd": False}

    ranked_anyway = build_leaderboard(tmp_path / "runs", tmp_path / "all", reps=100, include_inert=True)
    text = ranked_anyway["markdown"].read_text()
    assert "Inert runs" not in text
    assert any("oni-retrieval" in line for line in text.split("\n") if line.startswith("| "))


def _record(curve: list[float | None], final: float, method: str = "rnd", int_coef: float | None = 0.5):
    data = json.loads((RECORDS / "oni-retrieval" / TASK / "seed0" / "run.json").read_text())
    data["spec"].update(method=method, int_coef=int_coef, label=method)
    data["curve"] = [dict(data["curve"][0], env_steps=1000 * (i + 1), intrinsic_return=v) for i, v in enumerate(curve)]
    data["final_metrics"]["intrinsic_return"] = final
    return RunRecord.model_validate(data)


def test_the_rule_reads_the_whole_curve_and_the_end():
    assert inert_reason(_record([0.0, 0.0, 0.0], 0.0)) is not None
    assert inert_reason(_record([0.3, 0.3], 0.3, int_coef=None)).endswith("with its default c_int")
    assert inert_reason(_record([0.0, 0.0, 0.1], 0.0)) is None  # a bonus once is a bonus
    assert inert_reason(_record([0.0, 0.0], 0.2)) is None  # the end differs
    assert inert_reason(_record([0.0], 0.0)) is None  # one point says too little
    assert inert_reason(_record([None, None], 0.0)) is None  # nothing to judge by
    assert inert_reason(_record([0.0, 0.0], 0.0, method="none")) is None  # the baseline is meant to be so
    assert inert_reason(_record([0.0, 0.0], 0.0, int_coef=0.0)) is None  # c_int 0 by choice


def test_a_record_s_own_check_decides_where_the_run_made_it():
    """A record that carries the run's check over every step (benchmarks/run/inert.py) is judged by it: a
    constant other than zero is inert too, and a varying reward is not, whatever its curve shows."""
    from llmexplore.benchmarks.results.inert import inert_reason
    from llmexplore.benchmarks.run.record import RunRecord

    base = dict(status="complete", cell="rnd/crafter:reward-free/seed0", environment={}, started_at="t",
                updated_at="t", budget=4096, env_steps=4096, wall_seconds=1.0, steps_per_second=1.0,
                metric="score", spec={"method": "rnd", "task": "crafter:reward-free", "seed": 0, "int_coef": 0.5})
    flat_curve = [{"env_steps": s, "episodes": 3, "episode_return": 1.0, "intrinsic_return": 0.0, "metric": 1.0}
                  for s in (2048, 4096)]
    checked_varying = RunRecord(**base, curve=flat_curve, final_metrics={"intrinsic_return": 0.0},
                                method_metrics={"reward_int_min": 0.0, "reward_int_max": 0.3})
    assert inert_reason(checked_varying) is None
    constant = RunRecord(**base, inert={"constant_reward": 0.25, "env_steps": 4096, "why": "..."},
                         method_metrics={"reward_int_min": 0.25, "reward_int_max": 0.25})
    assert "0.25 on every step" in inert_reason(constant)
