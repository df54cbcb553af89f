"""What the sandbox costs per call of generated code, and what MaestroMotif costs per env step.

Prints medians over ``--repeats`` timings of:

* each reference function (the oracle's code) called through ``SandboxedCode`` against the same
  source compiled and called as plain Python (the ratio is the metering overhead);
* ``check_code`` (static validation, compilation and the probe runs) per file, with the probe runs
  in a forked child under OS limits (the default outer guard) and in-process (``isolate=False``);
* one call of generated code in-process against one call through the outer guard
  (``run_isolated``: a fork per call, RLIMIT_AS/CPU/NOFILE, killed on time-out);
* one NetHack step with and without MaestroMotif's actor side (interface view, termination code,
  skill switching), random actions, in one process.

    PYTHONPATH=$PWD python tests/perf/maestro_sandbox.py [--calls 20000] [--steps 3000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from llmexplore.agents.train_config import TrainConfig  # noqa: E402
from llmexplore.agents.resolved_run import ResolvedRun  # noqa: E402
from llmexplore.agents.run_settings import RunSettings  # noqa: E402
from llmexplore.agents.sf_env import build_env  # noqa: E402
from llmexplore.lm.config import LMConfig  # noqa: E402
from llmexplore.lm.oracle import OracleLM  # noqa: E402
from llmexplore.methods.maestro.oracle import REFERENCE_DIR  # noqa: E402
from llmexplore.methods.maestro.checking import check_code, probe_inputs  # noqa: E402
from llmexplore.methods.maestro.codegen import generate_code, skill_targets, training_target  # noqa: E402
from llmexplore.methods.maestro.sandbox import SandboxedCode  # noqa: E402
from llmexplore.methods.maestro.sandbox.isolation import run_isolated  # noqa: E402
from llmexplore.methods.maestro.skills import INITIATION, POLICY, TERMINATION  # noqa: E402


def per_call_us(fn, args_list, calls: int) -> float:
    n = len(args_list)
    started = time.perf_counter()
    for i in range(calls):
        fn(*args_list[i % n])
    return (time.perf_counter() - started) / calls * 1e6


def median(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def step_rate(env, steps: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    started = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - started) / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=3_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    print("per call (median of repeats), sandboxed vs plain Python, on the probe states:")
    for path in sorted(REFERENCE_DIR.rglob("*.py")):
        specs = (INITIATION, TERMINATION) if path.parent.name == "skills" else (POLICY,)
        source = path.read_text()
        code = SandboxedCode(source, specs)
        plain: dict = {}
        exec(compile(source, str(path), "exec"), plain)
        for spec in specs:
            inputs = probe_inputs(spec)
            boxed = median(
                lambda: per_call_us(lambda *a: code.call(spec.name, *a), inputs, args.calls), args.repeats
            )
            raw = median(lambda: per_call_us(plain[spec.name], inputs, args.calls), args.repeats)
            name = f"{path.relative_to(REFERENCE_DIR)}:{spec.name}"
            print(f"  {name:52s} {boxed:7.2f} us  plain {raw:6.2f} us  x{boxed / raw:5.1f}")
        checked = median(lambda: _time(lambda: check_code(source, specs)), args.repeats)
        inproc = median(lambda: _time(lambda: check_code(source, specs, isolate=False)), args.repeats)
        print(f"  {'':52s} check_code {checked * 1000:6.2f} ms guarded, {inproc * 1000:6.2f} ms in-process")
        spec, inputs = specs[0], probe_inputs(specs[0])
        guarded = median(lambda: _time(lambda: run_isolated(lambda: code.call(spec.name, *inputs[0]))),
                         args.repeats)
        metered = median(lambda: per_call_us(lambda *a: code.call(spec.name, *a), inputs, 2000), args.repeats)
        print(f"  {'':52s} one call: in-process {metered:7.2f} us, guarded child {guarded * 1e6:9.1f} us "
              f"(x{guarded * 1e6 / metered:,.0f})")

    with tempfile.TemporaryDirectory() as tmp:
        generate_code(tmp, OracleLM(), skill_targets() + [training_target()])
        base = _env_settings("none", tmp, {})
        maestro = _env_settings("maestro", tmp, {"reward_models": "unused", "code": tmp})
        for label, settings in (("none", base), ("maestro", maestro)):
            env = build_env(settings)
            try:
                us = median(lambda: step_rate(env, args.steps), args.repeats)
            finally:
                env.close()
            print(f"env step with method {label:8s}: {us:7.1f} us ({1e6 / us:,.0f} steps/s in one process)")


def _env_settings(method: str, run_dir: str, options: dict) -> RunSettings:
    """A NetHack Score run made by hand, enough to build its env (maestro's reward models are never read)."""
    run = ResolvedRun(method=method, task="nethack:score", seed=0, steps=10_000, ext_coef=1.0, int_coef=0.0,
                      method_options=options, train=TrainConfig().resolved("nethack"), lm=LMConfig(),
                      label=method,
                      encoder="nethack", policy_keys=("skill",) if method == "maestro" else ())
    return RunSettings(run=run, run_dir=str(run_dir), device=run.device)


def _time(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
