"""The HTTP server's own log: a malformed request is one counted line, never a traceback.

aiohttp answers a request it cannot parse (a negative Content-Length, a header line over 8 KiB, too
many headers, Transfer-Encoding beside Content-Length) with 400 itself, then logs the parser's
exception with its traceback on ``aiohttp.server``: on a server's console that reads as a crash of
ours although nothing failed. The request handlers log through ``RequestLogger`` instead: a client's
malformed request is counted (``malformed_requests`` in ``/stats``) and logged at INFO as one line;
any other exception keeps its traceback, because that one is a bug to see.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

#: the logger aiohttp's request handlers use by default; ours hangs below it, so logging set up for it applies
AIOHTTP_SERVER_LOGGER = "aiohttp.server"


class RequestLogger(logging.Logger):
    """aiohttp's ``RequestHandler`` logger with malformed requests turned into a counted line."""

    def __init__(self, counters: Counter):
        super().__init__(f"{AIOHTTP_SERVER_LOGGER}.llmexplore")
        self.parent = logging.getLogger(AIOHTTP_SERVER_LOGGER)
        self.counters = counters

    def exception(self, msg: object, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        """A parser error of the client's request: one INFO line and a count; anything else as aiohttp logs it."""
        if _is_malformed_request(exc_info):
            self.counters["malformed_requests"] += 1
            reason = " ".join(str(getattr(exc_info, "message", exc_info)).split())
            self.info("%s: malformed HTTP request answered with %s: %s", str(msg) % args if args else msg,
                      getattr(exc_info, "code", 400), reason)
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


def _is_malformed_request(exc: Any) -> bool:
    """Whether ``exc`` is aiohttp's parser refusing what a client sent (a 4xx of its own making)."""
    from aiohttp.http_exceptions import HttpProcessingError

    return isinstance(exc, HttpProcessingError) and 400 <= int(getattr(exc, "code", 400) or 400) < 500
