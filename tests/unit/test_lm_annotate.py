"""The Motif annotation job: label conventions, chunks, resume, and the CLI's errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmexplore.cli import main
from llmexplore.methods.motif.annotate import annotate_pairs, annotator_name, chunk_slice
from llmexplore.lm.cache import CachedLM, LMCache
from llmexplore.lm.oracle import OracleLM
from llmexplore.envs.nethack.oracle import message_value
from llmexplore.methods.motif.dataset import open_pair_dataset
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.pairs import make_dataset, make_pairs


def expected_label(a: str, b: str, goal: str) -> int:
    if a == b:
        return 2
    va, vb = message_value(a, goal), message_value(b, goal)
    return 2 if abs(va - vb) < 0.25 else (0 if va > vb else 1)


def test_labels_follow_the_conventions(tmp_path: Path):
    pairs = make_pairs(300, seed=1)
    ds = make_dataset(tmp_path / "ds", pairs)
    lm = CachedLM(OracleLM(), LMCache(tmp_path / "c.sqlite3"))
    report = annotate_pairs(ds, lm, goal="gold", batch_size=64)
    labels = np.load(tmp_path / "ds" / "preference" / f"{ORACLE_ANNOTATOR}_msg_gold_default.npy")
    assert labels.dtype == np.uint8 and labels.shape == (300,)
    assert labels.tolist() == [expected_label(a, b, "gold") for a, b in pairs]
    identical = sum(a == b for a, b in pairs)
    assert report.ties_without_call == identical and report.asked_pairs == 300 - identical
    distinct = len({p for p in pairs if p[0] != p[1]})
    assert lm.backend_prompts == distinct  # a pair seen twice is asked once
    assert report.counts["unknown"] == 0 and sum(report.counts.values()) == 300
    assert {0, 1, 2} <= set(labels.tolist())
    # the published reader sees it
    assert f"{ORACLE_ANNOTATOR}_msg_gold_default" in open_pair_dataset(tmp_path / "ds").preference_names()


def test_chunks_cover_the_dataset_and_resume_asks_only_unknown(tmp_path: Path):
    pairs = make_pairs(101, seed=2)
    ds = make_dataset(tmp_path / "ds", pairs)
    lm = CachedLM(OracleLM(), LMCache(tmp_path / "c.sqlite3"))
    reports = [annotate_pairs(ds, lm, chunk=(k, 3), batch_size=10, annotator="t") for k in (2, 0)]
    labels = ds.labels("t_msg_defaultgoal_default")
    lo, hi = chunk_slice(101, (1, 3))
    assert (labels[lo:hi] == 3).all() and (labels[:lo] != 3).all() and (labels[hi:] != 3).all()
    assert sum(r.chunk_pairs for r in reports) == 101 - (hi - lo)
    # forget some labels: a rerun asks exactly those again (from the cache)
    writable = ds.open_labels("t_msg_defaultgoal_default")
    writable[[0, 5, 7]] = 3
    writable.flush()
    del writable
    again = annotate_pairs(ds, lm, chunk=(0, 3), batch_size=10, annotator="t")
    assert again.already_labelled == again.chunk_pairs - 3
    assert again.asked_pairs + again.ties_without_call == 3
    assert again.cache["backend_prompts"] == 0


def test_chunk_bounds():
    assert [chunk_slice(10, (k, 3)) for k in range(3)] == [(0, 3), (3, 6), (6, 10)]
    assert chunk_slice(2, (2, 4)) == (1, 1)
    with pytest.raises(Exception, match="chunk 3 of 3"):
        chunk_slice(10, (3, 3))


def test_annotator_names_are_file_safe():
    assert annotator_name("meta-llama/Meta-Llama-3.1-8B-Instruct") == "meta-llama-3.1-8b-instruct"
    assert "_" not in annotator_name("my_model_v2")


def test_cli_annotates_and_reports(tmp_path: Path, capsys):
    make_dataset(tmp_path / "ds", make_pairs(40, seed=3))
    code = main(["lm", "annotate", str(tmp_path / "ds"), "--goal", "combat", "--version", "reworded", "--quiet",
                 "--cache", str(tmp_path / "c.sqlite3")])
    assert code == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["labels_file"].endswith(f"preference/{ORACLE_ANNOTATOR}_msg_combat_reworded.npy")
    assert report["counts"]["unknown"] == 0 and report["cache"]["misses"] > 0


@pytest.mark.parametrize("extra, message", [
    (["--goal", "treasure"], "unknown Motif goal 'treasure'"),
    (["--version", "fancy"], "no prompt template motif_preference/fancy.txt"),
    (["--chunk", "4/4"], "chunk 4 of 4 does not exist"),
    (["--chunk", "half"], "must look like K/N"),
    (["--lm", "temperature=9"], "invalid LM settings: temperature"),
    (["--backend", "openai"], "needs base_url"),
    (["--lm", "options.speed=3"], "unknown option(s) for the oracle backend: speed"),
])
def test_cli_bad_input_exits_2_with_one_message(tmp_path: Path, capsys, extra, message, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    make_dataset(tmp_path / "ds", make_pairs(5))
    code = main(["lm", "annotate", str(tmp_path / "ds"), "--quiet", "--cache", ":memory:", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_missing_dataset(tmp_path: Path, capsys):
    assert main(["lm", "annotate", str(tmp_path / "none"), "--cache", ":memory:"]) == 2
    assert "is not a pair dataset" in capsys.readouterr().err


def test_captions_end_at_their_first_nul_byte():
    from llmexplore.methods.motif.annotate import _decode_pairs

    block = np.zeros((2, 2, 16), dtype=np.uint8)
    for (row, side), text in {(0, 0): b" You win! ", (0, 1): b"ab\0junk", (1, 0): b"x" * 16}.items():
        block[row, side, :len(text)] = np.frombuffer(text, dtype=np.uint8)
    assert _decode_pairs(block) == [("You win!", "ab"), ("x" * 16, "")]
    assert _decode_pairs(block[::-1]) == [("x" * 16, ""), ("You win!", "ab")]  # a non-contiguous read
