"""``llmexplore lm ...``: annotate a pair dataset, serve a model over HTTP, list prompts, inspect a cache."""

from __future__ import annotations

import argparse
import json
import os
import sys

from llmexplore.commands import Handler, command
from llmexplore.errors import ConfigError
from llmexplore.lm.arguments import add_lm_arguments, lm_config_from_args
from llmexplore.number_input import fraction_type, number_type, port_type, seconds_type, seed_type


@command("lm", "language models: annotate pair datasets, serve a model over HTTP, list prompts, inspect caches")
def _lm(p: argparse.ArgumentParser) -> Handler:
    from llmexplore.methods.motif.cli import add_annotation_arguments, run_annotation  # the job is Motif's

    sub = p.add_subparsers(dest="lm_command", required=True, metavar="SUBCOMMAND")

    a = sub.add_parser("annotate", help="label a Motif pair dataset with LM preferences (resumable)",
                       description="Label a Motif pair dataset with LM preferences. Rerunning resumes.")
    a.add_argument("dataset", help="pair dataset folder (data/, info/, preference/)")
    add_annotation_arguments(a)
    a.set_defaults(_lm_handler=lambda args: run_annotation(args, args.dataset))

    s = sub.add_parser("serve", help="serve a backend through an OpenAI-compatible HTTP API",
                       description="Serve a backend (default: the oracle) through an OpenAI-compatible HTTP API.")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    s.add_argument("--port", type=port_type, default=8000, help="0 picks a free port (printed on start)")
    s.add_argument("--model-name", help="name clients use (default: the backend's model id)")
    s.add_argument("--max-batch", type=number_type(int, 1), default=256, help="most prompts per backend call")
    s.add_argument("--max-request-prompts", type=number_type(int, 1), default=4096,
                   help="most prompts in one request (more: HTTP 413)")
    s.add_argument("--max-request-bytes", type=number_type(int, 1), default=32 * 1024 * 1024,
                   help="largest request body in bytes (larger: HTTP 413)")
    f = s.add_argument_group("fault injection (for tests)")
    f.add_argument("--slow-rate", type=fraction_type, default=0.0, help="fraction of requests answered late")
    f.add_argument("--slow-seconds", type=seconds_type, default=2.0, help="how late a slow answer is")
    f.add_argument("--error-rate", type=fraction_type, default=0.0, help="fraction answered with HTTP 500")
    f.add_argument("--rate-limit-rate", type=fraction_type, default=0.0, help="fraction answered with HTTP 429")
    f.add_argument("--drop-rate", type=fraction_type, default=0.0, help="fraction whose connection is dropped")
    f.add_argument("--garbage-rate", type=fraction_type, default=0.0, help="fraction answered 200 with a garbage body")
    f.add_argument("--latency", type=seconds_type, default=0.0, help="seconds added to every completion request")
    f.add_argument("--fault-seed", type=seed_type, default=0, help="seed of the fault draws")
    add_lm_arguments(s)
    s.set_defaults(_lm_handler=_serve)

    pr = sub.add_parser("prompts", help="list prompt templates and their fields")
    pr.add_argument("--prompts", help="prompt template folder (default: configs/prompts)")
    pr.set_defaults(_lm_handler=_prompts)

    c = sub.add_parser("cache", help="entries per model in a completion cache")
    c.add_argument("path", help="the cache's SQLite file")
    c.set_defaults(_lm_handler=_cache)

    o = sub.add_parser("oracle", help="the embedded oracle's rule versions")
    o.add_argument("--version", action="store_true",
                   help="list every rule version: what changed, why, and whether it is frozen (a committed "
                        "table used it), with the current rules' digest")
    o.set_defaults(_lm_handler=_oracle)

    def handle(args: argparse.Namespace) -> int:
        return args._lm_handler(args)

    return handle


def _oracle(args: argparse.Namespace) -> int:
    from llmexplore.lm.oracle import ORACLE_VERSION
    from llmexplore.lm.oracle.versions import VERSIONS, rules_digest

    current = rules_digest()
    print(f"current rules: version {ORACLE_VERSION} (model id llmexplore-oracle-{ORACLE_VERSION}), digest {current}")
    if not args.version:
        print("every version, what changed and why: llmexplore lm oracle --version")
        return 0
    for entry in VERSIONS:
        state = ("frozen" if entry.frozen_digest else "current, not frozen yet" if entry.version == ORACLE_VERSION
                 else "history: its rules are in that commit")
        if entry.version == ORACLE_VERSION and entry.frozen_digest and entry.frozen_digest != current:
            state = "frozen, but the rules in this checkout differ from it"
        print(f"\nversion {entry.version} ({entry.commit}; {state})\n  changes: {entry.changes}\n"
              f"  why: {entry.evidence}")
    return 0


def client_flags(host: str, port: int, model_name: str, can_score: bool) -> str:
    """The exact ``--lm`` flags a run needs to use this server: scoring answer options where the backend
    returns prompt log-probabilities (works with base models), else generated answers."""
    import shlex

    reach = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host  # a wildcard address is not one to connect to
    pairs = ["backend=openai", f"base_url=http://{reach}:{port}/v1", f"model={model_name}"]
    pairs += ["endpoint=completion", "answer=score"] if can_score else []
    return "--lm " + shlex.quote(",".join(pairs))


def _serve(args: argparse.Namespace) -> int:
    from llmexplore.lm.backends import make_lm
    from llmexplore.lm.server import Faults, LMServer, serve_forever
    from llmexplore.lm.server_requests import RequestLimits

    faults = Faults(slow_rate=args.slow_rate, slow_s=args.slow_seconds, error_rate=args.error_rate,
                    rate_limit_rate=args.rate_limit_rate, drop_rate=args.drop_rate, garbage_rate=args.garbage_rate,
                    latency_s=args.latency, seed=args.fault_seed)
    for name in ("slow_rate", "error_rate", "rate_limit_rate", "drop_rate", "garbage_rate"):
        if not 0.0 <= getattr(faults, name) <= 1.0:
            raise ConfigError(f"--{name.replace('_', '-')} must be between 0 and 1")
    total = faults.slow_rate + faults.error_rate + faults.rate_limit_rate + faults.drop_rate + faults.garbage_rate
    if total > 1.0:  # one draw per request picks at most one fault: the rates are shares of the requests
        raise ConfigError(f"the fault rates add up to {total:g}; they are shares of the requests and must sum to at "
                          "most 1 (lower --slow-rate, --error-rate, --rate-limit-rate, --drop-rate or --garbage-rate)")
    for name in ("max_batch", "max_request_prompts", "max_request_bytes"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    limits = RequestLimits(max_prompts=args.max_request_prompts, max_bytes=args.max_request_bytes)
    lm = make_lm(lm_config_from_args(args))
    server = LMServer(lm, model_name=args.model_name, faults=faults, max_batch=args.max_batch, limits=limits)

    def ready(port: int) -> None:
        print(f"llmexplore lm serve: listening on http://{args.host}:{port}/v1 (model {server.model_name})",
              flush=True)
        print(f"served model name: {server.model_name}", flush=True)
        print("a run reaches it with: " + client_flags(args.host, port, server.model_name,
                                                       lm.supports_prompt_logprobs), flush=True)

    try:
        serve_forever(server, args.host, args.port, ready)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
                          hint="choose another --port (0 picks a free one)") from None
    finally:
        if not server.busy:
            lm.close()
    if server.busy:
        # a model call cannot be interrupted, and Python would wait for it at exit (minutes for a large
        # batch on a CPU); the cache holds every answer already returned, the running batch's are dropped
        print("llmexplore lm serve: stopped; the backend batch that was running is dropped", file=sys.stderr,
              flush=True)
        sys.stdout.flush()
        os._exit(0)
    return 0


def _prompts(args: argparse.Namespace) -> int:
    from llmexplore.lm.oracle import oracle_kinds
    from llmexplore.lm.templates import PromptLibrary

    lib = PromptLibrary(args.prompts)
    print(f"prompt folder: {lib.root}")
    answered = set(oracle_kinds())
    for t in lib.templates():
        kind = t.name.split("/")[0]
        print(f"  {t.name:36s} fields: {', '.join(t.fields):40s} oracle: {'yes' if kind in answered else 'no'}")
    return 0


def _cache(args: argparse.Namespace) -> int:
    from pathlib import Path

    from llmexplore.lm.cache import LMCache

    if not Path(args.path).is_file():
        raise ConfigError(f"no cache file at {args.path}")
    cache = LMCache(args.path)
    print(json.dumps({"path": args.path, "entries": cache.entries(), "models": cache.models()}, indent=2))
    cache.close()
    return 0


