"""Each environment family is one EnvFamily, and the generic layers ask it instead of naming it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmexplore.agents.train_config import TrainConfig, network_encoder
from llmexplore.benchmarks.run.budget import estimated_seconds
from llmexplore.envs import adapter_class, families, get_family, get_task
from llmexplore.envs.family import EnvFamily, Network, import_path
from llmexplore.errors import ConfigError
from llmexplore.methods import get_method, parse_options

PACKAGE = Path(__file__).resolve().parents[2] / "llmexplore"
BUILT_IN = ("nethack", "crafter", "housekeep")
#: the one module that names every built-in family: one registration line each, by import path
REGISTRATION = "envs/__init__.py"
#: method modules written for particular families, which import or name the family they serve: ELLM's
#: goals per family, ONI's and MaestroMotif's readers of NetHack messages, MaestroMotif (NetHack only)
FAMILY_METHODS = (
    "methods/ellm/asking.py", "methods/ellm/bow.py", "methods/ellm/crafter_events.py",
    "methods/ellm/crafter_goals.py", "methods/ellm/housekeep_goals.py", "methods/ellm/factory.py",
    "methods/ellm/method.py", "methods/ellm/questions.py", "methods/maestro/interface.py",
    "methods/maestro/method.py",
    "methods/maestro/tasks.py", "methods/oni/captions.py",
)
#: other modules that may name a family (not import one): the dataset catalog's dataset names
MAY_NAME = ("data/catalog.py",)
_MODULE_PATH = re.compile(r"llmexplore\.envs\.(\w+)(\.\w+)*(:\w+)?")


def family_folders(package: Path) -> set[str]:
    """The families' folders under ``envs/`` (built-in ones and any other)."""
    return {p.name for p in (package / "envs").iterdir() if (p / "family.py").is_file()}


def family_references(path: Path, package: Path, folders: set[str]) -> list[str]:
    """Every place a module imports a family's module (any import statement, relative ones and those inside
    functions included, or a ``llmexplore.envs.<family>...`` import path string) or names a built-in family
    (a string constant that is exactly its name)."""
    found = []
    package_parts = path.relative_to(package.parent).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package_parts[: len(package_parts) - node.level + 1] + ((node.module,) if node.module else ()))
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]  # ``from llmexplore.envs import x``
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _MODULE_PATH.fullmatch(node.value)
            if match and match.group(1) in folders:
                found.append(f"{node.lineno}: import path '{node.value}'")
            elif node.value in BUILT_IN:
                found.append(f"{node.lineno}: names '{node.value}'")
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["llmexplore", "envs"] and len(parts) > 2 and parts[2] in folders:
                found.append(f"{node.lineno}: imports {module}")
                break
    return found


def generic_modules_reaching_a_family(package: Path = PACKAGE, allowed: tuple[str, ...] = ()) -> list[str]:
    """Modules outside ``envs/<family>/`` (and not ``allowed``) that import or name a family."""
    folders = family_folders(package)
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.split("/")[:2] in ([["envs", f] for f in folders]) or relative in allowed:
            continue
        found += [f"{relative}:{where}" for where in family_references(path, package, folders)]
    return found


def test_generic_layers_neither_import_nor_name_a_family():
    """The generic layers ask the family registry (``EnvFamily``); only the registration point, the methods
    written for a family and the dataset catalog refer to a family itself."""
    assert generic_modules_reaching_a_family(allowed=(REGISTRATION, *FAMILY_METHODS, *MAY_NAME)) == []


def test_the_exceptions_are_still_needed():
    """Every allowed module does refer to a family (an entry left behind after a move is removed)."""
    folders = family_folders(PACKAGE)
    for relative in (REGISTRATION, *FAMILY_METHODS, *MAY_NAME):
        assert family_references(PACKAGE / relative, PACKAGE, folders), relative


def test_the_family_check_sees_every_kind_of_reference(tmp_path):
    package = tmp_path / "llmexplore"
    for folder in ("envs/crafter", "envs/minihack", "agents", "lm/oracle", "viz"):
        (package / folder).mkdir(parents=True)
    (package / "envs" / "crafter" / "family.py").write_text("")
    (package / "envs" / "minihack" / "family.py").write_text("from llmexplore.envs.crafter import text\n")
    (package / "envs" / "family.py").write_text("")
    (package / "agents" / "a.py").write_text("def f():\n    from ..envs.crafter.network import E\n")
    (package / "lm" / "oracle" / "b.py").write_text("from llmexplore.envs import crafter\nX = 'crafter'\n")
    (package / "viz" / "c.py").write_text('"""Docs may say llmexplore.envs.crafter.text."""\n'
                                          "S = 'llmexplore.envs.minihack.screen:Screen'\nimport llmexplore.envs.family\n")
    assert generic_modules_reaching_a_family(package) == [
        "agents/a.py:2: imports llmexplore.envs.crafter.network",
        "lm/oracle/b.py:1: imports llmexplore.envs.crafter",
        "lm/oracle/b.py:2: names 'crafter'",
        "viz/c.py:2: import path 'llmexplore.envs.minihack.screen:Screen'",
    ]


def test_reading_every_family_imports_no_torch_or_simulator():
    code = ("import sys, llmexplore.envs as e; e.families(); "
            "print([m for m in ('torch', 'sample_factory', 'nle', 'crafter') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_family_is_consistent(name):
    family = get_family(name)
    assert [f.name for f in families()][:3] == ["crafter", "nethack", "housekeep"]
    adapter = adapter_class(name)
    assert adapter.family == name and adapter.metric == family.normalization.metric
    for network in family.networks.values():
        module, _, cls = network.encoder.partition(":")
        assert (PACKAGE.parent / (module.replace(".", "/") + ".py")).exists() and cls
    assert all(task.family == name for task in family.tasks)


def test_the_published_constants_stay_where_they_were():
    crafter, nethack, housekeep = get_family("crafter"), get_family("nethack"), get_family("housekeep")
    assert (crafter.normalization.low, crafter.normalization.high) == (1.55, 50.53)
    assert (nethack.normalization.low, nethack.normalization.high) == (0.0, 100.0)
    nethack_train = TrainConfig().resolved("nethack")
    assert (nethack_train.gamma, nethack_train.reward_scale, nethack_train.batch_size) == (0.999, 0.1, 2048)
    assert TrainConfig().resolved("crafter").batch_size == 1024
    assert TrainConfig().resolved("unknown").envs_per_worker == 16  # the generic defaults
    assert estimated_seconds(get_task("nethack:score"), 1_300) == 1.0
    assert estimated_seconds(get_task("crafter:reward"), 400) == 1.0
    assert crafter.stats_file.name == "stats.jsonl" and len(crafter.stats_file.keys) == 24
    assert housekeep.stats_file is None and len(crafter.achievements) == 22


def test_networks_by_family():
    assert network_encoder("nethack", "published") == "nethack-published"
    assert network_encoder("crafter", "published") == "crafter-published"
    with pytest.raises(ConfigError, match="not available for housekeep tasks") as info:
        network_encoder("housekeep", "published")
    assert "network=small" in info.value.hint


def test_novelty_keys_come_from_the_family():
    rnd, apt = get_method("rnd"), get_method("apt")
    for name, keys in (("crafter:reward", ("image",)), ("nethack:score", ("crop", "blstats"))):
        task = get_task(name)
        assert rnd.needed_keys(task, parse_options(rnd, {})) == keys
        assert apt.needed_keys(task, parse_options(apt, {})) == keys


def test_a_family_is_checked_when_declared():
    with pytest.raises(ValueError, match="'small' network"):
        EnvFamily(name="x", title="X", adapter="m:A", extra="all", probe_module="numpy", tasks=(),
                  train_defaults={}, networks={"big": Network("x", "m:E")})
    task = get_task("crafter:reward")
    with pytest.raises(ValueError, match="does not belong"):
        EnvFamily(name="x", title="X", adapter="m:A", extra="all", probe_module="numpy", tasks=(task,),
                  train_defaults={}, networks={"small": Network("x", "m:E")})
    with pytest.raises(ValueError, match="module:name"):
        import_path("no_colon")


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_family_names_datasets_the_catalog_knows(name):
    from llmexplore.data.catalog import DATASETS

    sources = get_family(name).data_sources
    assert sources and all(s in DATASETS or s == "balrog" for s in sources)  # balrog ships in the package
