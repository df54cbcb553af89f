"""The language-model server a grid names: checked once, before any cell starts.

Hundreds of cells that each find the LM server down (or serving another model) an hour
into training waste a cluster; one check up front turns that into one clear message.
The check itself belongs to the LM layer (``llmexplore.lm.check.check_lm``), which owns the
client: this module only decides which endpoints a grid uses and where they must be reachable.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable
from urllib.parse import urlparse

from llmexplore.benchmarks.grids.grid_file import Cell
from llmexplore.errors import UserError
from llmexplore.lm.config import LMConfig

class LMEndpointError(UserError):
    """The grid's LM server cannot be used (down, wrong model, or no way to check it)."""


def uses_server(lm: LMConfig) -> bool:
    """Whether cells with this LM config talk to an HTTP server (the oracle and in-process vLLM do not)."""
    return lm.base_url is not None or lm.backend == "openai"


def check_lm_endpoint(lm: LMConfig) -> None:
    """Return when the server ``lm`` names is reachable and serves ``lm.model``; raise otherwise."""
    if not uses_server(lm):
        return
    from llmexplore.lm.check import check_lm

    check_lm(lm)


def endpoints(cells: Iterable[Cell]) -> list[LMConfig]:
    """The distinct server-backed LM configs of these cells (the grid's `lm:` and any a cell overrides)."""
    seen: dict[tuple, LMConfig] = {}
    for cell in cells:
        lm = cell.spec.lm
        if uses_server(lm):
            seen.setdefault((lm.backend, lm.base_url, lm.model, lm.api_key_env), lm)
    return list(seen.values())


def check_endpoints(cells: Iterable[Cell]) -> None:
    """Check each distinct LM server of the cells once; raises at the first one down or lacking its model."""
    for lm in endpoints(cells):
        check_lm_endpoint(lm)


def is_loopback(url: str | None) -> bool:
    """Whether a URL points at the machine that uses it (which differs per node on a cluster)."""
    if not url:
        return False
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_loopback(cells: Iterable[Cell], where: str) -> None:
    """Stop when cells that run on other machines would look for the LM server on themselves."""
    for lm in endpoints(cells):
        if is_loopback(lm.base_url):
            raise LMEndpointError(
                f"lm.base_url {lm.base_url} names this machine, but cells run on {where}, where it means each "
                f"node itself",
                hint="use the LM server's host name or address, e.g. http://gpu-node-07:8000/v1 (docs/distributed.md)",
            )
