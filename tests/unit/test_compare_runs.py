"""scripts/compare_runs.py: two grid folders compared log by log, with stamps and added columns told apart
from changed behaviour."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_runs.py"


def _module():
    spec = importlib.util.spec_from_file_location("compare_runs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(root: Path, episodes: list[dict], intrinsic: list[dict]) -> None:
    cell = root / "runs" / "rnd" / "crafter-reward-free" / "seed0"
    cell.mkdir(parents=True)
    (cell / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in episodes))
    (cell / "intrinsic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in intrinsic))


def test_same_agents_with_moved_stamps_and_reordered_returns_compare_equal(tmp_path, capsys):
    compare = _module()
    _cell(tmp_path / "a", [{"env_steps": 1024, "length": 5, "reward": 1.0}],
          [{"env_steps": 1024, "intrinsic_return": 2.0}, {"env_steps": 1024, "intrinsic_return": 3.0}])
    _cell(tmp_path / "b", [{"env_steps": 2048, "length": 5, "reward": 1.0, "new": 1}],
          [{"env_steps": 1024, "intrinsic_return": 3.0}, {"env_steps": 1024, "intrinsic_return": 2.0}])
    assert compare.main([str(tmp_path / "a"), str(tmp_path / "b"), "--ignore", "env_steps"]) == 0
    out = capsys.readouterr().out
    assert "in another order" in out and "only after: new" in out
    assert compare.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1  # the stamp moved


def test_a_changed_episode_or_return_is_a_difference(tmp_path, capsys):
    compare = _module()
    _cell(tmp_path / "a", [{"length": 5, "reward": 1.0}], [{"env_steps": 1024, "intrinsic_return": 2.0}])
    _cell(tmp_path / "b", [{"length": 5, "reward": 0.5}], [{"env_steps": 1024, "intrinsic_return": 2.5}])
    assert compare.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "values differ: reward" in out and "values differ: intrinsic_return" in out
    assert compare.main([str(tmp_path / "a"), str(tmp_path / "nowhere")]) == 2
