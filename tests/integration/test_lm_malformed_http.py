"""Malformed HTTP against the real LM server (issue 49): the client gets a 4xx, the server's stderr holds
no traceback, the request is counted in /stats, and the server keeps answering."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from tests.helpers.lm_server import ServerProcess

MALFORMED = {
    "negative-content-length": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    "8kb-header": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8200 + b"\r\n\r\n",
    "200-headers": b"GET /v1/models HTTP/1.1\r\nHost: x\r\n"
                   + b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n",
    "transfer-encoding-and-content-length": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                            b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
}


def _send_raw(port: int, raw: bytes) -> bytes:
    """Send bytes as they are and read the whole answer (the server closes after an error)."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(raw)
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.fixture(scope="module")
def answers() -> tuple[dict[str, bytes], dict, str]:
    """Each malformed request's raw answer, the server's /stats afterwards, and its whole stderr."""
    server = ServerProcess()
    try:
        replies = {name: _send_raw(server.port, raw) for name, raw in MALFORMED.items()}
        with urllib.request.urlopen(server.base_url + "/models", timeout=30) as r:  # still serving
            assert json.loads(r.read())["data"][0]["id"] == server.model
        stats = server.stats()
    finally:
        if server.proc.poll() is None:
            server.proc.terminate()
        _, stderr = server.proc.communicate(timeout=30)
    return replies, stats, stderr


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_request_gets_a_4xx(answers, name: str):
    status_line = answers[0][name].split(b"\r\n", 1)[0]
    assert status_line.split()[1].startswith(b"4"), status_line


def test_no_traceback_on_the_servers_stderr_and_each_is_counted(answers):
    _, stats, stderr = answers
    assert "Traceback" not in stderr and "Error handling request" not in stderr, stderr
    assert stats["malformed_requests"] == len(MALFORMED)
