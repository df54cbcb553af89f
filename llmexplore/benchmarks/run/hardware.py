"""What a run actually ran on, for its record: so a table's hardware is provable from its records.

The learner and inference devices follow ``train.device`` (sample-factory puts a policy's learner and its
inference workers on one device); GPU, CUDA, cuDNN and driver versions come from torch and `nvidia-smi`
where they exist; the CPU side names the cores the process may use, the model and torch's threads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any


def hardware_info(device: str | None = None, num_workers: int | None = None, envs_per_worker: int | None = None,
                  torch_threads: int | None = None) -> dict[str, Any]:
    """The record's ``environment.hardware``; ``device`` is the run's ``train.device`` (cpu or gpu) and
    ``torch_threads`` the threads its training process sets (default: this process's)."""
    import torch

    cuda = torch.cuda.is_available()
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _cpu_model(),
        "torch_threads": torch_threads or torch.get_num_threads(),
        "cuda_available": cuda,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "driver": _nvidia_driver() if cuda else None,
    }
    if device is not None:
        placed = "cuda:0" if device == "gpu" else "cpu"
        info.update(learner_device=placed, inference_device=placed)
    if num_workers is not None:
        info.update(workers=num_workers, envs_per_worker=envs_per_worker)
    return info


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _nvidia_driver() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
