"""NLE 1.0.0 and 1.3.0 both: what differs between them is read in envs/nethack/compat.py."""

from __future__ import annotations

import pytest
from nle.env.tasks import NetHackScore

from llmexplore.envs.nethack.compat import NLE_VERSION, core_disp_reseed


def test_the_installed_nles_seeds_read_as_core_disp_reseed():
    env = NetHackScore()
    try:
        returned = env.seed(11, 22, reseed=False)  # three on NLE 1.0.0, four (lgen last) on 1.3.0
        assert len(returned) == (4 if NLE_VERSION.startswith("1.3") else 3)
        assert core_disp_reseed(returned) == (11, 22, False)
    finally:
        env.close()


def test_either_length_is_read_and_any_other_is_refused():
    assert core_disp_reseed((1, 2, True)) == core_disp_reseed((1, 2, True, None)) == (1, 2, True)
    with pytest.raises(ValueError, match="returned 2 seeds"):
        core_disp_reseed((1, 2))
