"""Collecting pair datasets and training Motif's reward model on them."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch

from llmexplore.cli import main
from llmexplore.errors import ConfigError
from llmexplore.methods.motif import artifacts
from llmexplore.methods.motif.collect import collect_pairs
from llmexplore.methods.motif.dataset import open_pair_dataset
from llmexplore.methods.motif.training import RewardTrainingOptions, prepare_data, train_reward_model
from tests.helpers.motif import ORACLE_ANNOTATION, label_with_oracle

FAST = dict(lr=1e-3, batch_size=256, epochs=5, threads=1)  # one thread: far faster on a shared machine


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("motif") / "pairs"
    ds, stats = collect_pairs("nethack:score", 3000, root, seed=0, num_envs=8)
    label_with_oracle(root)
    return root


def test_collected_dataset_has_published_shapes_and_is_reproducible(dataset, tmp_path):
    ds = open_pair_dataset(dataset, require=("message", "blstats", "tty_chars", "tty_colors"))
    assert len(ds) == 3000
    assert ds.data["message"].shape == (3000, 2, 256) and ds.data["message"].dtype == np.uint8
    assert ds.data["blstats"].shape == (3000, 2, 27)
    assert ds.data["tty_chars"].shape == ds.data["tty_colors"].shape == (3000, 2, 24, 80)
    for key in ("score", "turns", "experience_level", "depth", "gold"):
        assert ds.info[key].shape == (3000, 2)
    assert np.array_equal(ds.info["score"], ds.data["blstats"][..., 9])
    assert (ds.data["blstats"][..., 11] > 0).all()  # no game-over screens among the observations
    # the top line of the screen is the message
    assert ds.caption(0, 0) == bytes(ds.data["tty_chars"][0, 0, 0]).decode("latin-1").strip()[: len(ds.caption(0, 0))]
    captions = {c for pair in ds.captions(range(len(ds))) for c in pair}
    assert len(captions) > 20
    again, _ = collect_pairs("nethack:score", 200, tmp_path / "a", seed=0, num_envs=8)
    same, _ = collect_pairs("nethack:score", 200, tmp_path / "b", seed=0, num_envs=8)
    other, _ = collect_pairs("nethack:score", 200, tmp_path / "c", seed=1, num_envs=8)
    assert np.array_equal(again.data["tty_chars"], same.data["tty_chars"])
    assert not np.array_equal(again.data["tty_chars"], other.data["tty_chars"])


def test_training_reaches_high_held_out_accuracy(dataset, tmp_path):
    out = tmp_path / "rm"
    rows = []
    manifest = train_reward_model(dataset, ORACLE_ANNOTATION, out, RewardTrainingOptions(**FAST), on_epoch=rows.append)
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[-1]["val_accuracy"] >= 0.9  # held-out pairs, oracle labels, non-tie pairs
    losses = [r["train_loss"] for r in rows]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert rows[-1]["val_loss"] < rows[0]["val_loss"]
    # what the model was made from travels with it, and a Motif run's record names it (issue 53)
    assert manifest["collection"]["task"] == "nethack:score" and manifest["collection"]["policy"] == {"kind": "random"}
    assert manifest["labels_sha256"] and manifest["annotation"] == ORACLE_ANNOTATION
    from llmexplore.benchmarks.run.artefacts import path_sha256, run_artefacts
    from llmexplore.benchmarks.run.spec import RunSpec, resolve

    run = resolve(RunSpec(method="motif", task="nethack:score", seed=0, steps=4096,
                          method_options={"reward_model": str(out)}))
    entry = run_artefacts(run)["reward_model"]
    assert entry["sha256"] == path_sha256(out.resolve())
    assert entry["made_from"] == {k: manifest[k] for k in ("annotation", "labels_sha256", "collection")}
    assert manifest["final"]["val_accuracy"] == rows[-1]["val_accuracy"]
    assert 0.0 <= rows[-1]["val_score_agreement"] <= 1.0
    for name in artifacts.REQUIRED_FILES + (artifacts.CONFIG_FILE, artifacts.METRICS_FILE):
        assert (out / name).is_file()
    assert not (out / artifacts.STATE_FILE).exists()
    with open(out / artifacts.METRICS_FILE) as fh:
        assert len(list(csv.DictReader(fh))) == 5

    # statistics: recomputed here per training observation (every occurrence, not per message)
    loaded = artifacts.load_reward_model(out)
    data = prepare_data(dataset, ORACLE_ANNOTATION, RewardTrainingOptions(**FAST))
    with torch.no_grad():
        per_observation = loaded.model(data.table[data.pairs[data.train].reshape(-1)]).double()
    stats = json.loads((out / artifacts.STATS_FILE).read_text())
    assert stats["observations"] == 2 * len(data.train)
    assert stats["mean"] == pytest.approx(float(per_observation.mean()), rel=1e-4, abs=1e-6)
    assert stats["var"] == pytest.approx(float(per_observation.var(unbiased=False)), rel=1e-3)
    values = [v for _, v in loaded.quantiles]
    assert values == sorted(values) and len(values) == len(artifacts.QUANTILE_GRID)
    unique = torch.unique(data.pairs[data.train])
    with torch.no_grad():
        z = ((loaded.model(data.table[unique]).double() - stats["mean"]) / stats["std"]).numpy()
    assert loaded.threshold(0.5) == pytest.approx(float(np.quantile(z, 0.5)), abs=1e-3)

    with pytest.raises(ConfigError, match="already holds a trained reward model"):
        train_reward_model(dataset, ORACLE_ANNOTATION, out, RewardTrainingOptions(**FAST))


def test_interrupted_training_resumes_to_the_same_model(dataset, tmp_path):
    options = RewardTrainingOptions(lr=1e-3, batch_size=512, epochs=3, threads=1)
    train_reward_model(dataset, ORACLE_ANNOTATION, tmp_path / "whole", options)

    def stop_after_two(row):
        if row["epoch"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_reward_model(dataset, ORACLE_ANNOTATION, tmp_path / "cut", options, on_epoch=stop_after_two)
    assert (tmp_path / "cut" / artifacts.STATE_FILE).exists()
    with pytest.raises(ConfigError, match="incomplete"):
        artifacts.load_reward_model(tmp_path / "cut")
    with pytest.raises(ConfigError, match="other options"):
        train_reward_model(dataset, ORACLE_ANNOTATION, tmp_path / "cut", RewardTrainingOptions(lr=1e-4, epochs=3, threads=1))
    seen = []
    train_reward_model(dataset, ORACLE_ANNOTATION, tmp_path / "cut", options, on_epoch=seen.append)
    assert [r["epoch"] for r in seen] == [1, 2, 3]
    whole = torch.load(tmp_path / "whole" / artifacts.WEIGHTS_FILE)["state_dict"]
    cut = torch.load(tmp_path / "cut" / artifacts.WEIGHTS_FILE)["state_dict"]
    assert all(torch.equal(whole[k], cut[k]) for k in whole)


def test_cli_errors_exit_2_with_one_message(dataset, tmp_path, capsys):
    assert main(["motif", "collect", "--task", "housekeep:beechwood_0", "--pairs", "10",
                 "--out", str(tmp_path / "x")]) == 2
    assert "offers none (its family declares no message_text)" in capsys.readouterr().err
    assert main(["motif", "collect", "--pairs", "10", "--out", str(dataset)]) == 2
    assert "already holds a pair dataset" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    assert main(["motif", "collect", "--pairs", "10", "--out", str(tmp_path / "full")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"
    assert main(["motif", "train-reward", "--dataset", str(dataset), "--annotation", "nope", "--out",
                 str(tmp_path / "rm")]) == 2
    err = capsys.readouterr().err
    assert "no preference file" in err and ORACLE_ANNOTATION in err and "Traceback" not in err
    with pytest.raises(SystemExit) as stop:  # a number out of range is refused while reading the command line
        main(["motif", "train-reward", "--dataset", str(dataset), "--annotation", ORACLE_ANNOTATION, "--out",
              str(tmp_path / "rm"), "--lr", "-1"])
    assert stop.value.code == 2 and "--lr" in capsys.readouterr().err
