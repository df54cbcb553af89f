"""sample-factory's private API: the installed version has every piece we use, and only sf_private.py uses them."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from llmexplore.agents import sf_private
from llmexplore.agents.sf_private import PIECES, SUPPORTED_VERSION, SampleFactoryMismatch

PACKAGE = Path(sf_private.__file__).resolve().parents[1]


def test_the_installed_sample_factory_has_every_private_piece_we_use():
    problems = {piece.label: sf_private.piece_problem(piece) for piece in PIECES}
    assert {label: why for label, why in problems.items() if why} == {}
    sf_private.check_sample_factory()


def test_a_method_whose_parameters_changed_is_named_with_the_supported_version(monkeypatch):
    from sample_factory.algo.learning.learner import Learner

    def prepare_batch(self, batch, device):  # as a later release might define it
        raise AssertionError("never called")

    monkeypatch.setattr(Learner, "_prepare_batch", prepare_batch)
    with pytest.raises(SampleFactoryMismatch) as caught:
        sf_private.check_sample_factory()
    message = str(caught.value)
    assert "Learner._prepare_batch takes (self, batch, device), expected (self, batch)" in message
    assert f"sample-factory {SUPPORTED_VERSION}" in message and f"=={SUPPORTED_VERSION}" in message
    assert "Learner._load_state" not in message  # only what differs


def test_a_missing_method_attribute_or_signal_is_named():
    by_kind = {piece.kind: piece for piece in PIECES}
    for kind, piece in by_kind.items():
        gone = dataclasses.replace(piece, name="no_such_part")
        problem = sf_private.piece_problem(gone)
        assert problem is not None and "no_such_part" in problem, kind


def test_another_version_is_refused_even_when_the_pieces_match(monkeypatch):
    monkeypatch.setattr(sf_private, "installed_version", lambda: "2.2.0")
    with pytest.raises(SampleFactoryMismatch, match=r"version 2\.2\.0 is installed"):
        sf_private.check_sample_factory()


#: names too common to scan for: our watchdog and grid launcher have ``processes`` of their own, an
#: evaluation record has ``timing``; a constructor is everybody's
COMMON_NAMES = {"__init__", "processes", "timing"}


def test_no_other_module_uses_sample_factorys_private_names():
    names, found = {piece.name for piece in PIECES if piece.private} - COMMON_NAMES, []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "sf_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            used = (node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
            if used in names:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {used}")
    assert found == [], "use sample-factory's private parts through llmexplore/agents/sf_private.py"
