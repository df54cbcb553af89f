"""What a session ran with, for its record: versions, the checkout's commit and dirty flag, host,
hardware and the machine's load, so a reviewer can tell which code and stack trained which steps."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from llmexplore import __version__

#: the checkout llmexplore runs from (llmexplore/benchmarks/run/provenance.py: three folders up)
CHECKOUT = Path(__file__).resolve().parents[3]


def load_average() -> list[float]:
    """The machine's load average over 1, 5 and 15 minutes (empty where the system does not say)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def git_state(repo: Path) -> tuple[str | None, bool | None]:
    """The commit ``repo`` has checked out and whether its ``llmexplore`` package differs from it
    (None, None outside a git checkout, e.g. an installed wheel)."""
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5)
        if commit.returncode != 0:
            return None, None
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "llmexplore"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit.stdout.strip(), (bool(dirty.stdout.strip()) if dirty.returncode == 0 else None)


def environment_info(adapter=None, train=None) -> dict[str, Any]:
    """Versions, git commit, host and hardware (with ``train``: the devices and workers the run used);
    plus what ``adapter`` says about how its environment runs (NLE's, Crafter's, MiniHack's versions)."""
    import gymnasium
    import sample_factory
    import torch

    from llmexplore.benchmarks.run.hardware import hardware_info

    commit, dirty = git_state(CHECKOUT)
    info = {
        "llmexplore": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "sample_factory": getattr(sample_factory, "__version__", "2.1.1"),
        "host": platform.node(),
        "platform": platform.platform(),
        "git_commit": commit,
        "git_dirty": dirty,
    }
    info["hardware"] = (hardware_info(train.device, train.num_workers, train.envs_per_worker, train.torch_threads)
                        if train is not None else hardware_info())
    if adapter is not None:
        info.update(adapter.environment_info())
    return info
