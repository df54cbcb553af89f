"""Housekeep data: goals follow the annotation rule, capacity packing, bad files fail with their name.

The checks over all nine shared scenes are in tests/integration/test_housekeep_scenes.py.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from llmexplore.envs.housekeep import annotations, data, scenes
from llmexplore.envs.housekeep.packing import fits
from llmexplore.errors import DataError
from tests.conftest import SHARED_DATA


@pytest.fixture(scope="module")
def root() -> Path:
    shared = SHARED_DATA / "housekeep"
    if not shared.is_dir():
        pytest.skip("../shared/data/housekeep is not beside this checkout")
    return shared


@pytest.fixture(scope="module")
def raw_annotations(root):
    return np.load(root / annotations.ANNOTATION_FILE, allow_pickle=True).item()


def test_correct_placement_is_six_of_ten_positive_ranks(root, raw_annotations):
    ann = annotations.load_annotations(root)
    ranks = raw_annotations["ranks"]
    rng = np.random.default_rng(0)
    checked = {True: 0, False: 0}
    for _ in range(3000):
        row, col = int(rng.integers(ranks.shape[0])), int(rng.integers(ranks.shape[1]))
        room, receptacle = raw_annotations["room_receptacles"][row].split("|")
        obj = raw_annotations["objects"][col]
        expected = int((ranks[row, col] > 0).sum()) >= 6
        assert ann.is_correct(obj, room, receptacle) == expected
        checked[expected] += 1
    assert checked[True] > 50 and checked[False] > 50


def test_packing():
    assert fits(1.0, 1.0, [])
    assert fits(1.0, 0.5, [(0.5, 0.5), (0.5, 0.5)])
    assert fits(0.5, 1.0, [(1.0, 0.25), (0.25, 1.0)])  # rotated to lie along the long side
    assert not fits(0.5, 0.5, [(0.6, 0.1)])  # longer than the surface in every orientation
    assert not fits(1.0, 1.0, [(0.6, 0.6), (0.6, 0.6)])  # fits by area, not side by side
    assert not fits(1.0, 1.0, [(0.5, 0.5)] * 5)  # more area than the surface


# -- bad input -----------------------------------------------------------------------------------
def _copy_layout(root: Path, tmp: Path, scene: str = "Pomaria_2_int") -> Path:
    (tmp / "amt_data").mkdir(parents=True)
    shutil.copy(root / annotations.ANNOTATION_FILE, tmp / annotations.ANNOTATION_FILE)
    target = tmp / scenes.episode_file(scene)
    target.parent.mkdir(parents=True)
    return target


def _write_episodes(path: Path, episodes) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"episodes": episodes}, fh)


@pytest.fixture(scope="module")
def one_episode(root):
    with gzip.open(data.scene_path("Pomaria_2_int", root), "rt", encoding="utf-8") as fh:
        return json.load(fh)["episodes"][0]


def test_missing_data_folder_says_where_the_data_comes_from(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMEXPLORE_HOUSEKEEP_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataError) as err:
        annotations.housekeep_root()
    assert "github.com/yashkant/housekeep" in str(err.value) and "LLMEXPLORE_HOUSEKEEP_DATA" in str(err.value)


def test_missing_scene_file_is_named(root, tmp_path):
    _copy_layout(root, tmp_path)
    with pytest.raises(DataError) as err:
        data.load_scene("Pomaria_2_int", tmp_path)
    assert "Pomaria_2_int.json.gz" in str(err.value) and "github.com/yashkant/housekeep" in str(err.value)


def test_malformed_annotation_file_is_named(root, tmp_path):
    (tmp_path / "amt_data").mkdir()
    bad = tmp_path / annotations.ANNOTATION_FILE
    bad.write_bytes(b"not a numpy file")
    with pytest.raises(DataError, match="data.npy"):
        annotations.load_annotations(tmp_path)
    np.save(bad, np.zeros((3, 4)))
    with pytest.raises(DataError, match="data.npy"):
        annotations.load_annotations(tmp_path)


def test_truncated_episode_file_is_named(root, tmp_path):
    target = _copy_layout(root, tmp_path)
    target.write_bytes(data.scene_path("Pomaria_2_int", root).read_bytes()[:5000])
    with pytest.raises(DataError, match="Pomaria_2_int.json.gz"):
        data.load_scene("Pomaria_2_int", tmp_path)


@pytest.mark.parametrize("damage, message", [
    (lambda e: e.pop("start_matrix"), "lacks"),
    (lambda e: e.update(start_matrix=e["start_matrix"][:-1]), "shapes"),
    (lambda e: e.update(objs_cats=["unicorn"] + e["objs_cats"][1:]), "unicorn"),
    (lambda e: e.update(recs_packers={}), "recs_packers"),
])
def test_malformed_episode_is_named_with_its_file_and_id(root, tmp_path, one_episode, damage, message):
    target = _copy_layout(root, tmp_path)
    episode = json.loads(json.dumps(one_episode))
    damage(episode)
    _write_episodes(target, [episode])
    with pytest.raises(DataError) as err:
        data.load_scene("Pomaria_2_int", tmp_path)
    assert "Pomaria_2_int.json.gz" in str(err.value) and message in str(err.value)


def test_file_without_episodes_is_named(root, tmp_path):
    target = _copy_layout(root, tmp_path)
    _write_episodes(target, [])
    with pytest.raises(DataError, match="holds no episodes"):
        data.load_scene("Pomaria_2_int", tmp_path)
