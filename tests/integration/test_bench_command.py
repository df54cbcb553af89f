"""`llmexplore bench` measures the env in 1 and N processes and training for a fixed time, into bench.json
and bench.md with the machine it ran on (slow: it trains for a few seconds)."""

from __future__ import annotations

import json

import pytest

from llmexplore.cli import main


@pytest.mark.slow
def test_a_tiny_bench_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "bench"
    assert main(["bench", "--task", "crafter:reward-free", "--seconds", "3", "--processes", "1",
                 "--processes", "2", "--out", str(out)]) == 0
    report = json.loads((out / "bench.json").read_text())
    assert report["schema"] == "llmexplore.bench" and report["environment"]["hardware"]["cpus_usable"] >= 1
    kinds = [(m["what"], m["detail"]) for m in report["measurements"]]
    assert kinds == [("env", "1 process"), ("env", "2 processes"),  # training on both sampling paths, in turn
                     ("train", "none, preset default, sampling=per-env"),
                     ("train", "none, preset default, sampling=batched")]
    assert all(m["steps_per_second"] > 0 for m in report["measurements"])
    train = report["measurements"][-1]
    assert train["seconds"] >= 3 and train["gpu_utilisation"] is None  # no nvidia-smi here
    markdown = (out / "bench.md").read_text()
    assert "| train | crafter:reward-free | none, preset default, sampling=batched |" in markdown
    assert "Batched / per-env sampling, the same training otherwise: crafter:reward-free, none, preset default: " \
        in markdown


def test_bench_refuses_unknown_names_before_any_work(tmp_path, capsys):
    assert main(["bench", "--task", "crafter:nope", "--out", str(tmp_path / "b")]) == 2
    assert main(["bench", "--method", "rndd", "--out", str(tmp_path / "b")]) == 2
    with pytest.raises(SystemExit) as stop:  # argparse refuses it while reading the command line
        main(["bench", "--seconds", "nan", "--out", str(tmp_path / "b")])
    assert stop.value.code == 2 and "--seconds: must be a finite number" in capsys.readouterr().err
    assert main(["bench", "--train-only", "--processes", "2", "--out", str(tmp_path / "b")]) == 2
    assert "--train-only leaves out" in capsys.readouterr().err
    assert main(["bench", "--sampling", "batched", "-t", "sampling=per-env", "--out", str(tmp_path / "b")]) == 2
    assert "keep one of them" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one or the other
        main(["bench", "--train-only", "--env-only", "--out", str(tmp_path / "b")])
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_bench_train_only_measures_no_env(tmp_path):
    out = tmp_path / "bench"
    # a dotted -t key sets a nested setting, as `llmexplore run -t` does (2 is sample-factory's default)
    assert main(["bench", "--task", "crafter:reward-free", "--seconds", "3", "--train-only", "--sampling", "per-env",
                 "-t", "sf_args.worker_num_splits=2", "--out", str(out)]) == 0
    report = json.loads((out / "bench.json").read_text())
    assert [m["what"] for m in report["measurements"]] == ["train"]
    train = report["measurements"][0]
    assert train["steps_per_second"] > 0 and train["detail"] == (
        "none, preset default, sf_args.worker_num_splits=2, sampling=per-env")


def test_bench_announces_each_measurement_and_records_the_load_average(tmp_path, capsys):
    """A bench of several minutes is not silent, and its figures say how busy the machine was (not slow:
    the env alone, for a second)."""
    out = tmp_path / "bench"
    assert main(["bench", "--task", "crafter:reward-free", "--env-only", "--seconds", "1", "--processes", "1",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "bench: 1 measurement(s) of about 1 s each, about 1 s"
    assert err[1] == "bench [1/1]: crafter:reward-free, the env alone in 1 process(es)"
    report = json.loads((out / "bench.json").read_text())
    assert len(report["environment"]["load_average"]) == 3
    assert report["measurements"][0]["load_average"] >= 0
    assert "Load average (1, 5, 15 min) at the start:" in (out / "bench.md").read_text()
