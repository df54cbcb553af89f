"""The run settings every sample-factory process needs, carried on ``cfg.llmexplore``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from llmexplore.envs import get_task
from llmexplore.methods import MethodContext, get_method, parse_options


@dataclass(frozen=True)
class RunSettings:
    task: str
    method: str
    seed: int
    run_dir: str
    ext_coef: float
    int_coef: float
    method_options: Mapping[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    lm: Mapping[str, Any] = field(default_factory=dict)
    encoder: str = "generic"
    policy_keys: tuple[str, ...] = ()
    #: fine-tuning: policy weights to start from, and which parts to re-initialise
    init_checkpoint: str | None = None
    reset_parts: tuple[str, ...] = ()
    #: the run's budget in env steps, and the metrics cadence (None: about 100 rows over the budget)
    budget: int = 0
    metrics_every_steps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["method_options"] = dict(self.method_options)
        d["lm"] = dict(self.lm)
        d["policy_keys"] = list(self.policy_keys)
        d["reset_parts"] = list(self.reset_parts)
        return d

    @classmethod
    def from_cfg(cls, cfg: Any) -> "RunSettings":
        d = dict(cfg.llmexplore)
        d["policy_keys"] = tuple(d.get("policy_keys", ()))
        d["reset_parts"] = tuple(d.get("reset_parts", ()))
        return cls(**d)

    def method_context(self) -> MethodContext:
        return MethodContext(
            task=get_task(self.task), seed=self.seed, run_dir=Path(self.run_dir), device=self.device, lm=dict(self.lm)
        )

    def method_class_and_options(self):
        cls = get_method(self.method)
        return cls, parse_options(cls, self.method_options)
