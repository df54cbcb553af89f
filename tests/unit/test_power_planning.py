"""results/nethack-1m/power.py: the seeds-per-arm arithmetic against hand-computed figures, and the
script's table rows on the committed NetHack 1M records."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from llmexplore.errors import DataError

SCRIPT = Path(__file__).resolve().parents[2] / "results" / "nethack-1m" / "power.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("nethack_power", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


power = _load_script()


def test_seeds_per_arm_matches_the_normal_formula_by_hand():
    # z_0.975 = 1.959964, z_0.80 = 0.841621; (1.959964 + 0.841621)^2 = 7.848879
    # d = 0.5: 2 * 7.848879 / 0.25 = 62.791 -> 63 per arm; d = 1: 15.698 -> 16 per arm
    assert power.seeds_per_arm(0.5) == pytest.approx(62.791, abs=1e-3)
    assert power.seeds_per_arm(-1.0) == pytest.approx(15.698, abs=1e-3)
    # alpha 0.01, power 0.9: (2.575829 + 1.281552)^2 = 14.879387; d = 1 -> 29.759
    assert power.seeds_per_arm(1.0, alpha=0.01, power=0.9) == pytest.approx(29.759, abs=1e-3)
    assert power.seeds_per_arm(0.0) == math.inf


def test_exact_t_test_needs_the_textbook_count():
    # Cohen's tables: a medium effect (d = 0.5) needs 64 per group, a large one (d = 0.8) 26
    assert power.t_test_seeds_per_arm(0.5) == 64
    assert power.t_test_seeds_per_arm(0.8) == 26


@pytest.mark.parametrize("kwargs", [{"alpha": 0.0}, {"alpha": 1.0}, {"alpha": math.nan}, {"power": 1.5},
                                    {"effect_size": math.inf}])
def test_seeds_per_arm_refuses_values_out_of_range(kwargs):
    args = {"effect_size": 0.5, **kwargs}
    with pytest.raises(ValueError, match="must be"):
        power.seeds_per_arm(**args)


def test_pooled_sd_by_hand():
    # none's and ONI-retrieval's progression: squares 2 * 0.095^2 + 2 * 0.08^2 = 0.03085 over 2 df
    sd, dof = power.pooled_sd([[0.50, 0.31], [0.22, 0.38]])
    assert dof == 2
    assert sd == pytest.approx(math.sqrt(0.03085 / 2))
    with pytest.raises(ValueError, match="two finite values"):
        power.pooled_sd([[1.0]])


def test_sd_interval_of_two_degrees_of_freedom():
    # chi-square with 2 df: quantiles -2 ln(1 - p), 7.3778 and 0.050636 -> 0.5207 and 6.2849 times the s.d.
    low, high = power.sd_interval(1.0, 2)
    assert low == pytest.approx(math.sqrt(2 / 7.3778), rel=1e-4)
    assert high == pytest.approx(math.sqrt(2 / 0.050636), rel=1e-4)


def test_per_episode_sd_from_bin_means():
    # two bins of 4 episodes, means 1 and 3 around 2: 4 * 1 + 4 * 1 = 8 over 1 df; empty bins are skipped
    sd, dof = power.per_episode_sd([(4, 1.0), (4, 3.0), (0, None)])
    assert (sd, dof) == (pytest.approx(math.sqrt(8)), 1)


def test_committed_records_give_the_readme_row_for_oni_against_none():
    grid = power.load_grid(power.RECORDS)
    assert len(grid.arms) == 7 and all(len(seeds) == 2 for seeds in grid.arms.values())
    rows = {(row[0], row[1]): row for row in power.seed_rows(grid)}
    oni = rows[("progression", "oni-retrieval")]
    assert oni[4] == "-0.108"  # 0.297 - 0.406, the means of the two seeds
    assert (oni[7], oni[9]) == ("21", "13")  # seeds per arm with the pair's s.d. and with the grid's


def test_load_grid_refuses_a_folder_without_records(tmp_path):
    with pytest.raises(DataError, match="no run records"):
        power.load_grid(tmp_path)


def test_main_names_a_missing_records_folder(tmp_path, capsys):
    assert power.main(["--records", str(tmp_path / "absent")]) == 1
    assert "is not a folder" in capsys.readouterr().err
