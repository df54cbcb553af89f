"""sf_private.PIECES names every sample-factory method our classes override and every attribute they set.

A release that renamed ``Learner.train`` or stopped setting ``Runner.status`` would leave our override
uncalled or our assignment unread, silently; ``check_sample_factory`` catches that only for the pieces
it lists. This test reads our subclasses of sample-factory's classes (the learner, its worker, the
runners, the observers, every family's encoder) and fails on an override or assignment not listed.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

from llmexplore.agents.sf_private import PIECES, PrivatePiece


def our_sample_factory_classes() -> list[type]:
    """Our classes with a sample-factory class among their bases, built-in families' encoders included."""
    from llmexplore.agents import learner, stop_requests, training_watch
    from llmexplore.envs.family import import_path
    from llmexplore.envs.registry import families
    from llmexplore.networks import encoders

    found = [learner.IntrinsicLearner, learner.IntrinsicLearnerWorker, learner.SerialTrainer,
             learner.ParallelTrainer, training_watch.TrainingWatch, type(stop_requests.stop_observer()),
             encoders.GenericEncoder]
    found += [import_path(network.encoder) for family in families() for network in family.networks.values()]
    return found




def _sample_factory_bases(cls: type) -> list[type]:
    return [base for base in cls.__mro__ if base.__module__.startswith("sample_factory.")]


def _listed(name: str, cls: type) -> bool:
    owners = {f"{base.__module__}:{base.__qualname__}" for base in _sample_factory_bases(cls)}
    return any(piece.name == name and piece.owner in owners for piece in PIECES)


def _assigned_on_self(cls: type) -> set[str]:
    """Names a class's own code assigns as ``self.<name> = ...``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    return {target.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"}


def _sample_factory_sets(name: str, cls: type) -> bool:
    pattern = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]*)?=")
    return any(pattern.search(inspect.getsource(base)) for base in _sample_factory_bases(cls))


def unlisted(classes: list[type], ours: str = "llmexplore.") -> list[str]:
    """``Class.name (what)`` for each sample-factory method overridden or attribute set but not in PIECES, in
    the classes of the MRO whose module starts with ``ours``."""
    problems = set()
    for cls in classes:
        sf_names = {name for base in _sample_factory_bases(cls) for name in vars(base)}
        for own in (base for base in cls.__mro__ if base.__module__.startswith(ours)):
            for name, value in vars(own).items():
                overrides = name in sf_names and (name == "__init__" or not name.startswith("__"))
                if overrides and callable(getattr(value, "__func__", value)) and not _listed(name, cls):
                    problems.add(f"{own.__name__}.{name} (overrides)")
            for name in _assigned_on_self(own):
                if _sample_factory_sets(name, cls) and not _listed(name, cls):
                    problems.add(f"{own.__name__}.{name} (sets)")
    return sorted(problems)


def test_every_override_and_assignment_of_ours_is_a_checked_piece():
    assert unlisted(our_sample_factory_classes()) == []


def test_the_check_sees_an_unlisted_override_and_assignment(monkeypatch):
    from sample_factory.algo.learning.learner import Learner

    class Probe(Learner):
        def optimizer_step(self):  # not a method of Learner: ignored
            pass

        def _after_optimizer_step(self):
            self.train_step = 0

    assert unlisted([Probe], ours=__name__) == ["Probe._after_optimizer_step (overrides)", "Probe.train_step (sets)"]
    monkeypatch.setattr("tests.unit.test_sf_overrides.PIECES", (
        PrivatePiece("sample_factory.algo.learning.learner:Learner", "_after_optimizer_step", "method",
                     ("self",), "probe"),
        PrivatePiece("sample_factory.algo.learning.learner:Learner", "train_step", "attribute", (), "probe")))
    assert unlisted([Probe], ours=__name__) == []
