"""SIGKILL ``llmexplore lm annotate`` mid-way; the rerun finishes with the same labels and asks nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from llmexplore.lm.cache import LMCache
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.pairs import make_dataset, make_pairs

REPO = Path(__file__).resolve().parents[2]
NAME = f"preference/{ORACLE_ANNOTATOR}_msg_defaultgoal_default.npy"


def _default_sigint() -> None:
    """A shell's background job (``cmd &``) starts with SIGINT ignored, and Python keeps an ignored SIGINT
    ignored: give the command the disposition a terminal user's process has, whatever ran pytest."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def annotate(ds: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "llmexplore", "lm", "annotate", str(ds), "--quiet",
                             "--batch-size", "10", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, preexec_fn=_default_sigint)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_kill_and_rerun(tmp_path: Path):
    pairs = make_pairs(400, seed=7, tie_share=0.05)
    pairs = [(a + f" #{i % 150}", b) if a != b else (a, b) for i, (a, b) in enumerate(pairs)]  # many distinct prompts
    distinct = len({p for p in pairs if p[0] != p[1]})
    for name in ("killed", "reference"):
        make_dataset(tmp_path / name, pairs)

    reference = finish(annotate(tmp_path / "reference"))
    assert reference["cache"]["backend_prompts"] == distinct

    # a slow model (0.1 s per batch of 10): kill once some batches are labelled
    proc = annotate(tmp_path / "killed", "--lm", "options.latency_s=0.1")
    labels_path = tmp_path / "killed" / NAME
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if labels_path.exists() and (np.load(labels_path) != 3).sum() >= 60:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    done_at_kill = int((np.load(labels_path) != 3).sum())
    assert 60 <= done_at_kill < len(pairs), "the kill should land mid-way"
    cache = LMCache(tmp_path / "killed" / "lm-cache.sqlite3")
    stored_at_kill = cache.entries()
    cache.close()
    assert 0 < stored_at_kill < distinct

    rerun = finish(annotate(tmp_path / "killed"))
    assert np.array_equal(np.load(labels_path), np.load(tmp_path / "reference" / NAME))
    assert rerun["already_labelled"] == done_at_kill
    # nothing answered before the kill is asked again: the rerun's model calls are exactly the rest
    assert rerun["cache"]["backend_prompts"] == rerun["cache"]["stored"] == distinct - stored_at_kill
    assert rerun["cache"]["entries"] == distinct
    assert rerun["counts"] == reference["counts"]


@pytest.mark.slow
def test_sigint_and_sigterm_stop_with_a_clear_message_and_the_rerun_finishes(tmp_path: Path):
    """Issue 28: a stopped annotation job says what was kept (no traceback); the rerun completes it."""
    pairs = make_pairs(300, seed=3, tie_share=0.05)
    pairs = [(a + f" #{i % 120}", b) if a != b else (a, b) for i, (a, b) in enumerate(pairs)]
    make_dataset(tmp_path / "reference", pairs)
    reference = finish(annotate(tmp_path / "reference"))
    for sig in (signal.SIGINT, signal.SIGTERM):
        ds = tmp_path / f"stopped-{sig.name}"
        make_dataset(ds, pairs)
        proc = annotate(ds, "--lm", "options.latency_s=0.1")
        labels_path = ds / NAME
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if labels_path.exists() and (np.load(labels_path) != 3).sum() >= 40:
                break
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and "Traceback" not in err, err[-2000:]
        assert "annotation interrupted" in err and "rerun the same command" in err
        done = int((np.load(labels_path) != 3).sum())
        assert 40 <= done < len(pairs)
        rerun = finish(annotate(ds))
        assert rerun["already_labelled"] >= done
        assert np.array_equal(np.load(labels_path), np.load(tmp_path / "reference" / NAME))
        assert rerun["counts"] == reference["counts"]
