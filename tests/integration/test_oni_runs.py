"""Every ONI method through `llmexplore run` and `llmexplore grid` on NetHack, as a user runs them,
and the clear refusals (a task without messages, an unreachable LM server)."""

from __future__ import annotations

import json
import textwrap

import pytest

from llmexplore.agents.checkpoints import latest_checkpoint, load_checkpoint_file
from llmexplore.agents.checkpoints import CHECKPOINT_KEY
from llmexplore.benchmarks.run.record import read_record
from tests.integration.test_grid_runner import records, run_grid
from tests.helpers.replay import check_evaluates_and_visualizes
from tests.integration.test_one_cell import run_cli

pytestmark = pytest.mark.slow
SMALL = ["-t", "envs_per_worker=16", "-t", "batch_size=1024"]


@pytest.mark.parametrize("method", ["oni-retrieval", "oni-classification", "oni-ranking"])
def test_each_oni_method_trains_through_the_cli(tmp_path, method):
    out = tmp_path / method
    result = run_cli("run", "--method", method, "--task", "nethack:score", "--seed", "0", "--steps", "12288",
                     *SMALL, "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    record = read_record(out)
    assert record.status == "complete" and record.env_steps >= 12288
    assert record.spec.int_coef == 0.4 and record.spec.ext_coef == 0.1
    assert record.spec.method_options["beta"] == 3.0
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    last = metrics[-1]
    for key in ("oni_queue_length", "oni_labels_per_second", "oni_labelled_share", "oni_dedup_saved"):
        assert key in last
    assert last["oni_labels_total"] > 0 and last["oni_backend_errors"] == 0
    assert last["oni_labelled_share"] > 0  # the final row: by the budget some messages carry labels
    if method != "oni-retrieval":
        assert last["oni_rm_steps"] > 0
    if method != "oni-classification":  # a barely trained classifier may still say "unhelpful" everywhere
        assert any(m.get("reward_int_mean", 0) != 0 for m in metrics)
    state = load_checkpoint_file(latest_checkpoint(out))[CHECKPOINT_KEY]["method_state"]
    assert state["method"] == method and state["service"]["labels"]
    if method == "oni-ranking":  # the most method state (pair buffer, preference model); one replay is enough
        check_evaluates_and_visualizes(out, method, tmp_path)


def test_oni_methods_run_in_a_grid(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text(textwrap.dedent("""
        name: oni-small
        defaults: {steps: 4096, train: {envs_per_worker: 16, batch_size: 1024}}
        lm: {backend: oracle}
        vary: {method: [oni-retrieval, oni-classification, oni-ranking]}
        set: {task: nethack:score-extended, seed: 0}
    """).lstrip())
    out = tmp_path / "out"
    result = run_grid(path, out)
    assert result.returncode == 0, result.stderr[-3000:]
    cells = records(out)
    assert set(cells) == {f"{m}/nethack:score-extended/seed0" for m in ("oni-retrieval", "oni-classification",
                                                                       "oni-ranking")}
    assert all(r.status == "complete" and r.spec.int_coef == 0.4 for r in cells.values())
    assert (out / "leaderboard").is_dir()


def test_refusals_are_one_clear_message(tmp_path):
    # Housekeep offers no text to judge (Crafter does since issue 48: its captions)
    housekeep = run_cli("run", "--method", "oni-ranking", "--task", "housekeep:beechwood_0", "--steps", "4096",
                        "--out", str(tmp_path / "housekeep"), "--quiet")
    assert housekeep.returncode == 2 and "needs observation keys ['message']" in housekeep.stderr
    assert "Traceback" not in housekeep.stderr
    server = run_cli("run", "--method", "oni-retrieval", "--task", "nethack:score", "--steps", "4096",
                     "--lm", "backend=openai", "--lm", "base_url=http://127.0.0.1:9/v1", "--lm", "model=m",
                     "--out", str(tmp_path / "server"), "--quiet")
    assert server.returncode == 2 and "cannot reach the LM server" in server.stderr
    assert "Traceback" not in server.stderr
