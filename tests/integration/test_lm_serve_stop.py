"""A real ``llmexplore lm serve`` process stopped with requests in flight (issue 37, class 2): the
waiting requests get 503 and the process exits within seconds; a second signal is never ignored; a
client that hangs up mid-request prints nothing on the console; bad listen options are one clear
error. Python's JSON writes NaN, as some clients do: the server must answer 400, not 500."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers.lm_server import REPO, ServerProcess


def _ask(server: ServerProcess, results: list) -> None:
    body = json.dumps({"model": server.model, "prompt": "hello"}).encode()
    request = urllib.request.Request(server.base_url + "/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            results.append(reply.status)
    except urllib.error.HTTPError as exc:
        results.append(exc.code)
    except OSError as exc:  # the connection closed without a reply
        results.append(type(exc).__name__)


def _in_flight(server: ServerProcess, count: int) -> tuple[list[threading.Thread], list]:
    """Start ``count`` requests and return once the server has begun answering every one of them (the
    server's request counter is read before, so earlier requests are not mistaken for these)."""
    results: list = []
    before = server.stats().get("requests", 0)
    threads = [threading.Thread(target=_ask, args=(server, results)) for _ in range(count)]
    for thread in threads:
        thread.start()
    _wait_for(server, "requests", before + count)
    return threads, results


def _wait_for(server: ServerProcess, counter: str, value: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while server.stats().get(counter, 0) < value:
        assert time.monotonic() < deadline, f"the server's {counter} stayed below {value}: {server.stats()}"
        time.sleep(0.05)


def _hang_up_mid_body(server: ServerProcess) -> None:
    """Send half a request body, then close the connection."""
    body = json.dumps({"model": server.model, "prompt": "hi"}).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (len(body) + 100) + body)
        _wait_for(server, "requests", 1)  # the server is reading this body
    _wait_for(server, "client_disconnects", 1)  # and has seen the hang-up


def test_sigterm_with_requests_waiting_answers_503_and_exits_at_once():
    server = ServerProcess("--latency", "30")  # every request waits 30 s before it reaches the model
    try:
        _hang_up_mid_body(server)
        threads, results = _in_flight(server, 5)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=20)
        for thread in threads:
            thread.join(20)
        # well before the 30 s the requests would have waited (a loaded CI machine takes seconds to stop)
        assert time.monotonic() - started < 15
        assert server.proc.returncode == 0
        assert results == [503] * 5
        stderr = server.proc.stderr.read()
        assert "Traceback" not in stderr and "Error handling request" not in stderr, stderr
    finally:
        server.kill()


def test_a_second_sigterm_is_never_ignored():
    server = ServerProcess("--latency", "30")
    try:
        threads, results = _in_flight(server, 3)
        server.proc.send_signal(signal.SIGTERM)
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=10)
        for thread in threads:
            thread.join(10)
        assert server.proc.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
        assert all(r == 503 or isinstance(r, str) for r in results), results  # 503, or the connection closed
    finally:
        server.kill()


@pytest.mark.parametrize("option", [["--port", "-1"], ["--port", "70000"], ["--latency", "nan"],
                                    ["--error-rate", "inf"]])
def test_impossible_listen_and_fault_options_are_one_clear_error(option):
    proc = subprocess.run([sys.executable, "-m", "llmexplore", "lm", "serve", *option], capture_output=True,
                          text=True, cwd=REPO, timeout=60, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2
    assert f"argument {option[0]}: must be" in proc.stderr and "Traceback" not in proc.stderr
