"""What differs between the NLE releases llmexplore supports (1.0.0 and 1.3.0), in one place.

NLE 1.3.0 keeps 1.0.0's observation keys, actions, blstats layout, constants and reset/step
signatures. Two things differ for us: ``NLE.seed`` returns four seeds, ``(core, disp, reseed, lgen)``
(1.0.0: three; ``lgen`` seeds a separate level generator, off when None), and the module constant
``nethack.NLE_ALLOW_SEEDING`` is gone (seeding is always allowed; llmexplore never read it).
Everything else of NLE is used as it is. Every run record holds NLE's version (``nle`` among its versions), and a leaderboard refuses to
mix two (benchmarks/results/game_versions.py).
"""

from __future__ import annotations

from typing import Any

import nle

#: the installed NLE release, as records state it
NLE_VERSION: str = getattr(nle, "__version__", "unknown")


def core_disp_reseed(seeds: tuple[Any, ...]) -> tuple[int, int, bool]:
    """The (core, disp, reseed) of what ``NLE.seed`` returned: three seeds on NLE 1.0.0, four on 1.3.0
    (its level-generator seed, which llmexplore leaves unset, comes last)."""
    if len(seeds) not in (3, 4):
        raise ValueError(f"NLE {NLE_VERSION} returned {len(seeds)} seeds, "
                         "expected (core, disp, reseed[, lgen])")
    core, disp, reseed = seeds[:3]
    return int(core), int(disp), bool(reseed)
