"""Shared test setup: data from ../shared/data, quiet sample-factory, small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"

# Tests read the third-party data from ../shared/data unless the caller points elsewhere.
os.environ.setdefault("LLMEXPLORE_DATA", str(SHARED_DATA))
os.environ.setdefault("LLMEXPLORE_SF_QUIET", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA
