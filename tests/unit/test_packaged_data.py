"""Data shipped in the package, and where datasets are looked for on a machine with nothing else."""

from __future__ import annotations

import pytest
import yaml

from llmexplore import settings
from llmexplore.errors import DataError


@pytest.fixture
def bare_machine(monkeypatch, tmp_path):
    """No data variables, an empty home and cache: what a fresh clone sees (apart from a dev ../shared)."""
    for var in ("LLMEXPLORE_DATA", "LLMEXPLORE_BALROG_TABLE", "LLMEXPLORE_CRAFTER_REFERENCE",
                "LLMEXPLORE_HOUSEKEEP_DATA", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(settings, "_dev_data_root", lambda: None)
    return tmp_path


def test_the_balrog_table_ships_with_the_package(bare_machine):
    from llmexplore.envs.nethack.progression import load_table, table_path

    path = table_path()
    assert path.is_file() and path.is_relative_to(settings.PACKAGED)
    assert (path.parent / "LICENSE").is_file() and (settings.PACKAGED / "SOURCES.md").is_file()
    load_table.cache_clear()
    table = load_table()
    assert table["Dlvl:1"] == 0.0 and 0 < table["Dlvl:10"] < 1


def test_the_default_data_folder_is_the_user_cache(bare_machine, monkeypatch):
    assert settings.data_home() == bare_machine / "home" / ".cache" / "llmexplore" / "data"
    monkeypatch.setenv("LLMEXPLORE_DATA", str(bare_machine / "mine"))
    assert settings.data_path("crafter", must_exist=False) == bare_machine / "mine" / "crafter"


@pytest.mark.parametrize("name", ["housekeep", "crafter"])
def test_a_missing_dataset_names_the_command_that_fetches_it(bare_machine, name):
    with pytest.raises(DataError) as err:
        settings.data_path(name)
    assert f"`llmexplore data fetch {name}`" in err.value.hint


def test_a_housekeep_task_without_data_names_the_fetch_command(bare_machine):
    from llmexplore.envs import make_adapter

    with pytest.raises(DataError) as err:
        make_adapter("housekeep:pomaria_0").validate_data()
    assert "llmexplore data fetch housekeep" in str(err.value)


def test_the_dev_copy_is_never_used_when_the_data_folder_is_set(monkeypatch, tmp_path, shared_data):
    monkeypatch.setenv("LLMEXPLORE_DATA", str(tmp_path))
    monkeypatch.delenv("LLMEXPLORE_HOUSEKEEP_DATA", raising=False)
    assert settings.data_path("housekeep", must_exist=False) == tmp_path / "housekeep"
    monkeypatch.delenv("LLMEXPLORE_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert settings.data_path("housekeep") == shared_data / "housekeep"


def test_the_shipped_crafter_reference_scores_are_what_our_code_derives(shared_data):
    from llmexplore.envs.crafter.reference import derive, reference_scores

    assert derive(shared_data / "crafter") == reference_scores()


def test_leaderboard_reference_points_agree_with_the_shipped_scores():
    from llmexplore.envs import get_family
    from llmexplore.envs.crafter.reference import reference_scores

    agents = reference_scores()["agents"]
    random, human = agents["random"]["score_mean"], agents["human"]["score_mean"]
    # the aggregate uses the exact means (to the published stats' precision), the scoreboard rounds them
    points = get_family("crafter").normalization
    assert (points.metric, points.low, points.high) == ("score", round(random, 2), round(human, 2))
    text = (settings.PACKAGED.parent.parent / "benchmarks" / "results" / "references.yaml").read_text()
    rows = {r["label"]: r["mean"] for r in yaml.safe_load(text)["crafter:reward-free"]["rows"]}
    assert rows["Random"] == round(random, 1) and rows["Human experts"] == round(human, 1)


def test_user_docs_and_code_cite_nothing_outside_the_repository():
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    outside = re.compile(r"\.\./shared|shared/design|shared/data")
    files = [repo / "README.md", *(repo / "docs").rglob("*.md"), *(repo / "llmexplore").rglob("*.py")]
    dev_fallback = repo / "llmexplore" / "settings.py"  # the one allowed place: the development fallback
    cited = [f"{f.relative_to(repo)}:{n}" for f in files if f != dev_fallback
             for n, line in enumerate(f.read_text().splitlines(), 1) if outside.search(line)]
    assert not cited, cited
    assert (repo / "docs" / "METHODS.md").is_file()


def test_every_packaged_file_is_declared_as_package_data():
    import fnmatch
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    repo = Path(__file__).resolve().parents[2]
    setuptools = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setuptools["package-data"]["llmexplore"]
    package = repo / "llmexplore"
    for file in (package / "data" / "packaged").rglob("*"):
        if file.is_file():
            relative = file.relative_to(package).as_posix()
            assert any(fnmatch.fnmatch(relative, g) for g in globs), relative
