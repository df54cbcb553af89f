"""Properties of grid files (``benchmarks/grids/grid_file.py``) over generated files: structures shaped like the
grid schema, with sound and unsound values mixed at every place, and YAML text made of tags, dates, anchors and
flow collections. Each file gives a valid grid or one ConfigError listing its problems with their lines, never
another exception, and no problem repeats more than a short piece of a value. Derandomized and bounded."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmexplore.benchmarks.grids.grid_file import MAX_CELLS, Grid, load_grid
from llmexplore.errors import ECHO_LIMIT, ConfigError

PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=120,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: sound settings a cell may take, each set on its own sound base
SOUND = {
    "method": ["none", "rnd", "e3b", "noveld"], "task": ["crafter:reward", "crafter:reward-free"],
    "seed": [0, 1, 1_000_000], "steps": [20_000, 40_960, "2e4", "20_000"], "ext_coef": [0.0, 1.0],
    "int_coef": [0.0, 0.05], "label": ["a", "b-2"], "train.rollout": [32, 64], "train.envs_per_worker": [8, 16],
    "train.sf_args": [{"max_grad_norm": 1.0}, {"max_grad_nrm": 1.0}, {"with_vtrace": True},
                      {"num_batches_per_epoch": 2, "batch_size": 512}, {"worker_num_splits": 3}],
    "train.preset": ["published"], "train.network": ["small", "published"],
}
cell_settings = st.dictionaries(st.sampled_from(sorted(SOUND)), st.none(), max_size=3).flatmap(
    lambda keys: st.fixed_dictionaries({key: st.sampled_from(SOUND[key]) for key in keys}))
block = st.fixed_dictionaries(
    {"set": st.builds(lambda m, t, extra: {"method": m, "task": t, "steps": 20_000, **extra},
                      st.sampled_from(SOUND["method"]), st.sampled_from(SOUND["task"]), cell_settings),
     "vary": st.fixed_dictionaries({"seed": st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True)})},
    optional={"tied": st.lists(cell_settings, min_size=1, max_size=2)})
suite = st.one_of(
    st.just({"protocol": "with-reward"}), st.just({"protocol": "reward-free"}),
    st.just({"protocol": "pretrain-finetune", "finetune": {"task": "crafter:reward", "reset": ["critic"]}}),
    st.just({"resources": {"cpus": 1, "gpus": 0}}))
sound_grid = st.fixed_dictionaries(
    {"name": st.just("g"), "defaults": st.just({"train": {"batch_size": 1024, "envs_per_worker": 16}}),
     "blocks": st.lists(block, min_size=1, max_size=2)},
    optional={"suite": suite, "lm": st.just({"backend": "oracle"}), "description": st.text(max_size=20)})

#: what may be wrong at one place of a file
junk = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=12),
                 st.lists(st.integers(-3, 3), max_size=2),
                 st.dictionaries(st.text(max_size=4), st.integers(), max_size=2), st.just("q" * 5_000),
                 st.just("2024-02-30"), st.just("-1"), st.just("../up"))
#: a key a YAML mapping may hold: text, dotted or not, or a value YAML reads (`null:`, `true:`, `5:`)
odd_key = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(), st.sampled_from(
    ["bogus", "train.bogus", "train..x", ".", "", "seed.x", "sf_args", "method_options.lr", "q" * 5_000]))
mutation = st.one_of(st.tuples(st.integers(0, 10**6), st.just("value"), junk),
                     st.tuples(st.integers(0, 10**6), st.just("key"), odd_key),
                     st.tuples(st.integers(0, 10**6), st.just("drop"), st.none()))


def _places(node, out=None) -> list[tuple[object, object]]:
    """Every (container, key or index) of a structure, parents before their children."""
    out = [] if out is None else out
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in list(items):
        out.append((node, key))
        _places(value, out)
    return out


def _mutated(data: dict, mutations: list) -> dict:
    """``data`` with each mutation applied at one of its places: a value replaced, a key renamed, or dropped."""
    for index, kind, value in mutations:
        places = _places(data)
        container, key = places[index % len(places)]
        if kind == "value" or isinstance(container, list):
            container[key] = value
        elif kind == "key":
            container[value] = container.pop(key)
        else:
            container.pop(key)
    return data


grid = st.builds(_mutated, sound_grid, st.lists(mutation, max_size=3))


def _check(text: str) -> None:
    """Load ``text`` as a grid file: a Grid, or a ConfigError whose every problem names the file and stays short."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "grid.yaml"
        path.write_text(text)
        try:
            loaded = load_grid(path, Path(folder) / "out")
        except ConfigError as exc:
            assert exc.problems and str(path) in exc.message, exc.message[:500]
            for _, problem in exc.problems:
                assert "q" * (ECHO_LIMIT + 1) not in problem, problem[:300]
            return
        assert isinstance(loaded, Grid) and 0 < len(loaded.cells) <= MAX_CELLS
        assert all(cell.run is not None for cell in loaded.cells if cell.parent_id is None)


@PROPERTY
@given(grid)
def test_a_generated_grid_file_is_a_grid_or_one_config_error_listing_its_problems(data):
    _check(yaml.safe_dump(data, sort_keys=False))


VALID_TEXT = ["name: g\n", "defaults:\n", "  train: {batch_size: 1024, envs_per_worker: 16}\n", "blocks:\n",
              "  - set: {method: none, task: crafter:reward, steps: 20000}\n", "    vary:\n", "      seed: [0, 1]\n",
              "  - set: {method: rnd, task: crafter:reward-free, steps: 2e4, label: r}\n", "    vary: {seed: [0]}\n"]
YAML_PIECES = ["when: 2024-02-30\n", "x: !!float\n", "y: !!bool maybe\n", "label: ", "2024-02-30", "2001-01-01",
               "!!float", "!!int", "!!bool", "!!timestamp", "!!binary", "!!set", "!!str", " x", " 1e5", " 1e-5",
               "&a ", "*a", "[", "]", "{", "}", ", ", ": ", "- ", "\n", "  ", "#", "'", '"', "? ", "steps: ", "seed: ",
               "train: ", "{sf_args: {max_grad_nrm: 1}}", "\t", "<<: *a", "~"]


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, len(VALID_TEXT)), st.lists(st.sampled_from(YAML_PIECES), min_size=1,
                                                                      max_size=4)), max_size=3))
def test_grid_text_with_yaml_pieces_inserted_is_a_grid_or_one_config_error(insertions):
    lines = list(VALID_TEXT)
    for position, pieces in insertions:
        lines.insert(position, "".join(pieces))
    _check("".join(lines))
