"""`llmexplore lm serve` refuses fault settings it cannot honour before it opens a port."""

from __future__ import annotations

import pytest

from llmexplore.cli import main


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own refusals
        return int(stop.code)


@pytest.mark.parametrize("rates, needle", [
    (["--error-rate", "1.5"], "--error-rate: must be a finite number between 0 and 1"),
    (["--drop-rate", "nan"], "--drop-rate: must be a finite number between 0 and 1"),
    (["--error-rate", "0.6", "--garbage-rate", "0.5"], "the fault rates add up to 1.1"),
])
def test_fault_rates_out_of_range_are_refused(rates: list[str], needle: str, capsys):
    assert _exit_code(["lm", "serve", "--port", "0", *rates]) == 2
    assert needle in capsys.readouterr().err
