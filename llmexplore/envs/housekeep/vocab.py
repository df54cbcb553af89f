"""Category ids shared by observations, captions and the policy network.

Ids come from the human-annotation file, so they are the same for every scene and every
process: object id = 1 + the object's column in ``data.npy``; room and receptacle ids
follow the sorted annotated room types and receptacle categories, then the furniture
categories iGibson scenes contain that no annotator was asked about (doors, pictures, ...),
then one catch-all per kind for categories of scenes we have not seen. Id 0 means "none".

Observation sizes are fixed caps, so that one observation space serves every scene
(sample-factory needs fixed-size arrays); the loader rejects data that exceeds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

#: rooms in a house, receptacles in a room, objects in an episode (the published episodes
#: have at most 8, 22 and 10)
MAX_ROOMS = 12
MAX_RECEPTACLES = 32
MAX_OBJECTS = 10
#: upper bounds of the id ranges in the observation space (embedding tables are this size + 1)
OBJECT_ID_HIGH = 511
RECEPTACLE_ID_HIGH = 127
ROOM_ID_HIGH = 31

#: scene furniture without annotations: a valid place to put things, never a correct one
UNANNOTATED_RECEPTACLES: tuple[str, ...] = (
    "cushion", "door", "floor_lamp", "guitar", "heater", "mirror", "monitor", "picture", "plant",
    "range_hood", "shower", "standing_tv", "towel_rack", "trash_can", "wall_mounted_tv", "window",
)
#: scene categories that are an annotated category under another name. Housekeep's own
#: goal matching treats a "bottom cabinet no top" as a bottom cabinet (by substring).
RECEPTACLE_ALIASES: dict[str, str] = {"bottom_cabinet_no_top": "bottom_cabinet"}
OTHER_ROOM = "room"
OTHER_RECEPTACLE = "receptacle"


def display(name: str) -> str:
    """``coffee_table`` -> ``coffee table``."""
    return name.replace("_", " ")


def normalize(name: str) -> str:
    """``Coffee Table`` or ``coffee table`` -> ``coffee_table``."""
    return "_".join(name.strip().lower().split())


@dataclass(frozen=True)
class Vocabulary:
    objects: tuple[str, ...]
    rooms: tuple[str, ...]
    receptacles: tuple[str, ...]
    _object_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _room_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _receptacle_ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_object_ids", {n: i + 1 for i, n in enumerate(self.objects)})
        object.__setattr__(self, "_room_ids", {n: i + 1 for i, n in enumerate(self.rooms)})
        object.__setattr__(self, "_receptacle_ids", {n: i + 1 for i, n in enumerate(self.receptacles)})

    @classmethod
    def build(cls, objects: Sequence[str], annotated_rooms: Sequence[str],
              annotated_receptacles: Sequence[str]) -> "Vocabulary":
        """Ids for an annotation file: objects in column order; rooms and receptacles
        sorted, then the unannotated scene furniture, then a catch-all of each kind."""
        rooms = tuple(sorted(set(annotated_rooms))) + (OTHER_ROOM,)
        annotated = sorted(set(annotated_receptacles))
        extra = [r for r in UNANNOTATED_RECEPTACLES if r not in annotated]
        receptacles = tuple(annotated + extra) + (OTHER_RECEPTACLE,)
        return cls(tuple(objects), rooms, receptacles)

    # -- names to ids ---------------------------------------------------------------------------
    def object_id(self, name: str) -> int:
        """0 for a name the annotations do not know."""
        return self._object_ids.get(name, 0)

    def room_id(self, room_type: str) -> int:
        """Id of a room type; one the annotations lack gets the catch-all ``room`` id."""
        return self._room_ids.get(room_type, self._room_ids[OTHER_ROOM])

    def receptacle_id(self, category: str) -> int:
        """Id of a receptacle category, aliases resolved; an unknown one gets the catch-all ``receptacle`` id."""
        category = RECEPTACLE_ALIASES.get(category, category)
        return self._receptacle_ids.get(category, self._receptacle_ids[OTHER_RECEPTACLE])

    # -- ids to names ---------------------------------------------------------------------------
    def object_name(self, object_id: int) -> str:
        """Category of an object id, 1 and up (0, none, is not checked: it gives the last name)."""
        return self.objects[object_id - 1]

    def room_name(self, room_id: int) -> str:
        """Room type of a room id, 1 and up (0, none, is not checked: it gives the last name)."""
        return self.rooms[room_id - 1]

    def receptacle_name(self, receptacle_id: int) -> str:
        """Category of a receptacle id, 1 and up (0, none, is not checked: it gives the last name)."""
        return self.receptacles[receptacle_id - 1]

    def check_caps(self, source: str) -> None:
        """The id ranges must fit the observation space; raise DataError otherwise."""
        from llmexplore.errors import DataError

        for kind, names, high in (("object", self.objects, OBJECT_ID_HIGH), ("room", self.rooms, ROOM_ID_HIGH),
                                  ("receptacle", self.receptacles, RECEPTACLE_ID_HIGH)):
            if len(names) > high:
                raise DataError(f"{source} defines {len(names)} {kind} categories; the observation space holds {high}",
                                hint=f"raise {kind.upper()}_ID_HIGH in llmexplore/envs/housekeep/vocab.py")
