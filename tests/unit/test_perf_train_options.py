"""The benchmarks' shared ``-t KEY=VALUE`` parser (tests/perf/common.train_options)."""

from __future__ import annotations

import pytest

from tests.perf.common import train_options


def test_pairs_become_typed_and_nested_training_settings():
    assert train_options(["num_workers=2", "sf_args.worker_num_splits=2", "sampling=batched",
                          "update_thread=false", "learning_rate=0.0003", "sf_args.batched_sampling=True"]) == {
        "num_workers": 2, "sampling": "batched", "update_thread": False, "learning_rate": 0.0003,
        "sf_args": {"worker_num_splits": 2, "batched_sampling": True}}
    assert train_options([]) == {}


def test_a_pair_without_a_value_is_refused_naming_the_form():
    with pytest.raises(SystemExit, match="expected KEY=VALUE"):
        train_options(["num_workers"])
