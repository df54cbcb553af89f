"""``llmexplore options``: every key ``run`` takes after ``-t``, ``-o`` and ``--lm``, with defaults.

The keys, defaults, ranges and descriptions are read from the pydantic models that check them
(TrainConfig, a method's Options, LMConfig), so this listing cannot drift from what a run accepts.
"""

from __future__ import annotations

import argparse
import json
import types
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from llmexplore.commands import Handler, command

if TYPE_CHECKING:  # `llmexplore --help` loads this module and must stay light
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def value_range(field: "FieldInfo") -> str:
    """The values a field accepts, in short: choices of a Literal, bounds of a number ("" when free)."""
    choices = [arg for arg in _flat_args(field.annotation) if arg is not type(None)]
    literal = [c for arg in choices if get_origin(arg) is Literal for c in get_args(arg)]
    if literal:
        return " | ".join(str(c) for c in literal)
    bounds = [f"{sign} {getattr(meta, name)}" for meta in field.metadata for name, sign in _BOUNDS
              if getattr(meta, name, None) is not None]
    return ", ".join(bounds)


def _flat_args(annotation: Any) -> list[Any]:
    """The members of a union (``X | None``), or the annotation itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for arg in get_args(annotation) for a in _flat_args(arg)]
    return [annotation]


def option_rows(model: "type[BaseModel]", defaults: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per field of ``model``: key, default (``defaults`` fill unset ones), accepted values, meaning."""
    rows = []
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if default is None and defaults and defaults.get(name) is not None:
            default = defaults[name]
        rows.append({"key": name, "default": default, "values": value_range(field),
                     "description": field.description or ""})
    return rows


def train_defaults(task: str | None) -> dict[str, Any]:
    """The training defaults a task's family fills in for keys left unset (none without a task)."""
    if task is None:
        return {}
    from llmexplore.agents.train_config import family_defaults
    from llmexplore.envs.registry import get_task

    return family_defaults(get_task(task).family)


def sections(method: str | None, task: str | None) -> dict[str, Any]:
    """The three groups of keys: training (``-t``), the method's (``-o``) and the language model's (``--lm``)."""
    from llmexplore.agents.train_config import TrainConfig
    from llmexplore.lm.config import LMConfig

    out: dict[str, Any] = {"train": option_rows(TrainConfig, train_defaults(task))}
    if task is not None:
        out["train"] = with_family_choices(out["train"], task)
    if method is not None:
        from llmexplore.methods import get_method

        out["method"] = {"name": method, "options": option_rows(get_method(method).Options)}
    out["lm"] = option_rows(LMConfig)
    if task is not None:
        out["family"] = family_offers(task)
    return out


def with_family_choices(rows: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """The rows with ``network`` and ``preset`` accepting what the task's family offers (the names a run is
    checked against, ``train_config.network_encoder``/``preset_settings``), not every family's names."""
    offers = family_offers(task)
    choices = {"network": list(offers["networks"]), "preset": list(offers["presets"])}
    return [{**row, "values": " | ".join(choices[row["key"]]) or "(none)"} if row["key"] in choices else row
            for row in rows]


def family_offers(task: str) -> dict[str, Any]:
    """The networks (``-t network=``) and presets (``-t preset=``) the task's family offers, with what each is."""
    from llmexplore.envs import get_task
    from llmexplore.envs.registry import get_family

    family = get_family(get_task(task).family)
    return {"name": family.name,
            "networks": {key: network.description for key, network in family.networks.items()},
            "presets": {key: family.preset_notes.get(key, "") for key in family.presets}}


def _show(value: Any) -> str:
    if value is None:
        return "-"
    return json.dumps(value) if isinstance(value, (dict, list, tuple)) else str(value)


def print_rows(title: str, rows: list[dict[str, Any]]) -> None:
    """A titled, aligned listing: key, default, accepted values, then the description."""
    print(title)
    if not rows:
        print("  (none)")
    cells = [(r["key"], _show(r["default"]), r["values"]) for r in rows]
    widths = [max((len(c[i]) for c in cells), default=0) for i in range(3)]
    for (key, default, values), row in zip(cells, rows):
        print(f"  {key:<{widths[0]}}  {default:<{widths[1]}}  {values:<{widths[2]}}  {row['description']}")
    print()


@command("options", "list every -t (training), -o (method) and --lm (language model) key of `run`, with defaults")
def _options(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--method", help="also list this method's -o keys (`llmexplore methods` names them)")
    p.add_argument("--task", help="show the training defaults of this task's family where the generic ones "
                                  "are unset ('-' without a task: the family decides)")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")

    def handle(args: argparse.Namespace) -> int:
        listing = sections(args.method, args.task)
        if args.json:
            print(json.dumps(listing, indent=2, default=str))
            return 0
        family = f" ({args.task}'s family defaults)" if args.task else ""
        print_rows(f"-t / --train KEY=VALUE: training{family}  [key, default, values, meaning]", listing["train"])
        if "family" in listing:
            offers = listing["family"]
            for key in ("networks", "presets"):
                print(f"-t {key[:-1]}=NAME: the {key} of the {offers['name']} family")
                width = max((len(name) for name in offers[key]), default=0)
                for name, what in offers[key].items():
                    print(f"  {name:<{width}}  {what}")
                print("  (none)\n" if not offers[key] else "")
        if "method" in listing:
            print_rows(f"-o / --option KEY=VALUE: method {args.method}", listing["method"]["options"])
        else:
            print("-o / --option KEY=VALUE: a method's options; add --method NAME to list them\n")
        print_rows("--lm KEY=VALUE: language model", listing["lm"])
        return 0

    return handle
