"""Each environment family is one EnvFamily, and the generic layers ask it instead of naming it."""

from __future__ import annotations

import ast
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
#: modules that may name a family: the families themselves, the dataset catalog (dataset names), and
#: methods written for particular families (ELLM's goal questions, Motif's collection, MaestroMotif)
MAY_NAME_FAMILIES = ("envs/", "data/catalog.py", "methods/ellm/", "methods/motif/collect.py",
                     "methods/maestro/")


def family_literals(path: Path) -> list[int]:
    """Lines of string constants that are exactly a built-in family's name."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and node.value in BUILT_IN]


def test_generic_layers_name_no_family():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(MAY_NAME_FAMILIES):
            found += [f"{relative}:{line}" for line in family_literals(path)]
    assert found == []


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
