"""A real OpenAI-compatible server (``llmexplore.lm.server.LMServer``) whose model follows a script.

    python -m tests.helpers.scripted_lm --script replies.json --log prompts.jsonl --port 0

The model answers the k-th prompt it receives with the k-th reply of the script (the last one
once the script runs out) and appends every prompt to the log, so a test can script "a bad
answer, then a good one" and check what the client sent the second time.
"""

from __future__ import annotations

import argparse
import json
import threading
from typing import Sequence

from llmexplore.lm.base import Completion, LanguageModel
from llmexplore.lm.config import SamplingParams


class ScriptedLM(LanguageModel):
    name = "scripted"

    def __init__(self, replies: Sequence[str], log: str | None = None):
        self.replies = list(replies)
        self.log = log
        self.served = 0
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return "scripted-test-model"

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        out = []
        with self._lock:
            for prompt in prompts:
                reply = self.replies[min(self.served, len(self.replies) - 1)]
                self.served += 1
                if self.log:
                    with open(self.log, "a") as fh:
                        fh.write(json.dumps({"prompt": prompt, "reply": reply}) + "\n")
                out.append(Completion(reply, "stop"))
        return out


def main() -> None:
    from llmexplore.lm.server import LMServer, serve_forever

    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True, help="JSON list of replies, served in order")
    parser.add_argument("--log", help="append every prompt received to this JSON-lines file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with open(args.script) as fh:
        replies = json.load(fh)
    lm = ScriptedLM(replies, args.log)
    server = LMServer(lm)

    def ready(port: int) -> None:
        print(
            f"scripted lm: listening on http://{args.host}:{port}/v1 (model {server.model_name})", flush=True
        )

    serve_forever(server, args.host, args.port, ready)


if __name__ == "__main__":
    main()
