"""The sub-command registry of the ``llmexplore`` command, and the table every listing prints.

A feature adds a sub-command in its own command module with ``@command(name, help)``; the hub
(``llmexplore/cli.py``) imports those modules, so they register themselves, and builds the parser
from this registry. Command modules import this module, never the hub: the arrows point one way.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Callable

Handler = Callable[[argparse.Namespace], int]
#: adds a sub-command's arguments to its parser and returns the function that runs it
Setup = Callable[[argparse.ArgumentParser], Handler]


@dataclass(frozen=True)
class Command:
    """One sub-command: its name and help line (shown by ``llmexplore --help`` without setting it up)."""

    name: str
    help: str
    setup: Setup
    #: the module that registered it, named in the error when two modules take one name
    module: str


_COMMANDS: dict[str, Command] = {}


def command(name: str, help: str) -> Callable[[Setup], Setup]:
    """Register a sub-command: the decorated function adds its arguments and returns its handler.

    Registering a name again from the module that took it (a re-import) replaces it; another module
    taking a name already in use is refused, so a plugin cannot silently hide a built-in command.
    """

    def decorate(setup: Setup) -> Setup:
        known = _COMMANDS.get(name)
        if known is not None and known.module != setup.__module__:
            raise ValueError(f"sub-command '{name}' of {setup.__module__} is already registered by {known.module}")
        _COMMANDS[name] = Command(name, help, setup, setup.__module__)
        return setup

    return decorate


def registered_commands() -> list[Command]:
    """Every registered sub-command, in the order they were first registered (the order of ``--help``)."""
    return list(_COMMANDS.values())


def print_table(header: list[str], rows: list[list[Any]]) -> None:
    """A rich table on a terminal; elsewhere (a pipe, a file) a Markdown table with every row whole."""
    if not sys.stdout.isatty():
        from tabulate import tabulate

        print(tabulate([[str(c) for c in row] for row in rows], headers=header, tablefmt="github"))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*header, show_lines=False)
    for row in rows:
        table.add_row(*[str(c) for c in row])
    Console().print(table)
