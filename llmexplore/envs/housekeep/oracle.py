"""The embedded oracle's Housekeep knowledge: does an object belong on a receptacle (ELLM's yes/no
question, the ``housekeep_placement`` kind the family declares in ``EnvFamily.oracle_answers``)?

The answer comes from Housekeep's human annotations (an object belongs where at least 6 of
10 annotators put it), through ``envs.housekeep.placements.PlacementJudge``; the oracle's
``placement_noise`` option flips a seeded share of answers, as an imperfect LM would get
some wrong, always the same ones for the same question. Data is loaded on the first
question, so importing the oracle stays cheap.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.envs.housekeep.placements import PlacementJudge
    from llmexplore.lm.oracle import OracleQuery

_judges: dict[tuple[float, int], "PlacementJudge"] = {}
_lock = threading.Lock()


def judge(noise: float = 0.0, seed: int = 0) -> "PlacementJudge":
    """One judge per (noise, seed), built from the annotation file on first use."""
    key = (float(noise), int(seed))
    with _lock:
        found = _judges.get(key)
        if found is None:
            from llmexplore.envs.housekeep.data import load_annotations
            from llmexplore.envs.housekeep.placements import PlacementJudge

            found = _judges[key] = PlacementJudge(load_annotations(), noise=key[0], seed=key[1])
    return found


def placement_answer(query: "OracleQuery") -> str:
    """A one-sentence reason, then the declared answer line."""
    obj, receptacle, room = query.fields["object"], query.fields["receptacle"], query.fields["room"]
    options = query.options or {}
    yes = judge(options.get("placement_noise", 0.0), options.get("placement_seed", 0))(obj, receptacle, room)
    if yes:
        reason = f"A {obj} is commonly kept on the {receptacle} in a {room}, so it is in a tidy place there."
    else:
        reason = f"People would not usually keep a {obj} on the {receptacle} in a {room}; it belongs elsewhere."
    return f"{reason}\nAnswer: {'yes' if yes else 'no'}"
