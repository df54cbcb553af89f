"""Grid files: methods x tasks x seeds x settings, expanded into validated cells.

A grid file (YAML) has a ``name``, optional ``suite`` (protocol, tasks, budget,
resources), ``defaults`` (run-spec fields for every cell) and ``blocks``; each block
expands independently and the grid is their union:

    blocks:
      - set:  {method: rnd}                       # fixed values
        vary: {task: [nethack:score, crafter:reward-free], seed: [0, 1]}   # cartesian product
        tied:                                      # alternatives that set several keys together
          - {label: motif-gold, method_options.reward_model: models/gold}
          - {label: motif-combat, method_options.reward_model: models/combat}

Keys may be dotted (``train.batch_size``). Without ``blocks``, top-level ``set``, ``vary``
and ``tied`` form one block. ``lm`` names the language model every cell talks to (one
server for the whole grid), and ``ray`` / ``slurm`` hold options of those backends
(``backend_options.py``; ``-b key=value`` overrides them). Validation reports every
problem of the file at once, each with its line, before anything runs. The accepted keys
and their models are in ``grid_schema.py``; ``docs/GRIDS.md`` is their reference for users.

Resources: ``suite.resources`` says what one cell needs. A cell that asks for GPUs trains
on one (``train.device`` becomes ``gpu``; ``cpu`` there is an error), and a cell whose
``train.device`` is ``gpu`` asks for at least one GPU, so schedulers allocate what the
cell will use.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from llmexplore.benchmarks.grids import yaml_lines
from llmexplore.benchmarks.grids.backend_options import BACKEND_SECTIONS
from llmexplore.benchmarks.grids.grid_schema import BLOCK_KEYS, MAX_CELLS, PARENT_METHOD, TOP_KEYS, Resources, Suite
from llmexplore.benchmarks.run.budget import GRID_STEPS
from llmexplore.benchmarks.run.spec import ParentSpec, ResolvedRun, RunSpec, cell_id, resolve, validation_problems
from llmexplore.errors import ConfigError, shown
from llmexplore.lm.config import LMConfig
from llmexplore.paths import inside

@dataclass
class Cell:
    """One run of a grid."""

    id: str
    spec: RunSpec
    run_dir: Path
    resources: Resources
    lines: dict[str, int] = field(default_factory=dict)
    parent_id: str | None = None
    #: the spec resolved once, when the grid file is checked; the runner writes it to the cell's folder
    #: (``resolved.json``), which the cell reads as is. A fine-tuning cell's parent checkpoint is chosen
    #: when its parent has finished (``spec.with_parent_checkpoint``).
    run: ResolvedRun | None = None

    @property
    def label(self) -> str:
        """The cell's row name in tables (the method's name unless the grid gave a label)."""
        return self.spec.label or self.spec.method


@dataclass
class Grid:
    name: str
    path: Path
    out_dir: Path
    suite: Suite
    cells: list[Cell]
    lm: LMConfig | None = None
    description: str = ""
    #: backend name -> the options its grid-file section sets (validated; the command line may add more)
    backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def cell(self, cell_id: str) -> Cell:
        """The cell with this id."""
        return next(c for c in self.cells if c.id == cell_id)


def safe_name(text: str) -> str:
    """``text`` as a file-name part: letters, digits and ``._+-`` only."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_") or "x"


def cell_dir(out_dir: Path, label: str, task: str, seed: int) -> Path:
    """``<out>/runs/<label>/<task>/seed<N>``; a label that would not stay a folder inside runs/ is refused."""
    return inside(out_dir / "runs", safe_name(label), safe_name(task.replace(":", "-")), f"seed{seed}",
                  what="the cell's label")


class _Problems:
    def __init__(self, path: Path):
        self.path = path
        self.items: list[tuple[int, str]] = []

    def add(self, line: int, message: str) -> None:
        item = (line, message)
        if item not in self.items:
            self.items.append(item)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        lines = [f"{self.path}:{line}: {msg}" if line else f"{self.path}: {msg}" for line, msg in sorted(self.items)]
        count = len(lines)
        raise ConfigError(f"{count} problem{'s' if count > 1 else ''} in grid file:\n" + "\n".join(lines),
                          problems=[("", line) for line in lines])


def _set_dotted(target: dict, key: str, value: Any) -> None:
    if not isinstance(key, str):  # YAML reads `null:`, `true:` or `5:` as a value, not a name
        raise ConfigError(f"the key {shown(key)} is not a run-spec field name (e.g. seed, train.batch_size)")
    parts = key.split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            raise ConfigError(f"{shown(key)}: {shown(part)} is not a mapping")
    target[parts[-1]] = copy.deepcopy(yaml_lines.plain(value))


def _apply(cell: dict, lines: dict[str, int], values: dict, line_source: Any, problems: _Problems) -> None:
    for key, value in values.items():
        line = yaml_lines.line_of(line_source, key)
        try:
            if isinstance(value, dict) and "." not in str(key) and isinstance(cell.get(key), dict):
                merged = copy.deepcopy(cell[key])
                for sub_key, sub_value in value.items():
                    _set_dotted(merged, sub_key, sub_value)
                cell[key] = merged
            else:
                _set_dotted(cell, key, value)
        except ConfigError as exc:
            problems.add(line, str(exc))
            continue
        lines[key.split(".")[0]] = line


def load_grid(path: str | Path, out_dir: str | Path | None = None) -> Grid:
    """Parse, expand and validate a grid file; raise one ConfigError listing every problem."""
    path = Path(path)
    data = yaml_lines.load(path)
    problems = _Problems(path)
    for key in set(data) - TOP_KEYS:
        problems.add(yaml_lines.line_of(data, key), f"unknown key {shown(key)} (valid: {', '.join(sorted(TOP_KEYS))})")
    name = data.get("name") or path.stem
    try:  # a grid writes under results/<its name> unless told where
        out = Path(out_dir or data.get("output") or inside("results", safe_name(str(name)), what="the grid's name"))
    except ConfigError as exc:
        problems.add(yaml_lines.line_of(data, "name"), f"{exc.message} ({exc.hint})")
        out = Path("results") / "grid"
    out = out.expanduser().resolve()
    suite = _parse_model(Suite, data.get("suite") or {}, data, "suite", problems) or Suite()
    lm = _parse_model(LMConfig, data["lm"], data, "lm", problems) if "lm" in data else None
    backend_options = {}
    for section, model in BACKEND_SECTIONS.items():
        if section in data and _parse_model(model, data[section] or {}, data, section, problems) is not None:
            backend_options[section] = yaml_lines.plain(data[section] or {})
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.add(yaml_lines.line_of(data, "defaults"), "'defaults' must be a mapping of run-spec fields")
        defaults = {}

    blocks = data.get("blocks")
    if blocks is None:
        blocks = yaml_lines.LineList([{k: data[k] for k in ("set", "vary", "tied") if k in data}])
        blocks.lines, blocks.line = [data.line], data.line
    elif beside := [key for key in ("set", "vary", "tied") if key in data]:  # they would be silently ignored
        for key in beside:
            problems.add(yaml_lines.line_of(data, key), f"top-level '{key}' beside 'blocks' would not be "
                                                         "applied: move it into the blocks it belongs to")
    if blocks is not None and not isinstance(blocks, list):
        problems.add(yaml_lines.line_of(data, "blocks"), "'blocks' must be a list of blocks")
        blocks = []

    planned = sum(_planned_cells(block, defaults, suite) for block in blocks if isinstance(block, dict))
    if planned > MAX_CELLS:
        problems.add(0, f"the grid expands to {planned:,} cells, more than the {MAX_CELLS:,} one grid file may "
                        "hold: shorten the `vary` lists, or split the grid into several files (each with its own "
                        "`output`)")
        problems.raise_if_any()

    raw_cells: list[tuple[dict, dict[str, int]]] = []
    for b, block in enumerate(blocks):
        block_line = yaml_lines.line_of(blocks, b)
        if not isinstance(block, dict):
            problems.add(block_line, "a block must be a mapping with 'set', 'vary' and/or 'tied'")
            continue
        for key in set(block) - BLOCK_KEYS:
            problems.add(yaml_lines.line_of(block, key), f"unknown block key {shown(key)} (valid: set, vary, tied)")
        raw_cells.extend(_expand_block(block, block_line, defaults, data, suite, lm, problems))

    cells = _make_cells(raw_cells, out, suite, path, problems)
    problems.raise_if_any()
    return Grid(name=str(name), path=path, out_dir=out, suite=suite, cells=cells, lm=lm,
                description=str(data.get("description") or ""), backend_options=backend_options)


def _planned_cells(block: dict, defaults: dict, suite: Suite) -> int:
    """How many cells a block expands to (pretraining cells; each may add one fine-tuning cell), counted
    before expanding it, so a grid too large to check is refused at once."""
    vary = block.get("vary") if isinstance(block.get("vary"), dict) else {}
    tied = block.get("tied") if isinstance(block.get("tied"), list) else [{}]
    count = max(1, len(tied))
    for values in vary.values():
        count *= max(1, len(values)) if isinstance(values, list) else 1
    fixed = block.get("set") if isinstance(block.get("set"), dict) else {}
    if suite.tasks and not any("task" in part for part in (defaults, fixed, vary)):
        count *= len(suite.tasks)
    return count * (2 if suite.protocol == "pretrain-finetune" else 1)


def _parse_model(model: type[BaseModel], value: Any, parent: Any, key: str, problems: _Problems):
    line = yaml_lines.line_of(parent, key)
    try:
        return model(**yaml_lines.plain(value))
    except TypeError:
        problems.add(line, f"'{key}' must be a mapping")
    except ValidationError as exc:
        for where, message in validation_problems(exc):
            sub_line = yaml_lines.line_of(value, where.split(".")[0], line) if isinstance(value, dict) else line
            problems.add(sub_line, f"{key}.{where}: {message}")
    return None


def _expand_block(block: dict, block_line: int, defaults: dict, data: Any, suite: Suite, lm: LMConfig | None,
                  problems: _Problems) -> list[tuple[dict, dict[str, int]]]:
    fixed = block.get("set") or {}
    vary = block.get("vary") or {}
    tied = block.get("tied") or [{}]
    if not isinstance(fixed, dict):
        problems.add(yaml_lines.line_of(block, "set"), "'set' must be a mapping")
        fixed = {}
    if not isinstance(vary, dict):
        problems.add(yaml_lines.line_of(block, "vary"), "'vary' must be a mapping of lists")
        vary = {}
    for key, values in list(vary.items()):
        if not isinstance(values, list) or not values:
            problems.add(yaml_lines.line_of(vary, key), f"vary.{key} must be a non-empty list")
            vary.pop(key)
    if not isinstance(tied, list) or not all(isinstance(t, dict) for t in tied):
        problems.add(yaml_lines.line_of(block, "tied"), "'tied' must be a list of mappings")
        tied = [{}]

    out = []
    keys = list(vary)
    for combo in itertools.product(*(list(enumerate(vary[k])) for k in keys)):
        for t_index, alternative in enumerate(tied):
            cell: dict[str, Any] = {}
            lines: dict[str, int] = {}
            if lm is not None:
                cell["lm"] = lm.model_dump(exclude_defaults=True)
                lines["lm"] = yaml_lines.line_of(data, "lm")
            _apply(cell, lines, defaults, defaults, problems)
            _apply(cell, lines, fixed, fixed, problems)
            for key, (index, value) in zip(keys, combo):
                _apply(cell, lines, {key: value}, _ItemLines(yaml_lines.line_of(vary[key], index)), problems)
            if alternative:
                _apply(cell, lines, alternative, alternative, problems)
            if "steps" not in cell and suite.steps:
                cell["steps"] = suite.steps
            lines.setdefault("__block__", block_line)
            if "task" not in cell and suite.tasks:
                for task in suite.tasks:
                    out.append(({**copy.deepcopy(cell), "task": task}, {**lines, "task": yaml_lines.line_of(data, "suite")}))
            else:
                out.append((cell, lines))
    return out


class _ItemLines:
    """Line lookup for one item of a ``vary`` list, under the varied key's name."""

    def __init__(self, line: int):
        self.line = line
        self.lines: dict = {}


def _make_cells(raw: list[tuple[dict, dict[str, int]]], out: Path, suite: Suite, path: Path,
                problems: _Problems) -> list[Cell]:
    cells: list[Cell] = []
    seen: dict[str, int] = {}

    def line_for(lines: dict[str, int], field_name: str) -> int:
        return lines.get(field_name.split(".")[0], lines.get("__block__", 0))

    for values, lines in raw:
        if suite.protocol in ("reward-free", "pretrain-finetune"):
            if values.get("ext_coef", 0) != 0:
                problems.add(line_for(lines, "ext_coef"),
                             f"the {suite.protocol} protocol trains without extrinsic reward: ext_coef must be 0")
            values["ext_coef"] = 0.0
        _match_device_to_gpus(values, suite.resources, line_for(lines, "train"), problems)
        spec = _parse_cell(values, lines, line_for, problems)
        if spec is None:
            continue
        try:
            cell = _cell(spec, out, suite, lines)
        except ConfigError as exc:  # a label that cannot name a folder
            problems.add(line_for(lines, "label"), f"{exc.message} ({exc.hint})")
            continue
        if not _check_cell(cell, line_for, problems, seen):
            continue
        cells.append(cell)
        if suite.protocol == "pretrain-finetune":
            child = _finetune_cell(cell, suite, out, lines)
            if child is not None and _check_cell(child, line_for, problems, seen):
                cells.append(child)
    if suite.protocol == "pretrain-finetune" and suite.finetune is None:
        problems.add(0, "suite.protocol 'pretrain-finetune' needs a suite.finetune section (task, steps)")
    if not cells and not problems.items:
        problems.add(0, "the grid expands to no cells")
    return cells


def _match_device_to_gpus(values: dict, resources: Resources, line: int, problems: _Problems) -> None:
    """A cell given GPUs trains on one: its device becomes 'gpu' unless it says 'cpu', which would
    leave the GPU idle and is reported."""
    train = values.get("train")
    if resources.gpus <= 0 or not isinstance(train, (dict, type(None))):
        return  # no GPU asked for, or a malformed train that RunSpec reports
    device = (train or {}).get("device")
    if device == "cpu":
        problems.add(line, f"suite.resources.gpus is {resources.gpus:g} but train.device is 'cpu': the GPU would "
                           f"sit idle; set train.device to gpu (or leave it out), or suite.resources.gpus to 0")
        return
    values["train"] = {**(train or {}), "device": "gpu"}


def cell_resources(spec: RunSpec, resources: Resources) -> Resources:
    """What a cell asks its scheduler for: the suite's resources, and a GPU if it trains on one."""
    if spec.train.device == "gpu" and resources.gpus <= 0:
        return resources.model_copy(update={"gpus": 1})
    return resources


def _cell(spec: RunSpec, out: Path, suite: Suite, lines: dict[str, int], parent_id: str | None = None) -> Cell:
    label = spec.label or spec.method
    return Cell(id=cell_id(spec), spec=spec, run_dir=cell_dir(out, label, spec.task, spec.seed),
                resources=cell_resources(spec, suite.resources), lines=lines, parent_id=parent_id)


def _parse_cell(values: dict, lines: dict[str, int], line_for, problems: _Problems) -> RunSpec | None:
    """The cell's run spec; None when a field is malformed, after reporting it and, so that a file's every
    problem comes at once, what resolving the rest of the cell finds (a typo in ``train`` beside an unknown
    method: both, not the second after the first is fixed)."""
    try:
        return RunSpec.parse(values, "cell")
    except ConfigError as exc:
        for where, message in exc.problems:
            problems.add(line_for(lines, where), f"{where}: {message}")
        rest, left_out = _without(values, [where for where, _ in exc.problems])
    try:
        _resolve_into(RunSpec.parse(rest, "cell"), lines, line_for, problems, skip=left_out)
    except ConfigError:  # a required field is what is malformed: nothing further to check
        pass
    return None


def _without(values: dict, wheres: list[str]) -> tuple[dict, set[str]]:
    """A copy of ``values`` without the values at these dotted places, and the top-level fields they were in."""
    rest = copy.deepcopy(values)
    for where in wheres:
        target, parts = rest, where.split(".")
        for depth, part in enumerate(parts):
            if not isinstance(target, dict) or part not in target:
                break
            if depth == len(parts) - 1 or not isinstance(target[part], dict):
                target.pop(part)
                break
            target = target[part]
    return rest, {where.split(".")[0] for where in wheres}


def _resolve_into(spec: RunSpec, lines: dict[str, int], line_for, problems: _Problems,
                  check_parent: bool = True, skip: set[str] = frozenset()) -> ResolvedRun | None:
    """``resolve`` a cell's spec as a grid does, its problems reported with their lines (those of fields in
    ``skip``, which were left out as malformed, are not: they would be consequences, not problems)."""
    try:
        # the device is checked where the cell runs: a login node without a GPU may submit GPU cells;
        # the budget rule is `llmexplore run --steps`'s: a published budget of days must be asked for by name
        return resolve(spec, check_parent=check_parent, check_device=False, steps_spelling=GRID_STEPS)
    except ConfigError as exc:
        for where, message in exc.problems:
            if where in skip:
                continue
            if where == "steps" and "steps" not in lines:  # a missing budget: the line naming the task
                where = "task"
            problems.add(line_for(lines, where or "method"), message)
        return None


def _check_cell(cell: Cell, line_for, problems: _Problems, seen: dict[str, int]) -> bool:
    cell.run = _resolve_into(cell.spec, cell.lines, line_for, problems, check_parent=cell.parent_id is None)
    if cell.run is None:
        return False
    line = cell.lines.get("__block__", 0)
    if cell.id in seen:
        problems.add(line, f"cell {cell.id} appears twice (first from line {seen[cell.id]}); give cells "
                           f"distinct labels, e.g. `label: {cell.label}-variant`")
        return False
    seen[cell.id] = line
    return True


def _finetune_cell(parent: Cell, suite: Suite, out: Path, lines: dict[str, int]) -> Cell | None:
    ft = suite.finetune
    if ft is None:
        return None
    values = parent.spec.model_dump(exclude={"parent", "method_options", "int_coef", "ext_coef"})
    method = parent.spec.method if ft.method == PARENT_METHOD else ft.method
    values.update(
        task=ft.task,
        method=method,
        steps=ft.steps or (parent.run.steps if parent.run else parent.spec.steps),  # default: the parent's budget
        label=f"{parent.label}+finetune",
        parent=ParentSpec(run_dir=str(parent.run_dir), reset=list(ft.reset)).model_dump(),
    )
    if ft.ext_coef is not None:
        values["ext_coef"] = ft.ext_coef
    if ft.int_coef is not None:
        values["int_coef"] = ft.int_coef
    if ft.method_options is not None:
        values["method_options"] = ft.method_options
    elif method == parent.spec.method:  # e.g. ELLM kept for its goal input: same settings as in pretraining
        values["method_options"] = parent.spec.method_options
    spec = RunSpec.parse(values, "finetune cell")
    return _cell(spec, out, suite, lines, parent_id=parent.id)
