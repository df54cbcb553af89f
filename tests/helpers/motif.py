"""A deterministic stand-in for the LM annotator in tests (phase 2 uses the LM oracle)."""

from __future__ import annotations

import numpy as np

from llmexplore.methods.motif.dataset import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, PairDataset

RULE_ANNOTATION = "rule_msg_test_default"


def rule_value(caption: str) -> int:
    """Bumping into walls and rock is bad; pets and things seen are good; the rest is neutral."""
    text = caption.lower()
    if "wall" in text or "stone" in text:
        return -1
    if "dog" in text or "kitten" in text or "see" in text:
        return 1
    return 0


def label_with_rule(dataset: PairDataset, name: str = RULE_ANNOTATION) -> np.ndarray:
    labels = dataset.open_labels(name)
    for i, (a, b) in enumerate(dataset.captions(range(len(dataset)))):
        va, vb = rule_value(a), rule_value(b)
        labels[i] = LABEL_TIE if va == vb else (LABEL_FIRST if va > vb else LABEL_SECOND)
    labels.flush()
    return np.asarray(labels)
