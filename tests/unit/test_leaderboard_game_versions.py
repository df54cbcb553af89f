"""A leaderboard never ranks two versions of a game together (issues 50 and 53): an NLE upgrade changes
NetHack itself, and an oracle rules version changes what an LM-guided row was judged by."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llmexplore.benchmarks.results.leaderboard import build_leaderboard
from llmexplore.errors import DataError

NETHACK = Path(__file__).resolve().parents[2] / "results" / "nethack-1m" / "records"


def _copy(tmp_path: Path, method: str, seed: int, **environment: str) -> Path:
    source = NETHACK / method / "nethack-score" / f"seed{seed}" / "run.json"
    target = tmp_path / "runs" / method / f"seed{seed}" / "run.json"
    target.parent.mkdir(parents=True)
    record = json.loads(source.read_text())
    record["environment"].update(environment)
    target.write_text(json.dumps(record))
    return target.parent


def test_two_nle_versions_in_one_table_are_refused_naming_the_records(tmp_path):
    old = _copy(tmp_path, "none", 0, nle="1.0.0")
    new = _copy(tmp_path, "none", 1, nle="1.3.0")
    _copy(tmp_path, "rnd", 0)  # a record that does not say its version: 1.0.0, that of its time (below)
    with pytest.raises(DataError) as caught:
        build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)
    message = str(caught.value)
    assert "nethack:score mixes 2 versions of nle" in message and str(old) in message and str(new) in message


def test_one_row_judged_by_two_oracle_rule_versions_is_refused(tmp_path):
    _copy(tmp_path, "oni-retrieval", 0, oracle_rules_version="4")
    _copy(tmp_path, "oni-retrieval", 1, oracle_rules_version="5")
    with pytest.raises(DataError, match="oni-retrieval on nethack:score mixes 2 versions of oracle_rules_version"):
        build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)


def test_one_version_throughout_builds(tmp_path):
    for seed in (0, 1):
        _copy(tmp_path, "none", seed, nle="1.0.0")
        _copy(tmp_path, "oni-retrieval", seed, nle="1.0.0", oracle_rules_version="5")
    shutil.rmtree(tmp_path / "board", ignore_errors=True)
    assert build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)["markdown"].exists()


def _with_sampling(run_dir: Path, sampling: str) -> None:
    path = run_dir / "run.json"
    record = json.loads(path.read_text())
    record["spec"]["train"]["sampling"] = sampling
    path.write_text(json.dumps(record))


def test_one_row_trained_on_both_sampling_paths_is_refused(tmp_path):
    """A row's seeds all ran per-env or all batched (issue 54); a record made before train.sampling existed
    ran per-env, so it shares a row with one stating per-env and not with one stating batched."""
    _with_sampling(_copy(tmp_path, "none", 0), "per-env")
    _copy(tmp_path, "none", 1)  # no sampling in its spec: per-env
    _with_sampling(_copy(tmp_path, "rnd", 0), "batched")
    rnd_seed1 = _copy(tmp_path, "rnd", 1)
    _with_sampling(rnd_seed1, "batched")  # another row may be batched throughout
    assert build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)["markdown"].exists()
    _with_sampling(rnd_seed1, "per-env")
    with pytest.raises(DataError, match="rnd on nethack:score mixes 2 versions of train.sampling"):
        build_leaderboard(tmp_path / "runs", tmp_path / "board2", reps=50)


def _with_streams(run_dir: Path, streams: int, gamma: float = 0.99) -> None:
    path = run_dir / "run.json"
    record = json.loads(path.read_text())
    record["spec"]["train"].update(reward_streams=streams, intrinsic_gamma=gamma, intrinsic_episodic=False)
    path.write_text(json.dumps(record))


def test_one_row_learned_with_one_and_two_reward_streams_is_refused(tmp_path):
    """RND's default became two reward streams (issue 51): a seed added later to a one-stream row, without the
    pin, would change the row's method. A record made before the option learned with one stream; two streams
    with another intrinsic discount are another method too."""
    _copy(tmp_path, "rnd", 0)  # no reward_streams in its spec: one stream
    seed1 = _copy(tmp_path, "rnd", 1)
    _with_streams(seed1, 1)
    assert build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)["markdown"].exists()
    _with_streams(seed1, 2)
    with pytest.raises(DataError, match="rnd on nethack:score mixes 2 versions of train.reward_streams") as caught:
        build_leaderboard(tmp_path / "runs", tmp_path / "board2", reps=50)
    assert "2 (intrinsic gamma 0.99, non-episodic)" in str(caught.value)
    _with_streams(tmp_path / "runs" / "rnd" / "seed0", 2, gamma=0.999)
    with pytest.raises(DataError, match="mixes 2 versions of train.reward_streams"):
        build_leaderboard(tmp_path / "runs", tmp_path / "board3", reps=50)
    _with_streams(tmp_path / "runs" / "rnd" / "seed0", 2)
    assert build_leaderboard(tmp_path / "runs", tmp_path / "board4", reps=50)["markdown"].exists()


def test_a_record_that_does_not_state_nle_counts_as_the_1_0_0_every_commit_of_its_time_required(tmp_path):
    """The committed NetHack records (schema 3) name no NLE version: they were made while llmexplore required
    nle==1.0.0, so they share a table with NLE 1.0.0 records and never with an NLE 1.3.0 one."""
    committed = _copy(tmp_path, "rnd", 0)
    assert "nle" not in json.loads((committed / "run.json").read_text())["environment"]
    _copy(tmp_path, "none", 0, nle="1.0.0")
    assert build_leaderboard(tmp_path / "runs", tmp_path / "board", reps=50)["markdown"].exists()
    newer = _copy(tmp_path, "none", 1, nle="1.3.0")
    with pytest.raises(DataError) as caught:
        build_leaderboard(tmp_path / "runs", tmp_path / "board2", reps=50)
    message = str(caught.value)
    assert "nethack:score mixes 2 versions of nle" in message and str(newer) in message
    assert f"{committed} (not recorded: made when llmexplore required nle 1.0.0)" in message
