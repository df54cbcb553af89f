"""The data side of ELLM's Housekeep questions: yes/no placement answers and suggestions.

ELLM asks a language model one question per (object, receptacle) pair — should this object
be stored on this room's receptacle? — and turns the answers into goals: "pick X" for each
visible object whose current receptacle gets a no, "place X on R" for each known receptacle
that gets a yes while X is carried. ``PlacementJudge`` answers from the human annotations
(Housekeep's rule: >= 6 of 10 annotators ranked the placement correct), optionally flipping
answers at a seeded rate to stand in for an imperfect LM. The flips are a fixed function of
(seed, question), because an LM behind a cache also answers the same question the same way.

The LM layer can register ``PlacementJudge`` (or any function with its call signature) as
the answer function of its Housekeep yes/no question kind; ``suggest`` works with either.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Sequence

from llmexplore.envs.housekeep.annotations import Annotations
from llmexplore.envs.housekeep.text import View, pick_goal, place_goal
from llmexplore.envs.housekeep.vocab import RECEPTACLE_ALIASES, normalize
from llmexplore.errors import ConfigError, shown

#: answer(object, receptacle, room) -> should the object be stored there?
AnswerFn = Callable[[str, str, str], "bool | None"]


class PlacementJudge:
    """Answers "should <object> go on <receptacle> in <room>?" from the annotations.

    Names may use spaces or underscores (``coffee table`` / ``coffee_table``); a room may
    carry the number captions give it (``bedroom 2``). A receptacle category nobody
    annotated for that room (a window, a sofa in a bathroom) gets no. Names outside the
    vocabulary raise ConfigError, so a wiring mistake does not pass for a "no".
    """

    def __init__(self, annotations: Annotations, noise: float = 0.0, seed: int = 0):
        if not 0.0 <= noise <= 1.0:
            raise ConfigError(f"noise must be a rate in [0, 1], not {noise}")
        self.annotations = annotations
        self.vocab = annotations.vocabulary
        self.noise = float(noise)
        self.seed = int(seed)

    def __call__(self, obj: str, receptacle: str, room: str) -> bool:
        truth = self.truth(obj, receptacle, room)
        return truth != self._flipped(obj, receptacle, room) if self.noise > 0 else truth

    def truth(self, obj: str, receptacle: str, room: str) -> bool:
        """The annotators' answer, without noise."""
        o, r, t = self._names(obj, receptacle, room)
        return self.annotations.is_correct(o, t, r)

    def votes(self, obj: str, receptacle: str, room: str) -> int:
        """How many of the 10 annotators ranked this placement correct."""
        o, r, t = self._names(obj, receptacle, room)
        return self.annotations.votes(o, t, r)

    def _flipped(self, obj: str, receptacle: str, room: str) -> bool:
        o, r, t = self._names(obj, receptacle, room)
        digest = hashlib.blake2b(f"{self.seed}|{o}|{t}|{r}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") / 2.0**64 < self.noise

    def _names(self, obj: str, receptacle: str, room: str) -> tuple[str, str, str]:
        o = normalize(obj)
        r = normalize(receptacle)
        r = RECEPTACLE_ALIASES.get(r, r)
        t = re.sub(r"_\d+$", "", normalize(room))
        for kind, name, known in (("object", o, self.vocab.objects), ("receptacle", r, self.vocab.receptacles),
                                  ("room", t, self.vocab.rooms)):
            if name not in known:
                close = difflib.get_close_matches(name, known, n=3)
                raise ConfigError(f"unknown Housekeep {kind} {shown(name)}",
                                  hint=("did you mean " + " or ".join(close) + "?") if close else None)
        return o, r, t


@dataclass(frozen=True)
class Suggestion:
    verb: Literal["pick", "place"]
    obj: str
    receptacle: str = ""  # for "place": receptacle category
    room: str = ""  # for "place": room type

    @property
    def text(self) -> str:
        """The goal string; the env reports achieved picks and places in the same words."""
        return pick_goal(self.obj) if self.verb == "pick" else place_goal(self.obj, self.room, self.receptacle)


def suggest(view: View, answer: AnswerFn, known_receptacles: Iterable[tuple[str, str]] | None = None,
            skip: Sequence[str] = ()) -> list[Suggestion]:
    """ELLM's Housekeep goals for one state.

    Carrying X: "place X on R" for every known receptacle R (pairs of room type and
    category; default: those of the current room; ELLM uses every receptacle seen so far in
    the episode) that ``answer`` endorses. Empty-handed: "pick X" for every object in view
    whose current receptacle ``answer`` rejects. An unknown answer (``None``) suggests
    neither. Objects in ``skip`` (e.g. already placed
    as suggested) get no suggestions. Duplicates are dropped; order follows the input.
    """
    out: dict[str, Suggestion] = {}
    if view.held is not None:
        if view.held in skip:
            return []
        pool = list(known_receptacles) if known_receptacles is not None else \
            [(view.room_type, r) for r in view.receptacles]
        for room_type, receptacle in pool:
            belongs = answer(view.held, receptacle, room_type)
            if belongs is not None and belongs:
                s = Suggestion("place", view.held, receptacle, room_type)
                out.setdefault(s.text, s)
    else:
        for placed in view.objects:
            if placed.obj in skip:
                continue
            belongs = answer(placed.obj, placed.receptacle, view.room_type)
            if belongs is not None and not belongs:
                s = Suggestion("pick", placed.obj)
                out.setdefault(s.text, s)
    return list(out.values())


def receptacles_in_view(view: View) -> list[tuple[str, str]]:
    """(room type, category) of the receptacles in view, for accumulating "seen" receptacles."""
    return [(view.room_type, r) for r in view.receptacles]
