"""Reading and checking Housekeep's published data: episode files (the annotations: ``annotations.py``).

Layout of the data folder (``settings.data_path("housekeep")``)::

    amt_data/data.npy                    ranks[room|receptacle, object, annotator], with the
                                         object and room|receptacle names
    episodes/{train,val,test}/<Scene>_int.json.gz   {"episodes": [...]}, one file per scene

Every problem with a file (missing, unreadable, wrong shape, names the annotations do not
know) is raised as one DataError naming the file (and the episode), before any training.
Parsed files are cached per process, so the many envs of one rollout worker share them.
"""

from __future__ import annotations

import functools
import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from llmexplore.envs.housekeep import scenes as scene_table
from llmexplore.envs.housekeep.annotations import SOURCE_HINT, Annotations, file_key, housekeep_root
# the oracle's placement rules import it from here, and their file is frozen by content (lm/oracle/versions.py)
from llmexplore.envs.housekeep.annotations import load_annotations  # noqa: F401
from llmexplore.envs.housekeep.packing import fits
from llmexplore.envs.housekeep.vocab import (
    MAX_OBJECTS,
    MAX_RECEPTACLES,
    MAX_ROOMS,
    RECEPTACLE_ALIASES,
)
from llmexplore.errors import DataError

NO_ROOM = "None"  # the room of fixtures outside every room (doors, windows) in episode files


# -- episodes --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class EpisodeLayout:
    """One published episode, reduced to what the symbolic task needs.

    Receptacles are those inside a room (fixtures outside every room, such as doors and
    windows, are dropped), ordered as in the file, which groups them by room and sorts them
    by category. Objects keep the file's order; the env shuffles them per episode because
    the generator wrote the misplaced ones first.
    """

    scene: str
    episode_id: int
    room_names: tuple[str, ...]  # room instances, e.g. ("bathroom_0", "bedroom_0", "bedroom_1")
    room_types: tuple[str, ...]  # e.g. ("bathroom", "bedroom", "bedroom")
    room_type_ids: np.ndarray  # [rooms]
    room_receptacles: tuple[np.ndarray, ...]  # receptacle indices of each room, in slot order
    rec_room: np.ndarray  # [receptacles] room index
    rec_slot: np.ndarray  # [receptacles] position in its room
    rec_category: tuple[str, ...]  # canonical category (aliases resolved)
    rec_source_category: tuple[str, ...]  # as the episode file names it
    rec_category_ids: np.ndarray
    rec_size: np.ndarray  # [receptacles, 2] surface width and depth (m)
    obj_key: tuple[str, ...]
    obj_category: tuple[str, ...]
    obj_category_ids: np.ndarray
    obj_footprint: np.ndarray  # [objects, 2] (m)
    start: np.ndarray  # [objects] receptacle index of the start placement
    start_room: int  # the room whose receptacles are nearest the agent's start position
    correct: np.ndarray  # [receptacles, objects] bool, from the annotations
    published_goal: np.ndarray  # [receptacles, objects] bool, the file's end_matrix (for checks)

    @property
    def num_objects(self) -> int:
        """Objects in the episode (1 to MAX_OBJECTS)."""
        return len(self.obj_key)

    @functools.cached_property
    def correct_at_start(self) -> np.ndarray:
        """[objects] bool: the object starts on a correct receptacle, by
        the annotations (``correct``), whichever goals the env plays."""
        return self.correct[self.start, np.arange(self.num_objects)]

    @functools.cached_property
    def eligible(self) -> bool:
        """Every object misplaced at the start has at least one correct receptacle here."""
        return bool(self.correct[:, ~self.correct_at_start].any(axis=0).all())

    def room_display_names(self) -> tuple[str, ...]:
        """Room labels as captions write them, in room order (``bedroom 1`` and ``bedroom 2`` for a pair)."""
        return display_room_names(self.room_types)


def display_room_names(room_types: Sequence[str]) -> tuple[str, ...]:
    """``bedroom``, or ``bedroom 1`` and ``bedroom 2`` when a house has two."""
    counts: dict[str, int] = {}
    for t in room_types:
        counts[t] = counts.get(t, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for t in room_types:
        seen[t] = seen.get(t, 0) + 1
        out.append(t.replace("_", " ") + (f" {seen[t]}" if counts[t] > 1 else ""))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class SceneData:
    scene: str
    path: str
    episodes: tuple[EpisodeLayout, ...]

    @property
    def index(self) -> int:
        """The scene's fixed number in episode stats (``scenes.SCENE_INDEX``); -1 for an unpublished scene."""
        return scene_table.SCENE_INDEX.get(self.scene, -1)


def scene_path(scene: str, root: Path | None = None) -> Path:
    """Where a scene's episode file belongs, whether or not it is there; KeyError for an unpublished scene."""
    return (root or housekeep_root()) / scene_table.episode_file(scene)


def load_scene(scene: str, root: Path | None = None) -> SceneData:
    """All episodes of one scene, checked against the annotations."""
    root = root or housekeep_root()
    annotations = load_annotations(root)
    path = scene_path(scene, root)
    key = file_key(path, f"Housekeep episode file of scene {scene} ({scene_table.SCENE_SPLITS[scene]} split)")
    return _load_scene(scene, *key, annotations)


@functools.lru_cache(maxsize=16)
def _load_scene(scene: str, path: str, _mtime: int, _size: int, annotations: Annotations) -> SceneData:
    hint = f"download {Path(path).name} again. {SOURCE_HINT}"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            content = json.load(fh)
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        raise DataError(f"cannot read Housekeep episode file {path}: {exc}", hint=hint) from None
    episodes = content.get("episodes") if isinstance(content, dict) else None
    if not isinstance(episodes, list) or not episodes:
        raise DataError(f"{path} holds no episodes (expected {{\"episodes\": [...]}})", hint=hint)
    layouts = tuple(_compile(scene, path, i, raw, annotations, hint) for i, raw in enumerate(episodes))
    return SceneData(scene, path, layouts)


_EPISODE_KEYS = ("episode_id", "start_matrix", "end_matrix", "objs_keys", "objs_cats", "recs_keys", "recs_cats",
                 "recs_packers")


def _compile(scene: str, path: str, index: int, raw: Any, annotations: Annotations, hint: str) -> EpisodeLayout:
    """One episode of a file as an ``EpisodeLayout``, every problem a DataError naming the episode.

    The steps below run in this order so that each one may rely on what the earlier ones checked.
    """
    where = _episode_where(raw, path, index, hint)
    obj_keys, obj_cats, rec_keys, rec_cats = _names(raw, annotations, where, hint)
    start_all, end_all = _placement_matrices(raw, (len(rec_keys), len(obj_keys)), where, hint)
    rooms = _rooms(rec_keys, where, hint)
    keep = rooms.keep
    categories = tuple(RECEPTACLE_ALIASES.get(rec_cats[i], rec_cats[i]) for i in keep)
    start = _start_receptacles(start_all, keep, obj_keys, where, hint)
    sizes, footprints = _geometry(raw["recs_packers"], [rec_keys[i] for i in keep], obj_keys, where, hint)
    start_room = _start_room(raw, keep, rooms.rec_room, where, hint)
    correct = _correct_placements(annotations, [rooms.types[r] for r in rooms.rec_room], categories, obj_cats)
    vocab = annotations.vocabulary
    return EpisodeLayout(
        scene=scene,
        episode_id=int(raw["episode_id"]),
        room_names=rooms.names,
        room_types=rooms.types,
        room_type_ids=np.array([vocab.room_id(t) for t in rooms.types], dtype=np.int16),
        room_receptacles=rooms.receptacles,
        rec_room=rooms.rec_room,
        rec_slot=rooms.rec_slot,
        rec_category=categories,
        rec_source_category=tuple(rec_cats[i] for i in keep),
        rec_category_ids=np.array([vocab.receptacle_id(c) for c in categories], dtype=np.int16),
        rec_size=sizes,
        obj_key=tuple(obj_keys),
        obj_category=tuple(obj_cats),
        obj_category_ids=np.array([vocab.object_id(c) for c in obj_cats], dtype=np.int16),
        obj_footprint=footprints,
        start=start,
        start_room=start_room,
        correct=correct,
        published_goal=end_all[keep] > 0.5,
    )


def _episode_where(raw: Any, path: str, index: int, hint: str) -> str:
    """How errors name the episode: by its id once it is known to be an object with every key we read,
    before that by its position in the file."""
    where = f"{path}, episode #{index}"
    if not isinstance(raw, dict):
        raise DataError(f"{where} is not an object", hint=hint)
    missing = [k for k in _EPISODE_KEYS if k not in raw]
    if missing:
        raise DataError(f"{where} lacks {missing}", hint=hint)
    return f"{path}, episode {raw['episode_id']}"


def _names(raw: dict, annotations: Annotations, where: str,
           hint: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """Object and receptacle keys and categories. Every object category must be annotated: an object
    nobody judged has no correct receptacle, and the task could not be scored."""
    obj_keys, obj_cats = [str(k) for k in raw["objs_keys"]], [str(c) for c in raw["objs_cats"]]
    rec_keys, rec_cats = [str(k) for k in raw["recs_keys"]], [str(c) for c in raw["recs_cats"]]
    if len(obj_keys) != len(obj_cats) or len(rec_keys) != len(rec_cats):
        raise DataError(f"{where}: objs_keys/objs_cats or recs_keys/recs_cats differ in length", hint=hint)
    if not 0 < len(obj_keys) <= MAX_OBJECTS:
        raise DataError(f"{where}: {len(obj_keys)} objects; this task supports 1 to {MAX_OBJECTS}", hint=hint)
    unknown = sorted({c for c in obj_cats if annotations.column(c) is None})
    if unknown:
        raise DataError(f"{where}: object categories {unknown} are not in the annotations", hint=hint)
    return obj_keys, obj_cats, rec_keys, rec_cats


def _placement_matrices(raw: dict, shape: tuple[int, int], where: str,
                        hint: str) -> tuple[np.ndarray, np.ndarray]:
    """The file's start and goal placements, [receptacles, objects]; the start must put each object on
    exactly one receptacle, since the env starts from it."""
    try:
        start_all = np.asarray(raw["start_matrix"], dtype=np.float32)
        end_all = np.asarray(raw["end_matrix"], dtype=np.float32)
    except (TypeError, ValueError):
        raise DataError(f"{where}: start_matrix/end_matrix are not numeric matrices", hint=hint) from None
    if start_all.shape != shape or end_all.shape != shape:
        raise DataError(f"{where}: start/end matrices have shapes {start_all.shape}/{end_all.shape}, expected "
                        f"{shape} (receptacles x objects)", hint=hint)
    if not np.all(start_all.sum(axis=0) == 1) or not np.isin(start_all, (0, 1)).all():
        raise DataError(f"{where}: start_matrix must put every object on exactly one receptacle", hint=hint)
    return start_all, end_all


@dataclass(frozen=True)
class _Rooms:
    """The receptacles the task keeps (those inside a room), grouped by room."""

    keep: list[int]  # file indices of the kept receptacles, in their new order
    names: tuple[str, ...]
    types: tuple[str, ...]
    rec_room: np.ndarray  # [kept receptacles] room index
    rec_slot: np.ndarray  # [kept receptacles] position in its room
    receptacles: tuple[np.ndarray, ...]  # per room, its receptacles' new indices


def _rooms(rec_keys: Sequence[str], where: str, hint: str) -> _Rooms:
    """Drop fixtures outside every room and order the rest by room (stable, so the file's order within
    a room stays): the observation has a fixed number of rooms and of receptacle slots per room."""
    keep = []
    room_of: list[str] = []
    for i, key in enumerate(rec_keys):
        room = key.split("-", 1)[0]
        if room != NO_ROOM:
            keep.append(i)
            room_of.append(room)
    names = tuple(sorted(set(room_of)))
    if not 0 < len(names) <= MAX_ROOMS:
        raise DataError(f"{where}: {len(names)} rooms; this task supports 1 to {MAX_ROOMS}", hint=hint)
    room_index = {r: i for i, r in enumerate(names)}
    rec_room = np.array([room_index[r] for r in room_of], dtype=np.int64)
    order = np.argsort(rec_room, kind="stable")
    keep = [keep[i] for i in order]
    rec_room = rec_room[order]
    rec_slot = np.zeros(len(keep), dtype=np.int64)
    receptacles = []
    for r in range(len(names)):
        members = np.flatnonzero(rec_room == r)
        if len(members) > MAX_RECEPTACLES:
            raise DataError(f"{where}: room {names[r]} has {len(members)} receptacles; this task supports "
                            f"{MAX_RECEPTACLES}", hint=hint)
        rec_slot[members] = np.arange(len(members))
        receptacles.append(members)
    return _Rooms(keep, names, tuple(_room_type(r) for r in names), rec_room, rec_slot, tuple(receptacles))


def _start_receptacles(start_all: np.ndarray, keep: Sequence[int], obj_keys: Sequence[str], where: str,
                       hint: str) -> np.ndarray:
    """Each object's start receptacle as a kept index; an object starting on a dropped fixture would
    have no place in the observation."""
    start_rows = start_all.argmax(axis=0)
    position = {old: new for new, old in enumerate(keep)}
    outside = [obj_keys[j] for j, row in enumerate(start_rows) if row not in position]
    if outside:
        raise DataError(f"{where}: objects {outside} start on a fixture outside every room", hint=hint)
    return np.array([position[row] for row in start_rows], dtype=np.int64)


def _correct_placements(annotations: Annotations, rec_room_types: Sequence[str], categories: Sequence[str],
                        obj_cats: Sequence[str]) -> np.ndarray:
    """[receptacles, objects]: the annotators' verdict per placement. A receptacle the annotations do not
    know (a room type and category nobody ranked) is correct for no object."""
    found = (annotations.row(room_type, category) for room_type, category in zip(rec_room_types, categories))
    rows = np.array([-1 if row is None else row for row in found], dtype=np.int64)
    cols = np.array([annotations.column(c) for c in obj_cats], dtype=np.int64)
    correct = np.zeros((len(categories), len(obj_cats)), dtype=bool)
    annotated = rows >= 0
    correct[annotated] = annotations.correct[rows[annotated]][:, cols]
    return correct


def _room_type(room: str) -> str:
    """``bedroom_1`` -> ``bedroom``."""
    head, _, tail = room.rpartition("_")
    return head if head and tail.isdigit() else room


def _start_room(raw: dict, keep: Sequence[int], rec_room: np.ndarray, where: str, hint: str) -> int:
    """Room of the receptacle whose navigation point is nearest the agent's start (floor plane)."""
    try:
        agent = np.asarray(raw["start_position"], dtype=np.float64)[[0, 2]]
        points = np.asarray(raw["nav_recs_pos"], dtype=np.float64)[np.asarray(keep)][:, [0, 2]]
    except (KeyError, TypeError, ValueError, IndexError):
        raise DataError(f"{where}: start_position or nav_recs_pos is missing or malformed", hint=hint) from None
    return int(rec_room[int(np.argmin(((points - agent) ** 2).sum(axis=1)))])


def _geometry(packers: Any, rec_keys: Sequence[str], obj_keys: Sequence[str], where: str,
              hint: str) -> tuple[np.ndarray, np.ndarray]:
    """Receptacle surface sizes and object footprints from the file's bin-packer records."""
    if not isinstance(packers, dict):
        raise DataError(f"{where}: recs_packers is not an object", hint=hint)
    sizes = np.zeros((len(rec_keys), 2), dtype=np.float64)
    footprint: dict[str, tuple[float, float]] = {}
    try:
        for i, key in enumerate(rec_keys):
            packer = packers[key]
            sizes[i] = [float(v) for v in packer["size"]][:2]
        for packer in packers.values():
            for match in packer.get("matches", []):
                rect = match["rect"]
                footprint[str(rect["id"])] = (float(rect["size"][0]), float(rect["size"][1]))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise DataError(f"{where}: recs_packers lacks a receptacle size or footprint ({exc!r})", hint=hint) from None
    missing = [k for k in obj_keys if k not in footprint]
    if missing:
        raise DataError(f"{where}: no footprint for objects {missing} in recs_packers", hint=hint)
    return sizes, np.array([footprint[k] for k in obj_keys], dtype=np.float64)


def start_fits(layout: EpisodeLayout) -> bool:
    """Whether our capacity rule accepts the published start placement (used in checks)."""
    for r in np.unique(layout.start):
        objs = np.flatnonzero(layout.start == r)
        w, d = layout.rec_size[r]
        if not fits(w, d, [tuple(layout.obj_footprint[j]) for j in objs]):
            return False
    return True
