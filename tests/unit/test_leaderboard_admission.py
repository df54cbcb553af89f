"""A leaderboard over tampered records counts only the sound ones and lists the rest with the reason in
every output (issue 37, class 3). The records are real: copies of committed Crafter runs, then edited."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from llmexplore.benchmarks.results.aggregate import collect
from llmexplore.benchmarks.results.leaderboard import NotCountedWarning, build_leaderboard

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "results" / "crafter-1m" / "records" / "none" / "crafter-reward"


def _load(seed: int) -> dict:
    return json.loads((RECORDS / f"seed{seed}" / "run.json").read_text())


def _as_seed(data: dict, seed: int) -> dict:
    """The record moved to another seed, consistently (so only the intended tampering is wrong)."""
    data["spec"]["seed"] = seed
    data["cell"] = f"none/crafter:reward/seed{seed}"
    return data


def _write(root: Path, name: str, data: dict | str) -> None:
    (root / name).mkdir(parents=True)
    text = data if isinstance(data, str) else json.dumps(data)  # json.dumps writes NaN and Infinity
    (root / name / "run.json").write_text(text)


def _tampered(root: Path) -> dict[str, tuple[str, str]]:
    """Writes the tampered records; returns folder -> (status, words of the reason)."""
    cases: dict[str, tuple[str, str]] = {}
    shutil.copytree(RECORDS / "seed0", root / "copy-of-seed0")
    cases["copy-of-seed0"] = ("duplicate", "the same cell as")
    data = _load(1)
    data["cell"] = "none/crafter:reward/seed7"
    _write(root, "cell-disagrees", data)
    cases["cell-disagrees"] = ("refused", "disagrees with its spec")
    data = _as_seed(_load(1), 50)
    data["spec"]["steps"] = data["budget"] = 4096
    data["env_steps"] = 10
    _write(root, "ten-of-4096-steps", data)
    cases["ten-of-4096-steps"] = ("refused", "trained 10 of its 4,096 env steps")
    for seed, (name, key, value, words) in enumerate([
            ("nan-score", "score", float("nan"), "is nan, not a finite number"),
            ("infinite-return", "return", float("inf"), "is inf, not a finite number"),
            ("negative-success", "success_collect_wood", -5.0, "outside the possible range [0, 100]"),
            ("score-200-percent", "score", 200.0, "final score is 200, outside the possible range")], start=51):
        data = _as_seed(_load(2), seed)
        data["final_metrics"][key] = value
        _write(root, name, data)
        cases[name] = ("refused", words)
    data = _as_seed(_load(2), 60)
    data["spec"]["task"] = "crafter:speedrun"
    data["cell"] = "none/crafter:speedrun/seed60"
    _write(root, "unknown-task", data)
    cases["unknown-task"] = ("refused", "unknown task 'crafter:speedrun'")
    text = json.dumps(_as_seed(_load(2), 61))
    deep = "[" * 100_000 + "]" * 100_000
    _write(root, "nested-100000-deep", text.replace('"method_options": {}', f'"method_options": {{"x": {deep}}}'))
    cases["nested-100000-deep"] = ("unreadable", "nests its values too deeply")
    return cases


def test_a_leaderboard_over_tampered_records_counts_only_sound_ones_and_says_why(tmp_path):
    runs = tmp_path / "runs"
    for seed in range(3):
        shutil.copytree(RECORDS / f"seed{seed}", runs / "good" / f"seed{seed}")
    cases = _tampered(runs / "tampered")
    before = {p: p.read_bytes() for p in runs.rglob("run.json")}

    found = collect(runs)
    assert sorted(r.path.name for r in found.runs) == ["seed0", "seed1", "seed2"]
    assert all(r.path.parent.name == "good" for r in found.runs)
    excluded = {Path(row["path"]).name: row for row in found.excluded}
    assert set(excluded) == set(cases)
    for name, (status, words) in cases.items():
        assert excluded[name]["status"] == status, (name, excluded[name])
        assert words in excluded[name]["why"], (name, excluded[name]["why"])
        if status == "refused":  # the problem, then the fix
            assert "move the record out" in excluded[name]["why"] or "rerun the cell" in excluded[name]["why"]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = build_leaderboard(runs, tmp_path / "board", reps=200)
    assert any(issubclass(w.category, NotCountedWarning) and "8 complete record(s) not counted" in str(w.message)
               for w in caught)
    # seed count and mean over the same three sound rows: the committed leaderboard's numbers
    committed = (REPO / "results/crafter-1m/leaderboard/leaderboard.csv").read_text().splitlines()
    expected = next(line for line in committed if line.startswith("run,crafter:reward,none,"))
    row = next(line for line in files["csv"].read_text().splitlines() if line.startswith("run,crafter:reward,none,"))
    assert float(row.split(",")[4]) == 3 and row.split(",")[7] == expected.split(",")[7]
    scores = files["scores_csv"].read_text()
    assert scores.count("crafter:reward,") == 3 and "tampered" not in scores
    for kind in ("markdown", "csv", "latex", "html"):
        text = files[kind].read_text()
        assert "Runs not counted" in text or "not counted" in text, kind
        for name, (_, words) in cases.items():
            shown = name.replace("_", r"\_") if kind == "latex" else name
            assert shown in text, (kind, name)
        assert "outside the possible range" in text and "disagrees with its spec" in text, kind
    assert {p: p.read_bytes() for p in runs.rglob("run.json")} == before  # nothing touched


@pytest.mark.parametrize("seed", [True, "0", None, -1])
def test_a_record_without_a_usable_seed_is_listed_not_a_crash(tmp_path, seed):
    """The record's spec is typed (``RecordedSpec``): a seed that is not a whole number >= 0 does not read,
    and the record is listed as unreadable, naming the field."""
    data = _load(0)
    data["spec"]["seed"] = seed
    _write(tmp_path, "bad-seed", data)
    found = collect(tmp_path)
    assert not found.runs and found.excluded[0]["status"] == "unreadable"
    assert "spec.seed" in found.excluded[0]["why"]
