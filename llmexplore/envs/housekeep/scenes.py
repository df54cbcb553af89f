"""The published Housekeep scenes and their splits (amt_data/splits.yaml), as plain data.

Kept free of heavy imports so that the task table can be built without reading any file.
Short names drop iGibson's ``_int`` suffix and are lower case: ``Pomaria_0_int`` is
``pomaria_0``, ``Rs_int`` is ``rs``.
"""

from __future__ import annotations

SPLITS: tuple[str, ...] = ("train", "val", "test")

#: iGibson scene id -> split, in the order of the published split file
SCENE_SPLITS: dict[str, str] = {
    "Benevolence_2_int": "train",
    "Wainscott_0_int": "train",
    "Beechwood_0_int": "train",
    "Rs_int": "train",
    "Pomaria_1_int": "train",
    "Pomaria_0_int": "train",
    "Pomaria_2_int": "train",
    "Wainscott_1_int": "train",
    "Ihlen_1_int": "val",
    "Merom_1_int": "val",
    "Benevolence_1_int": "test",
    "Ihlen_0_int": "test",
    "Beechwood_1_int": "test",
    "Merom_0_int": "test",
}

#: a fixed index per scene, used in episode stats (which must be numbers)
SCENE_INDEX: dict[str, int] = {scene: i for i, scene in enumerate(SCENE_SPLITS)}


def short_name(scene: str) -> str:
    """``Pomaria_0_int`` -> ``pomaria_0``."""
    return scene.removesuffix("_int").lower()


SHORT_NAMES: dict[str, str] = {short_name(s): s for s in SCENE_SPLITS}


def episode_file(scene: str) -> str:
    """Path of a scene's episode file relative to the Housekeep data folder."""
    return f"episodes/{SCENE_SPLITS[scene]}/{scene}.json.gz"


def scenes_of_split(split: str) -> tuple[str, ...]:
    """iGibson ids of a split's scenes in the split file's order; empty for an unknown split."""
    return tuple(s for s, sp in SCENE_SPLITS.items() if sp == split)
