"""Every session of a record says what it ran with, and a run's artefacts are named by content (issue 53).

Before, `git_dirty` was looked up one folder too deep (inside the package, where `git status -- llmexplore`
matches nothing), so every record said "clean"; a resumed run kept only its last session's commit; a Motif
record named its reward model by path alone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import llmexplore
from llmexplore.agents.resolved_run import ParentSpec
from llmexplore.benchmarks.run.artefacts import path_sha256, run_artefacts
from llmexplore.benchmarks.run.provenance import CHECKOUT, git_state, load_average
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.methods.registry import get_method, parse_options


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_commit_and_dirty_flag_are_those_of_the_checkout_holding_the_package(tmp_path):
    assert CHECKOUT == Path(llmexplore.__file__).resolve().parent.parent
    repo = tmp_path / "checkout"
    (repo / "llmexplore").mkdir(parents=True)
    (repo / "llmexplore" / "m.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    commit, dirty = git_state(repo)
    assert len(commit) == 40 and dirty is False
    (repo / "llmexplore" / "m.py").write_text("x = 2\n")
    assert git_state(repo) == (commit, True)
    (repo / "notes.txt").write_text("outside the package\n")
    (repo / "llmexplore" / "m.py").write_text("x = 1\n")
    assert git_state(repo) == (commit, False)
    assert git_state(tmp_path / "elsewhere") == (None, None)


def test_load_average_is_three_figures():
    values = load_average()
    assert len(values) == 3 and all(v >= 0 for v in values)


def test_a_folder_digest_follows_its_files_not_its_place(tmp_path):
    for where in ("a", "b"):
        (tmp_path / where / "sub").mkdir(parents=True)
        (tmp_path / where / "sub" / "w.bin").write_bytes(b"\x00\x01")
        (tmp_path / where / "config.json").write_text("{}")
    assert path_sha256(tmp_path / "a") == path_sha256(tmp_path / "b")
    (tmp_path / "b" / "sub" / "w.bin").write_bytes(b"\x00\x02")
    assert path_sha256(tmp_path / "a") != path_sha256(tmp_path / "b")


def test_a_run_names_its_model_folder_and_parent_checkpoint_by_sha256(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"abc")
    parent = tmp_path / "checkpoint_000000001_1024.pth"
    parent.write_bytes(b"weights")
    run = resolve(RunSpec(method="rnd", task="crafter:reward-free", seed=0, steps=4096))
    run = run.model_copy(update={"method_options": {**run.method_options, "model_path": str(model)},
                                 "parent": ParentSpec(run_dir=str(tmp_path), checkpoint=str(parent))})
    artefacts = run_artefacts(run)
    assert artefacts["model_path"] == {"path": str(model), "sha256": path_sha256(model)}
    assert artefacts["parent_checkpoint"]["sha256"] == path_sha256(parent)
    assert run_artefacts(resolve(RunSpec(method="rnd", task="crafter:reward-free", seed=0, steps=4096))) == {}


def test_motif_and_maestro_declare_the_folders_that_decide_their_reward():
    motif = get_method("motif")
    assert motif.artefacts(parse_options(motif, {"reward_model": "/models/rm"})) == {"reward_model": "/models/rm"}
    maestro = get_method("maestro")
    assert set(maestro.artefact_options) == {"reward_models", "code"}
