"""Two `lm annotate` chunks started together on a new dataset (issue 49): both proceed, neither is refused with
"database is locked" (the dataset's new LM cache), and every pair gets its label (one new label file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from llmexplore.methods.motif.dataset import open_pair_dataset
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.pairs import make_dataset, make_pairs

REPO = Path(__file__).resolve().parents[2]


def test_two_chunks_started_together_on_a_new_dataset_both_finish(tmp_path: Path):
    make_dataset(tmp_path / "ds", make_pairs(600, seed=8))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-m", "llmexplore", "lm", "annotate", str(tmp_path / "ds"),
                               "--chunk", f"{k}/2", "--batch-size", "16", "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for k in range(2)]
    results = [(p.wait(300), *p.communicate()) for p in procs]
    for code, stdout, stderr in results:
        assert code == 0 and "locked" not in stderr and "Traceback" not in stderr, stderr
        assert json.loads(stdout.strip().splitlines()[-1])["counts"]["unknown"] == 0
    labels = np.asarray(open_pair_dataset(tmp_path / "ds").labels(f"{ORACLE_ANNOTATOR}_msg_defaultgoal_default"))
    assert (labels != 3).all()
