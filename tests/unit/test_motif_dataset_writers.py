"""Pair datasets written by one collection at a time and checked when opened (issue 49): a second `motif
collect` on one --out is refused clearly (never a traceback), and a flipped bit in a written array is refused
naming the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llmexplore.cli import main
from llmexplore.errors import DataError
from llmexplore.methods.motif.dataset import DIGEST_FILE, open_pair_dataset
from llmexplore.methods.motif.folder_lock import lock_path
from tests.helpers.pairs import make_dataset, make_pairs

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO))
HOLD = """
import sys
from llmexplore.methods.motif.folder_lock import folder_writer
with folder_writer(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _hold(out: Path, command: str) -> subprocess.Popen:
    """Another process writing ``out`` as ``command`` does, until told to stop."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out), command], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=ENV)
    assert holder.stdout.readline().strip() == "held"
    return holder


def _collect(out: Path) -> list[str]:
    return [sys.executable, "-m", "llmexplore", "motif", "collect", "--pairs", "300", "--envs", "2", "--out",
            str(out)]


def test_a_collection_into_a_folder_another_is_writing_is_refused_naming_it(tmp_path: Path, capsys):
    out = tmp_path / "ds"
    holder = _hold(out, "motif collect")
    try:
        assert main(["motif", "collect", "--pairs", "4", "--envs", "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"another `motif collect` is writing to {out}: process {holder.pid}" in err
        assert not out.exists()  # nothing written beside the holder's work
    finally:
        holder.communicate("done\n", timeout=30)
    assert main(["motif", "collect", "--pairs", "4", "--envs", "1", "--out", str(out)]) == 0  # free again
    assert len(open_pair_dataset(out)) == 4 and not lock_path(out).exists()


def test_two_collections_started_together_one_dataset_one_clear_refusal(tmp_path: Path):
    out = tmp_path / "ds"
    procs = [subprocess.Popen(_collect(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
             for _ in range(2)]
    results = [(p.wait(300), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0, 2], results
    for code, stdout, stderr in results:
        assert "Traceback" not in stderr and "Error:" not in stderr, stderr
        if code == 2:
            assert "another `motif collect` is writing to" in stderr or "already holds a pair dataset" in stderr
        else:
            assert json.loads(stdout.strip().splitlines()[-1])["pairs"] == 300
    assert len(open_pair_dataset(out)) == 300


@pytest.mark.parametrize("array", ["data/message.npy", "data/blstats.npy"])
def test_a_flipped_bit_in_a_written_array_is_refused_naming_the_file(tmp_path: Path, array: str):
    make_dataset(tmp_path / "ds", make_pairs(50, seed=4))
    digests = json.loads((tmp_path / "ds" / DIGEST_FILE).read_text())["files"]
    assert set(digests) == {"data/message.npy", "data/blstats.npy"}
    path = tmp_path / "ds" / array
    raw = bytearray(path.read_bytes())
    raw[-7] ^= 0x04  # one bit of one value: the array still loads and looks plausible
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=f"{path}: its content differs from the sha256"):
        open_pair_dataset(tmp_path / "ds")


def test_a_truncated_array_is_a_clear_error_not_an_eof_traceback(tmp_path: Path):
    make_dataset(tmp_path / "ds", make_pairs(20, seed=5))
    (tmp_path / "ds" / DIGEST_FILE).unlink()  # a dataset of an older version: no digests to catch it first
    path = tmp_path / "ds" / "data" / "message.npy"
    path.write_bytes(b"")  # created, not yet written: what a second collection used to open
    with pytest.raises(DataError, match=f"{path}: not a readable .npy array"):
        open_pair_dataset(tmp_path / "ds")


def test_an_unchanged_dataset_opens_and_labels_written_later_are_not_digested(tmp_path: Path):
    ds = make_dataset(tmp_path / "ds", make_pairs(30, seed=6))
    labels = ds.open_labels("a_msg_defaultgoal_default")
    labels[:5] = 0
    labels.flush()
    del labels
    again = open_pair_dataset(tmp_path / "ds")
    assert np.asarray(again.labels("a_msg_defaultgoal_default"))[:5].tolist() == [0] * 5


def test_a_label_file_created_by_another_chunk_meanwhile_is_never_replaced(tmp_path: Path, monkeypatch):
    """Two annotation chunks started together both find no label file; the one that creates it second must
    use the first's: replacing it would send the first chunk's labels into a file nobody reads."""
    ds = make_dataset(tmp_path / "ds", make_pairs(40, seed=7))
    name = "a_msg_defaultgoal_default"
    first = ds.open_labels(name)  # the first chunk: created the file and labels its slice
    first[:10] = 0
    path = ds.preference_path(name)
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if self == path else real_exists(self))
    second = open_pair_dataset(tmp_path / "ds").open_labels(name)  # checked just before the first created it
    monkeypatch.undo()
    second[30:] = 1
    first.flush()
    second.flush()
    del first, second
    labels = np.asarray(open_pair_dataset(tmp_path / "ds").labels(name))
    assert labels[:10].tolist() == [0] * 10 and labels[30:].tolist() == [1] * 10  # the old code lost the first
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left


def test_a_reward_model_training_into_a_folder_another_is_writing_is_refused_naming_it(tmp_path: Path, capsys):
    from llmexplore.lm.cache import CachedLM, LMCache
    from llmexplore.lm.oracle import OracleLM
    from llmexplore.methods.motif.annotate import annotate_pairs

    ds = make_dataset(tmp_path / "ds", make_pairs(200, seed=9))
    report = annotate_pairs(ds, CachedLM(OracleLM(), LMCache()), annotator="o")
    annotation = Path(report.labels_file).stem
    out = tmp_path / "reward"
    args = ["motif", "train-reward", "--dataset", str(tmp_path / "ds"), "--annotation", annotation, "--out", str(out),
            "--epochs", "1", "--batch-size", "64"]
    holder = _hold(out, "motif train-reward")
    try:
        assert main(args) == 2  # the old code trained into the folder beside the other
        assert f"another `motif train-reward` is writing to {out}: process {holder.pid}" in capsys.readouterr().err
        assert not out.exists()
    finally:
        holder.communicate("done\n", timeout=30)
    assert main(args) == 0 and not lock_path(out).exists()
