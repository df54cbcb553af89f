"""Issue 37, class 5: every name that becomes part of a path is checked by one helper (paths.py), and
every joined path stays inside its folder: annotator and annotation names, grid labels and names,
the files a run record names, the oracle's reference targets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llmexplore.benchmarks.grids.grid_file import load_grid
from llmexplore.benchmarks.run.record import RunFiles
from llmexplore.cli import main
from llmexplore.errors import ConfigError
from llmexplore.lm.errors import OracleError
from llmexplore.methods.maestro.oracle import reference_file
from llmexplore.paths import check_name, inside
from tests.helpers.pairs import make_dataset, make_pairs

CLIMBING = ["../../../x", "..", ".", "a/b", "a\\b", "", "x\x00y", ".hidden", "y" * 300]


@pytest.mark.parametrize("name", CLIMBING)
def test_names_that_are_not_one_plain_path_component_are_refused(tmp_path: Path, name):
    with pytest.raises(ConfigError, match="--annotator"):
        check_name(name, "--annotator")
    with pytest.raises(ConfigError):
        inside(tmp_path, name, what="name")


def test_a_symbolic_link_out_of_the_folder_is_refused(tmp_path: Path):
    (tmp_path / "folder").mkdir()
    os.symlink(tmp_path, tmp_path / "folder" / "link")
    with pytest.raises(ConfigError, match="leads outside"):
        inside(tmp_path / "folder", "link", what="the label")
    assert inside(tmp_path / "folder", "plain-name.npy", what="x") == tmp_path / "folder" / "plain-name.npy"


def test_annotate_and_train_reward_never_leave_the_dataset(tmp_path: Path, capsys):
    dataset = tmp_path / "deep" / "er" / "pairs"
    make_dataset(dataset, make_pairs(8))
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(["lm", "annotate", str(dataset), "--annotator", "../../../x", "--quiet", "--cache", ":memory:"]) == 2
    assert "annotator '../../../x' cannot be used as a file name" in capsys.readouterr().err
    assert main(["motif", "train-reward", "--dataset", str(dataset), "--annotation", "../../x",
                 "--out", str(tmp_path / "rm")]) == 2
    err = capsys.readouterr().err
    assert "annotation name '../../x' cannot be used as a file name" in err and "Traceback" not in err
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written anywhere


@pytest.mark.parametrize("key,value", [("label", ".."), ("label", ".x"), ("name", "..")])
def test_grid_labels_and_names_stay_inside_the_results_folder(tmp_path: Path, monkeypatch, key, value):
    monkeypatch.chdir(tmp_path)
    fields = {"method": "rnd", "task": "crafter:reward-free", "steps": 4096}
    top = {"name": "g", "set": fields}
    if key == "label":
        fields["label"] = value
    else:
        top["name"] = value
    path = tmp_path / "grid.yaml"
    path.write_text(json.dumps(top))  # JSON is YAML
    with pytest.raises(ConfigError, match="cannot be used as a file name"):
        load_grid(path)


@pytest.mark.parametrize("files", [{"episodes": "../../elsewhere.jsonl"}, {"sf_log": "/etc/passwd"},
                                   {"checkpoints": ["sf/ok.pth", "../../x.pth"]}])
def test_a_run_record_cannot_name_files_outside_its_folder(files):
    with pytest.raises(ValueError, match="must be a path inside its folder"):
        RunFiles(**files)
    assert RunFiles(checkpoints=["sf/checkpoint_p0/checkpoint_000000001_4096.pth"]).checkpoints


def test_the_oracle_reads_only_its_reference_folder():
    with pytest.raises(OracleError, match="cannot be used as a file name"):
        reference_file("skill", "../../../../etc/passwd")
