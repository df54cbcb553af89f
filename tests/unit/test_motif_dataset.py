"""Pair datasets: the published layout reads like ours; broken ones are refused naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmexplore.envs.nethack.text import encode_message
from llmexplore.errors import DataError
from llmexplore.methods.motif.dataset import open_pair_dataset

CAPTIONS = ["You kill the newt!", "", "It's a wall.", "You see here 3 gold pieces.", "Welcome to experience level 2."]


def make_published(root: Path, n: int = 6) -> Path:
    """The distributed Motif layout: a sequence axis of length 1, 26 blstats, info (N, 2, 1)."""
    rng = np.random.default_rng(0)
    (root / "data").mkdir(parents=True)
    (root / "info").mkdir()
    (root / "preference").mkdir()
    messages = np.stack([[encode_message(CAPTIONS[(2 * i + s) % len(CAPTIONS)]) for s in range(2)] for i in range(n)])
    np.save(root / "data" / "message.npy", messages[:, :, None])
    np.save(root / "data" / "blstats.npy", rng.integers(0, 20, (n, 2, 1, 26)))
    np.save(root / "data" / "tty_chars.npy", rng.integers(32, 127, (n, 2, 1, 24, 80), dtype=np.uint8))
    np.save(root / "data" / "tty_colors.npy", rng.integers(0, 16, (n, 2, 1, 24, 80), dtype=np.int8))
    np.save(root / "data" / "rewards.npy", rng.normal(size=(n, 2, 1)).astype(np.float32))  # an extra array
    np.save(root / "info" / "score.npy", rng.integers(0, 500, (n, 2, 1)))
    np.save(root / "info" / "turns.npy", rng.integers(0, 5000, (n, 2, 1)))
    np.save(root / "preference" / "llama70b_msg_defaultgoal_default.npy", np.array([0, 1, 2, 3, 0, 1][:n], np.uint8))
    return root


def test_published_layout_reads_as_pairs(tmp_path):
    ds = open_pair_dataset(make_published(tmp_path / "motif_dataset"))
    assert len(ds) == 6
    assert ds.messages.shape == (6, 2, 256)
    assert ds.data["blstats"].shape == (6, 2, 26)
    assert ds.data["tty_chars"].shape == (6, 2, 24, 80)
    assert ds.info["score"].shape == (6, 2)
    assert ds.data["rewards"].shape == (6, 2, 1)  # arrays we do not know are kept as they are
    assert ds.captions([0, 1]) == [(CAPTIONS[0], CAPTIONS[1]), (CAPTIONS[2], CAPTIONS[3])]
    assert ds.preference_names() == ["llama70b_msg_defaultgoal_default"]
    assert list(ds.labels("llama70b_msg_defaultgoal_default")) == [0, 1, 2, 3, 0, 1]


@pytest.mark.parametrize(
    "damage, file, problem",
    [
        (lambda r: (r / "data" / "message.npy").unlink(), "data", "missing arrays message.npy"),
        (lambda r: np.save(r / "data" / "blstats.npy", np.zeros((5, 2, 1, 26))), "blstats.npy", "5 pairs"),
        (lambda r: np.save(r / "data" / "tty_chars.npy", np.zeros((6, 2, 24, 79), np.uint8)), "tty_chars.npy",
         "trailing shape"),
        (lambda r: np.save(r / "data" / "message.npy", np.zeros((6, 3, 256), np.uint8)), "message.npy", "(N, 2, ...)"),
        (lambda r: np.save(r / "data" / "message.npy", np.zeros((6, 2, 256), np.int32)), "message.npy", "uint8"),
        (lambda r: np.save(r / "info" / "score.npy", np.zeros((6, 3))), "score.npy", "expected shape (6, 2)"),
        (lambda r: (r / "info" / "turns.npy").write_bytes(b"not numpy"), "turns.npy", "not a readable"),
        (lambda r: np.save(r / "preference" / "x_msg_g_v.npy", np.array([0, 1, 2, 3, 4, 0], np.uint8)),
         "x_msg_g_v.npy", "out of range"),
        (lambda r: np.save(r / "preference" / "x_msg_g_v.npy", np.zeros(5, np.uint8)), "x_msg_g_v.npy", "shape (5,)"),
        (lambda r: np.save(r / "preference" / "x_msg_g_v.npy", np.full(6, 0.5)), "x_msg_g_v.npy", "dtype float64"),
    ],
)
def test_broken_datasets_are_refused_naming_file_and_problem(tmp_path, damage, file, problem):
    root = make_published(tmp_path / "d")
    damage(root)
    with pytest.raises(DataError) as err:
        open_pair_dataset(root)
    assert file in str(err.value) and problem in str(err.value)


def test_not_a_dataset(tmp_path):
    with pytest.raises(DataError, match="no data/ folder"):
        open_pair_dataset(tmp_path)


def test_unknown_preference_name_lists_available(tmp_path):
    ds = open_pair_dataset(make_published(tmp_path / "d"))
    with pytest.raises(DataError, match="available: llama70b_msg_defaultgoal_default"):
        ds.labels("nope")


def test_reward_training_reads_the_published_layout(tmp_path):
    from llmexplore.methods.motif.training import RewardTrainingOptions, train_reward_model

    root = make_published(tmp_path / "motif_dataset")
    manifest = train_reward_model(root, "llama70b_msg_defaultgoal_default", tmp_path / "rm",
                                  RewardTrainingOptions(epochs=1, threads=1))
    config = json.loads((tmp_path / "rm" / "config.json").read_text())
    assert config["data"]["annotated_pairs"] == 5  # the unknown (3) pair is dropped
    assert config["data"]["label_counts"] == {"first": 2, "second": 2, "tie": 1}
    assert config["data"]["train_pairs"] + config["data"]["val_pairs"] == 5
    assert manifest["annotation"] == "llama70b_msg_defaultgoal_default"
    # the published layout has no collection record; the manifest is strict JSON (no NaN where nothing agrees)
    assert manifest["collection"] is None
    json.loads((tmp_path / "rm" / "manifest.json").read_text(),
               parse_constant=lambda c: pytest.fail(f"manifest.json holds {c}, which strict JSON readers refuse"))


def test_unknown_labels_are_dropped_as_published_or_counted_as_ties_on_request(tmp_path):
    """The published pair dataset keeps only labels other than unknown; ``unknown="tie"`` keeps them as ties."""
    from llmexplore.methods.motif.training import RewardTrainingOptions, prepare_data

    root = make_published(tmp_path / "motif_dataset")
    name = "llama70b_msg_defaultgoal_default"
    dropped = prepare_data(root, name, RewardTrainingOptions())
    assert len(dropped.labels) == 5 and 3 not in dropped.labels.tolist()
    assert dropped.fingerprint["unknown_labels"] == 1 and dropped.fingerprint["unknown_as"] == "drop"
    tied = prepare_data(root, name, RewardTrainingOptions(unknown="tie"))
    assert len(tied.labels) == 6 and tied.fingerprint["label_counts"] == {"first": 2, "second": 2, "tie": 2}
    assert sorted(tied.labels.tolist()) == [0, 0, 1, 1, 2, 2]


def test_temporary_files_left_by_a_crash_are_not_annotations(tmp_path, monkeypatch):
    """A crash while creating a label file leaves its temporary file in preference/; it is never listed
    as an annotation, so opening the dataset neither checks it nor fails on it."""
    from llmexplore.methods.motif import dataset as dataset_module

    root = make_published(tmp_path / "d")
    pref = root / "preference"
    (pref / "llama70b_msg_gold_default.tmp.npy").write_bytes(b"\x93NUMPY\x01")  # an earlier version's, torn
    (pref / "._llama70b_msg_defaultgoal_default.npy").write_bytes(b"\x00\x05")  # hidden: no annotation name
    ds = open_pair_dataset(root)
    assert ds.preference_names() == ["llama70b_msg_defaultgoal_default"]

    def crash(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(dataset_module.os, "fsync", crash)
    with pytest.raises(OSError):
        ds.open_labels("ours_msg_combat_default")
    monkeypatch.undo()
    assert len(list(pref.iterdir())) == 4  # the crash left its temporary file
    assert open_pair_dataset(root).preference_names() == ["llama70b_msg_defaultgoal_default"]
    labels = ds.open_labels("ours_msg_combat_default")  # and the next try writes it as if nothing happened
    assert labels.tolist() == [3] * 6
    assert open_pair_dataset(root).preference_names() == ["llama70b_msg_defaultgoal_default",
                                                          "ours_msg_combat_default"]


def test_a_dataset_written_after_a_crashed_write_holds_none_of_its_arrays(tmp_path):
    from llmexplore.methods.motif.dataset import write_pair_dataset

    root = tmp_path / "pairs"
    stale = tmp_path / "pairs.partial" / "data"
    stale.mkdir(parents=True)
    np.save(stale / "tty_chars.npy", np.zeros((9, 2, 24, 80), np.uint8))  # a crashed write of 9 pairs
    messages = np.stack([[encode_message(CAPTIONS[s]) for s in range(2)] for _ in range(4)])
    ds = write_pair_dataset(root, {"message": messages}, {"score": np.zeros((4, 2), np.int64)})
    assert len(ds) == 4 and sorted(ds.data) == ["message"] and not (tmp_path / "pairs.partial").exists()
