"""Oracle labels for Motif tests: the real annotation job with the LM layer's oracle backend."""

from __future__ import annotations

from pathlib import Path

from llmexplore.methods.motif.annotate import AnnotationReport, annotate_from_config
from llmexplore.lm.config import MEMORY_CACHE, LMConfig
from llmexplore.lm.oracle import ORACLE_VERSION

#: the oracle's annotator name (``annotator_name`` of its model id ``llmexplore-oracle-<rule version>``)
ORACLE_ANNOTATOR = f"llmexplore-oracle-{ORACLE_VERSION}"
ORACLE_ANNOTATION = f"{ORACLE_ANNOTATOR}_msg_defaultgoal_default"


def label_with_oracle(dataset: str | Path, goal: str = "defaultgoal", version: str = "default") -> AnnotationReport:
    """Annotate every pair of ``dataset`` for ``goal`` (no completion cache kept on disk)."""
    report = annotate_from_config(dataset, LMConfig(cache=MEMORY_CACHE), goal=goal, version=version)
    if report.counts.get("unknown", 0):
        raise AssertionError(f"the oracle left {report.counts['unknown']} pairs unlabelled: {report.as_dict()}")
    return report
