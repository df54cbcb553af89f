"""Housekeep's human annotations: which object belongs on which room's receptacle, by vote.

``amt_data/data.npy`` under the data folder (``settings.data_path("housekeep")``) holds
ranks[room|receptacle, object, annotator] with the object and room|receptacle names; it is
parsed once per process (and again when the file changes) and every problem with it is one
DataError naming the file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmexplore.envs.housekeep.vocab import RECEPTACLE_ALIASES, Vocabulary
from llmexplore.errors import DataError
from llmexplore.settings import data_path

ANNOTATION_FILE = "amt_data/data.npy"
#: Housekeep's rule: an object belongs on a room's receptacle when at least 6 of the 10
#: annotators ranked that placement as correct (rank > 0)
MIN_POSITIVE_VOTES = 6
ANNOTATORS = 10
SOURCE_HINT = ("Housekeep's data (amt_data/ and episodes/, github.com/yashkant/housekeep, MIT) is fetched "
               "with `llmexplore data fetch housekeep` (offline: add --from <folder or URL of a copy>); "
               "or point LLMEXPLORE_HOUSEKEEP_DATA at a folder holding amt_data/ and episodes/")


def housekeep_root() -> Path:
    """The Housekeep data folder, or a DataError that says where the data comes from."""
    return data_path("housekeep")


# -- annotations -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Annotations:
    """The human judgements: who said which object belongs on which room's receptacle."""

    source: str
    objects: tuple[str, ...]
    room_receptacles: tuple[tuple[str, str], ...]  # (room type, receptacle category), one per row
    positive_votes: np.ndarray  # [rows, objects] annotators who ranked the placement correct

    @functools.cached_property
    def _rows(self) -> dict[tuple[str, str], int]:
        return {rr: i for i, rr in enumerate(self.room_receptacles)}

    @functools.cached_property
    def _columns(self) -> dict[str, int]:
        return {o: i for i, o in enumerate(self.objects)}

    @functools.cached_property
    def correct(self) -> np.ndarray:
        """[rows, objects] bool: the placement is correct by Housekeep's rule."""
        return self.positive_votes >= MIN_POSITIVE_VOTES

    @functools.cached_property
    def vocabulary(self) -> Vocabulary:
        """Category ids built from this file's objects, rooms and receptacles (``Vocabulary.build``)."""
        return Vocabulary.build(self.objects, [r for r, _ in self.room_receptacles],
                                [c for _, c in self.room_receptacles])

    def row(self, room_type: str, receptacle: str) -> int | None:
        """Annotation row of a room type's receptacle category, None when nobody was asked."""
        receptacle = RECEPTACLE_ALIASES.get(receptacle, receptacle)
        return self._rows.get((room_type, receptacle))

    def column(self, obj: str) -> int | None:
        """Column of an object category, None when the annotations do not list it."""
        return self._columns.get(obj)

    def votes(self, obj: str, room_type: str, receptacle: str) -> int:
        """Annotators (of 10) who ranked the placement correct; 0
        for an object, room type or receptacle nobody judged."""
        row, col = self.row(room_type, receptacle), self.column(obj)
        return 0 if row is None or col is None else int(self.positive_votes[row, col])

    def is_correct(self, obj: str, room_type: str, receptacle: str) -> bool:
        """Housekeep's rule, at least 6 of 10 votes; False for a placement nobody judged."""
        return self.votes(obj, room_type, receptacle) >= MIN_POSITIVE_VOTES


def load_annotations(root: Path | None = None) -> Annotations:
    """The annotation file under ``root`` (default: the data folder), parsed once per
    process and again when the file changes; DataError when it is missing or malformed."""
    path = (root or housekeep_root()) / ANNOTATION_FILE
    return _load_annotations(*file_key(path, "Housekeep's human annotations"))


def file_key(path: Path, what: str) -> tuple[str, int, int]:
    """(path, mtime, size) of a data file, the key of its per-process cache; DataError when it is missing."""
    try:
        stat = path.stat()
    except OSError:
        raise DataError(f"{what} not found: {path}", hint=SOURCE_HINT) from None
    return str(path), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=4)
def _load_annotations(path: str, _mtime: int, _size: int) -> Annotations:
    hint = f"{path} should be Housekeep's amt_data/data.npy; download it again. {SOURCE_HINT}"
    try:
        # the published file is a pickled dict inside a .npy, so allow_pickle is required
        raw = np.load(path, allow_pickle=True)
        content = raw.item() if raw.dtype == object and raw.shape == () else None
    except Exception as exc:  # unpickling a damaged file can raise almost anything
        raise DataError(f"cannot read {path}: {exc}", hint=hint) from None
    if not isinstance(content, dict) or not {"ranks", "objects", "room_receptacles"} <= set(content):
        raise DataError(f"{path} is not Housekeep's annotation file (expected a dict with ranks, objects, "
                        "room_receptacles)", hint=hint)
    ranks = np.asarray(content["ranks"])
    objects = tuple(str(o) for o in content["objects"])
    pairs = []
    for name in content["room_receptacles"]:
        room, sep, receptacle = str(name).partition("|")
        if not sep:
            raise DataError(f"{path}: room_receptacles entry {name!r} is not 'room|receptacle'", hint=hint)
        pairs.append((room, receptacle))
    if ranks.ndim != 3 or ranks.shape[:2] != (len(pairs), len(objects)) or ranks.shape[2] != ANNOTATORS:
        raise DataError(f"{path}: ranks have shape {ranks.shape}, expected ({len(pairs)}, {len(objects)}, "
                        f"{ANNOTATORS}) (room|receptacles x objects x annotators)", hint=hint)
    if not np.issubdtype(ranks.dtype, np.number):
        raise DataError(f"{path}: ranks are {ranks.dtype}, not numbers", hint=hint)
    if len(set(objects)) != len(objects) or len(set(pairs)) != len(pairs):
        raise DataError(f"{path}: object or room|receptacle names repeat", hint=hint)
    annotations = Annotations(path, objects, tuple(pairs), (ranks > 0).sum(axis=2).astype(np.int16))
    annotations.vocabulary.check_caps(path)
    return annotations
