"""Run a row-wise network once per distinct row of a batch.

NetHack's message is the same few strings most of the time (an empty line above all): in 4,096 steps of random
play 118 messages were distinct, so a per-row model such as the published network's character CNN spent nearly
all of its time on copies. Computing each distinct row once and gathering the outputs back gives the same
function: each row's output is its own row's computation (only the convolution kernels a batch size picks can
move the last bits), and in the backward pass the gather sums the gradients of a row's copies, as the copies'
separate gradients would have summed into the shared weights.
"""

from __future__ import annotations

from typing import Callable

import torch


def once_per_distinct_row(fn: Callable[[torch.Tensor], torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    """``fn(rows)`` for a row-wise ``fn``, computed on the distinct rows only.

    rows: [B, ...] (any dtype ``torch.unique`` sorts; integer bytes here) -> fn's output [B, ...], row i being
    ``fn`` of row i. A batch with no repeated row is passed through as it is."""
    if rows.shape[0] < 2:
        return fn(rows)
    distinct, inverse = torch.unique(rows, dim=0, return_inverse=True)  # distinct [D, ...], inverse [B]
    if distinct.shape[0] == rows.shape[0]:
        return fn(rows)
    return fn(distinct).index_select(0, inverse)
