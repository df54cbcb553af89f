"""The sub-command registry: command modules add to it without importing the hub, every command's --help works,
and a second module cannot take a name already in use."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from llmexplore import commands
from llmexplore.cli import main
from tests.unit.test_import_layers import PACKAGE, _module_names, imported_modules

#: every sub-command and the steps of those that have them
COMMANDS = {"run": (), "envs": (), "methods": (), "schema": (), "grid": (), "leaderboard": (), "bench": (),
            "data": ("list", "fetch"), "evaluate": (), "visualize": (), "lm": ("annotate", "serve", "prompts", "cache"),
            "motif": ("collect", "annotate", "train-reward"), "maestro": ("generate", "check", "tasks", "evaluate"),
            "options": ()}


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0, argv
    return out.getvalue()


def test_the_hub_lists_every_command_in_its_order_whichever_module_was_imported_first():
    import llmexplore.lm.cli  # noqa: F401  registers `lm` before the hub's own commands

    top = _help(["--help"])
    listed = [line.split()[0] for line in top.splitlines()
              if line.startswith("    ") and not line.startswith("     ") and line.split()[0] in COMMANDS]
    assert listed == list(COMMANDS)
    assert {c.name for c in commands.registered_commands()} == set(COMMANDS)


@pytest.mark.parametrize("argv", [[name] for name in COMMANDS] + [[name, step] for name, steps in COMMANDS.items()
                                                                   for step in steps], ids=" ".join)
def test_every_command_and_step_shows_its_help(argv):
    assert f"usage: llmexplore {' '.join(argv)}" in _help([*argv, "--help"])


def test_no_module_imports_the_hub():
    """Command modules register with llmexplore.commands; only ``python -m llmexplore`` imports the hub."""
    known = _module_names(PACKAGE)
    importers = sorted(str(path.relative_to(PACKAGE.parent)) for path in PACKAGE.rglob("*.py")
                       if path.name != "__main__.py"
                       and any(target == ("cli",) for _, target in imported_modules(path, PACKAGE, known)))
    assert importers == []


def test_a_second_module_cannot_take_a_command_name(monkeypatch):
    monkeypatch.setattr(commands, "_COMMANDS", {})

    def setup(p: argparse.ArgumentParser):
        return lambda args: 0

    commands.command("probe", "first")(setup)
    commands.command("probe", "again, from the same module (a re-import)")(setup)
    assert [c.help for c in commands.registered_commands()] == ["again, from the same module (a re-import)"]

    def other(p: argparse.ArgumentParser):
        return lambda args: 0

    other.__module__ = "someplugin.cli"
    with pytest.raises(ValueError, match="'probe' of someplugin.cli is already registered by"):
        commands.command("probe", "a plugin's")(other)
