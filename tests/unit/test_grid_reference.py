"""docs/GRIDS.md, the grid file reference, lists every key the grid file's models accept (grid_file_keys)."""

from __future__ import annotations

import re
from pathlib import Path

from llmexplore.benchmarks.grids.grid_schema import grid_file_keys

REPO = Path(__file__).resolve().parents[2]
#: the heading of docs/GRIDS.md under which each group of keys is listed
HEADINGS = {"top level": "Top-level keys", "blocks": "Block keys", "cell": "Cell keys", "parent": "`parent`",
            "suite": "`suite`", "suite.resources": "`suite.resources`", "suite.finetune": "`suite.finetune`",
            "ray": "`ray`", "slurm": "`slurm`"}


def _sections(text: str) -> dict[str, str]:
    """Heading -> the text up to the next heading of any level."""
    parts = re.split(r"^#{2,4} (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_key_a_grid_file_accepts_is_in_the_reference_under_its_heading():
    sections = _sections((REPO / "docs" / "GRIDS.md").read_text())
    keys = grid_file_keys()
    assert set(keys) == set(HEADINGS), "a new group of keys: give it a heading in docs/GRIDS.md and here"
    missing = {group: [key for key in names if f"`{key}`" not in sections.get(HEADINGS[group], "")]
               for group, names in keys.items()}
    assert {group: names for group, names in missing.items() if names} == {}


def test_the_reference_is_linked_from_the_readme_and_its_example_grids_load(tmp_path):
    from llmexplore.benchmarks.grids.grid_file import load_grid

    assert "docs/GRIDS.md" in (REPO / "README.md").read_text()
    text = (REPO / "docs" / "GRIDS.md").read_text()
    first = re.search(r"## A first grid\n\n```yaml\n(.*?)```", text, flags=re.DOTALL).group(1)
    (tmp_path / "first.yaml").write_text(first)
    assert len(load_grid(tmp_path / "first.yaml", tmp_path / "out").cells) == 4
    blocks = re.search(r"## Block keys.*?```yaml\n(.*?)```", text, flags=re.DOTALL).group(1)
    (tmp_path / "blocks.yaml").write_text("name: b\n" + blocks)
    assert len(load_grid(tmp_path / "blocks.yaml", tmp_path / "out").cells) == 10
