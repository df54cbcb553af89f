"""Numbers a user gives on the command line: checked for being finite and in range where they enter.

Settings files go through pydantic models (``allow_inf_nan=False`` and field bounds); options
parsed by argparse use the types here, so ``--port -1``, ``--timeout nan`` or ``--seed 1e30``
stop with argparse's usage error (exit code 2) naming the option and the range it takes.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

from llmexplore.errors import shown

#: the largest run seed: training seeds env i of run seed s with s * 1_000_003 + i, which must stay below
#: the evaluation seeds (2**40, ``agents/rollout.py``) and inside every seeding library's range (numpy: 2**32)
MAX_SEED = 1_000_000
#: the largest env-step budget (NetHack's published one is 2 * 10**9)
MAX_STEPS = 10**12
#: the highest TCP port
MAX_PORT = 65_535
#: how a budget names the task's published one
PUBLISHED = "published"


def _range_text(low: float | None, high: float | None, low_open: bool) -> str:
    def show(x: float) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"

    if low is not None and high is not None:
        if low_open:
            return f"above {show(low)} and at most {show(high)}"
        return f"between {show(low)} and {show(high)}"
    if low is not None:
        return f"above {show(low)}" if low_open else f"at least {show(low)}"
    if high is not None:
        return f"at most {show(high)}"
    return ""


def number_type(kind: type, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> Callable[[str], int | float]:
    """An argparse ``type=`` that reads an int (``kind=int``) or a finite float and checks its range."""
    noun = "a whole number" if kind is int else "a finite number"
    wanted = f"{noun} {_range_text(low, high, low_open)}".strip()

    def parse(text: str) -> int | float:
        try:
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {shown(text)}") from None
        if kind is not int and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {shown(text)}")
        if ((low is not None and (value < low or (low_open and value == low)))
                or (high is not None and value > high)):
            raise argparse.ArgumentTypeError(f"must be {wanted}, not {shown(text)}")
        return value

    parse.__name__ = "int" if kind is int else "float"  # argparse names the type in messages
    return parse


def read_steps(value: object) -> int | str | None:
    """A budget as written (``--steps``, a grid file's ``steps:``, a run spec's ``steps``): a positive whole
    number up to ``MAX_STEPS`` (``1e6``, ``1_000_000`` and ``1,000,000`` too), ``published``, or nothing.
    NaN, infinities, fractions and overflowing numbers raise ValueError saying what is wanted."""
    if value is None or (type(value) is int and 0 < value <= MAX_STEPS):
        return value
    if isinstance(value, str) and value.strip().lower() == PUBLISHED:
        return PUBLISHED
    number = math.nan
    if type(value) is float:
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.replace("_", "").replace(",", ""))
        except ValueError:
            pass
    if not math.isfinite(number) or number < 1 or number > MAX_STEPS or number != int(number):
        raise ValueError(f"must be a positive whole number of env steps up to {MAX_STEPS:.0e} or "
                         f"'{PUBLISHED}', not {shown(value)} (e.g. 1000000)")
    return int(number)


def steps_type(text: str) -> int | str:
    """``--steps``: ``read_steps`` as an argparse ``type=``, so a bad budget is a usage error naming it."""
    try:
        return read_steps(text)  # type: ignore[return-value]  (text is never None)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: shared option types
port_type = number_type(int, 0, MAX_PORT)
seed_type = number_type(int, 0, MAX_SEED)
seconds_type = number_type(float, 0, 7 * 86_400)
positive_seconds_type = number_type(float, 0, 7 * 86_400, low_open=True)
fraction_type = number_type(float, 0, 1)
coefficient_type = number_type(float, 0, 1e6)
