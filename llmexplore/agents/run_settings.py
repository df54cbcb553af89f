"""The resolved run as one process of the engine sees it: where its folder is and which device it uses.

sample-factory hands every process its config; ``cfg.llmexplore`` carries the resolved run as the run
folder's ``resolved.json`` holds it, read back here without filling in anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.methods import IntrinsicReward, MethodContext, MethodOptions

#: keys of ``cfg.llmexplore``
RUN_KEY, RUN_DIR_KEY, DEVICE_KEY = "run", "run_dir", "device"


@dataclass(frozen=True)
class RunSettings:
    """The resolved run (``run``: read its facts there, e.g. ``settings.run.task``), the folder it writes
    to and the device of this process."""

    run: ResolvedRun
    run_dir: str
    #: this process's torch device (training: the run's; rolling out a checkpoint: the CPU)
    device: str = "cpu"

    def with_run(self, **changes: Any) -> "RunSettings":
        """The same process on a run that differs in ``changes`` (e.g. another task to roll out on)."""
        return replace(self, run=self.run.model_copy(update=changes))

    def to_dict(self) -> dict[str, Any]:
        """``cfg.llmexplore``: JSON, so sample-factory can save it with its config."""
        return {RUN_KEY: self.run.model_dump(mode="json"), RUN_DIR_KEY: self.run_dir, DEVICE_KEY: self.device}

    @classmethod
    def from_cfg(cls, cfg: Any) -> "RunSettings":
        """Read back what ``to_dict`` put into a sample-factory config (``cfg.llmexplore``)."""
        return cls.from_dict(dict(cfg.llmexplore))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunSettings":
        """The inverse of ``to_dict``, filling nothing in but a missing device (the CPU); settings an older
        version wrote, without a resolved run, raise ConfigError."""
        if RUN_KEY not in data:
            raise ConfigError("these run settings were written by an llmexplore version before resolved runs "
                              "(no 'run' entry)", hint="train the run again with this version")
        return cls(run=ResolvedRun.model_validate(data[RUN_KEY]), run_dir=str(data[RUN_DIR_KEY]),
                   device=str(data.get(DEVICE_KEY, "cpu")))

    def method_context(self) -> "MethodContext":
        """What the method is built with: the run's task, seed, folder, LM settings; this process's device."""
        from llmexplore.envs import get_task
        from llmexplore.methods import MethodContext

        return MethodContext(task=get_task(self.run.task), seed=self.run.seed, run_dir=Path(self.run_dir),
                             device=self.device, lm=self.run.lm, run=self.run)

    def method_class_and_options(self) -> "tuple[type[IntrinsicReward], MethodOptions]":
        """The method's class and its options, typed from the complete option values the run holds."""
        from llmexplore.methods import get_method

        cls = get_method(self.run.method)
        return cls, cls.Options(**self.run.method_options)
