"""Start ``llmexplore lm serve`` as a real subprocess for tests, and stop it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class ServerProcess:
    """``llmexplore lm serve ARGS`` (or any command printing the same "listening on" line) as a subprocess."""

    def __init__(self, *args: str, port: int = 0, cache: str = ":memory:", timeout: float = 60.0,
                 cmd: list[str] | None = None):
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.cmd = cmd or [sys.executable, "-m", "llmexplore", "lm", "serve", "--port", str(port), "--cache",
                           cache, *args]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     cwd=REPO)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line or self.proc.poll() is not None:
                break
        m = re.search(r"listening on (http://[^ ]+/v1)", line)
        if m is None:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()}")
        self.base_url = m.group(1)
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/")[0])
        self.model = re.search(r"\(model (.+)\)", line).group(1)

    @classmethod
    def scripted(cls, replies: list[str], workdir: Path) -> "ServerProcess":
        """A real HTTP server whose model answers with ``replies`` in order (``tests/helpers/scripted_lm.py``;
        the prompts it received are in ``server.prompt_log``, JSON lines)."""
        workdir.mkdir(parents=True, exist_ok=True)
        script, log = workdir / "replies.json", workdir / "prompts.jsonl"
        script.write_text(json.dumps(replies))
        server = cls(cmd=[sys.executable, "-m", "tests.helpers.scripted_lm", "--script", str(script),
                          "--log", str(log), "--port", "0"])
        server.prompt_log = log
        return server

    def prompts(self) -> list[dict]:
        log = getattr(self, "prompt_log", None)
        if log is None or not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def stats(self) -> dict:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=10) as r:
            return json.loads(r.read())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._close_pipes()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        """The ended server's output pipes (read them before stopping it): left open, they are closed by the
        garbage collector, whose ResourceWarning lands in whichever test runs then."""
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
