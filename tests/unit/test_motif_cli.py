"""`motif annotate` and `motif collect --policy`: argument handling and errors (fast parts)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmexplore.cli import main
from llmexplore.methods.motif.annotate import annotator_name
from llmexplore.lm.backends import make_lm
from llmexplore.lm.config import LMConfig
from llmexplore.lm.oracle import ORACLE_VERSION
from llmexplore.methods.motif.dataset import open_pair_dataset
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.pairs import make_dataset, make_pairs


def last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_oracle_annotator_name_is_fixed_by_its_rule_version(tmp_path: Path):
    """Label files of the oracle are named after its rule version only, not after options or prompt folders."""
    for config in (LMConfig(cache=":memory:"), LMConfig(cache=":memory:", options={"latency_s": 0.0}),
                   LMConfig(cache=str(tmp_path / "c.sqlite3"), prompts="configs/prompts", temperature=0.5)):
        with make_lm(config) as lm:
            assert annotator_name(lm.model_id) == f"llmexplore-oracle-{ORACLE_VERSION}" == ORACLE_ANNOTATOR


def test_motif_annotate_runs_the_lm_annotation_job(tmp_path: Path, capsys):
    pairs = make_pairs(60, seed=4)
    make_dataset(tmp_path / "a", pairs)
    make_dataset(tmp_path / "b", pairs)
    assert main(["motif", "annotate", "--dataset", str(tmp_path / "a"), "--goal", "gold", "--version", "reworded",
                 "--quiet", "--cache", ":memory:"]) == 0
    report = last_json(capsys.readouterr().out)
    assert report["annotation"] == f"{ORACLE_ANNOTATOR}_msg_gold_reworded"
    assert report["counts"]["unknown"] == 0 and sum(report["counts"].values()) == 60
    assert main(["lm", "annotate", str(tmp_path / "b"), "--goal", "gold", "--version", "reworded", "--quiet",
                 "--cache", ":memory:"]) == 0
    assert last_json(capsys.readouterr().out)["annotation"] == report["annotation"]
    ours = open_pair_dataset(tmp_path / "a").labels(report["annotation"])
    theirs = open_pair_dataset(tmp_path / "b").labels(report["annotation"])
    assert np.array_equal(ours, theirs)
    # chunks: a second chunk of a fresh goal labels only its slice
    assert main(["motif", "annotate", "--dataset", str(tmp_path / "a"), "--goal", "combat", "--chunk", "1/3",
                 "--quiet", "--cache", ":memory:"]) == 0
    combat = open_pair_dataset(tmp_path / "a").labels(f"{ORACLE_ANNOTATOR}_msg_combat_default")
    assert (combat[20:40] != 3).all() and (combat[:20] == 3).all() and (combat[40:] == 3).all()


@pytest.mark.parametrize("args, message", [
    (["annotate", "--goal", "treasure"], "unknown Motif goal 'treasure'"),
    (["annotate", "--chunk", "2/2"], "chunk 2 of 2 does not exist"),
    (["collect", "--pairs", "5", "--checkpoint", "best"], "--checkpoint and --greedy need --policy"),
    (["collect", "--pairs", "5", "--greedy"], "--checkpoint and --greedy need --policy"),
    (["collect", "--pairs", "5", "--policy", "{tmp}"], "is not a trained run"),
    (["collect", "--pairs", "5", "--policy", "{tmp}/missing"], "does not exist"),
])
def test_bad_arguments_exit_2_with_one_message(tmp_path: Path, capsys, args, message):
    make_dataset(tmp_path / "ds", make_pairs(6))
    args = [a.format(tmp=tmp_path) for a in args]
    where = ["--dataset", str(tmp_path / "ds"), "--quiet", "--cache", ":memory:"] if args[0] == "annotate" \
        else ["--out", str(tmp_path / "new")]
    assert main(["motif", *args, *where]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "new").exists()
