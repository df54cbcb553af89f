"""Motif and ONI on Crafter (issue 48): the oracle's tech-tree preferences, the caption Motif and ONI read
(a family hook, ``EnvFamily.message_text``), and a real collection annotated in Crafter's words."""

from __future__ import annotations

from pathlib import Path

import crafter
import numpy as np
import pytest
import yaml

from llmexplore.envs import get_task, make_adapter
from llmexplore.envs.crafter import progress, text
from llmexplore.envs.crafter.adapter import CrafterEnv
from llmexplore.envs.crafter.messages import CaptionMessage
from llmexplore.envs.nethack.text import decode_message
from llmexplore.errors import ConfigError
from llmexplore.lm.config import LMConfig, SamplingParams
from llmexplore.lm.oracle import OracleLM
from llmexplore.lm.questions import ask
from llmexplore.methods import get_method, parse_options
from llmexplore.methods.base import CheckContext
from llmexplore.methods.message_text import needed_keys, question_class
from llmexplore.methods.motif.annotate import annotate_pairs
from llmexplore.methods.motif.collect import collect_pairs
from llmexplore.methods.motif.questions import LABEL_FIRST, LABEL_SECOND, LABEL_TIE, MotifPreference
from llmexplore.methods.oni.questions import OniClassification

CRAFTER = get_task("crafter:reward-free")
WOOD = "You see grass, tree. You have wood (2)."
TABLE = "You see crafting table, grass. You have wood (1), wood pickaxe (1)."
TABLE_HUNGRY = TABLE[:-1] + ". You feel hungry."
STONE_TOOLS = "You see furnace, stone. You have stone pickaxe (1), stone sword (1). You feel hurt, thirsty."


def data_yaml() -> dict:
    return yaml.safe_load((Path(crafter.__file__).parent / "data.yaml").read_text())


def ancestors(achievement: str) -> set[str]:
    found: set[str] = set()
    for before in progress.PREREQUISITES[achievement]:
        found |= {before} | ancestors(before)
    return found


def test_the_tree_holds_every_achievement_and_each_requirement_of_crafters_rules():
    data = data_yaml()
    assert set(progress.PREREQUISITES) == set(data["achievements"]) and len(progress.PREREQUISITES) == 22
    gives = {item: f"collect_{item}" for rule in data["collect"].values() for item in rule["receive"]}
    gives.update({tool: f"make_{tool}" for tool in data["make"]})
    # what each achievement takes by Crafter's rules: a tool its materials and stations, a material its pickaxe
    needs = {f"make_{tool}": set(rule["uses"]) | set(rule["nearby"]) for tool, rule in data["make"].items()}
    needs.update({f"collect_{m}": set(rule["require"]) for m, rule in data["collect"].items()
                  if f"collect_{m}" in progress.PREREQUISITES})
    needs.update({f"place_{thing}": set(rule["uses"]) for thing, rule in data["place"].items()})
    placed = {"table": "place_table", "furnace": "place_furnace"}
    for achievement, required in needs.items():
        for item in required:
            before = placed.get(item) or gives[item]
            assert before in ancestors(achievement), (achievement, item)
    assert set(progress.HELD) == {k for k, v in data["items"].items() if v["initial"] == 0}


def test_depths_follow_the_tree():
    depths = {a: progress.depth(a) for a in progress.PREREQUISITES}
    assert depths["collect_wood"] == depths["collect_sapling"] == depths["wake_up"] == 1
    assert depths["place_table"] == 2 and depths["make_wood_pickaxe"] == 3 and depths["collect_stone"] == 4
    assert depths["collect_iron"] == 6 and depths["make_iron_pickaxe"] == 7
    assert max(depths.values()) == depths["collect_diamond"] == 8


def test_a_caption_shows_what_it_holds_and_what_only_the_player_places():
    assert progress.evidenced(WOOD) == ["collect_wood"]
    assert progress.evidenced(TABLE) == ["make_wood_pickaxe", "place_table", "collect_wood"]
    assert progress.evidenced("You see plant, water. You face plant.") == ["place_plant"]
    assert progress.evidenced("You see stone, tree, water, zombie.") == []  # found in any world: no progress


def test_deeper_beats_broader_and_breadth_beats_vitals():
    deep_alone = "You see grass. You have stone (1). You feel hurt, hungry, thirsty, sleepy."
    broad = "You see crafting table, plant. You have sapling (1), wood (9), wood pickaxe (1), wood sword (1)."
    assert progress.caption_value(deep_alone) > progress.caption_value(broad)
    assert progress.caption_value(TABLE) > progress.caption_value(TABLE_HUNGRY)
    assert progress.caption_value(STONE_TOOLS) > progress.caption_value(TABLE) > progress.caption_value(WOOD)
    assert progress.caption_value(WOOD) > progress.caption_value("You see grass.") > progress.caption_value(
        "You see grass. You feel thirsty.")


def test_the_oracle_answers_motifs_question_in_crafters_words():
    question = question_class(MotifPreference, CRAFTER, "motif")(goal="defaultgoal")
    assert question.kind == "crafter_preference" and "Crafter" in question.prompt((WOOD, TABLE))
    items = [(WOOD, TABLE), (STONE_TOOLS, TABLE), (TABLE, TABLE_HUNGRY), (WOOD, WOOD.replace("2", "3"))]
    result = ask(OracleLM(), question, items, SamplingParams())
    assert result.labels == [LABEL_SECOND, LABEL_FIRST, LABEL_FIRST, LABEL_TIE] and result.unknown == 0
    reply = OracleLM().answer(question.prompt((WOOD, TABLE)))
    assert "make wood pickaxe" in reply and reply.endswith("Preferred: 2")


def test_the_oracle_labels_helpful_only_past_the_first_gatherings():
    question = question_class(OniClassification, CRAFTER, "oni-retrieval")(goal="defaultgoal")
    assert question.kind == "crafter_helpfulness"
    captions = [WOOD, TABLE, STONE_TOOLS, "You see plant.", "You see diamond, iron. You feel sleepy.", ""]
    assert ask(OracleLM(), question, captions, SamplingParams()).labels == [0, 1, 1, 1, 0, 0]
    with pytest.raises(ConfigError, match="unknown ONI classification goal 'gold'"):
        question_class(OniClassification, CRAFTER, "oni-retrieval")(goal="gold")  # Crafter has no gold


def test_nethack_keeps_its_own_questions():
    nethack = get_task("nethack:score")
    assert question_class(MotifPreference, nethack, "motif") is MotifPreference
    assert question_class(OniClassification, nethack, "oni-retrieval") is OniClassification


def crowded_observation(held: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Everything in view, ``held`` items at 9, every vital low."""
    semantic = np.arange(9 * 7, dtype=np.uint8) % (len(text.SEMANTIC_NAMES) - 1) + 1
    inventory = np.array([1 if name in text.VITALS else 9 if name in held else 0 for name in text.INVENTORY],
                         dtype=np.float32)
    return {"local_semantic": semantic.reshape(9, 7), "facing": np.array([11], np.uint8), "inventory": inventory}


def test_the_message_fits_256_bytes_leaving_common_ground_out_first():
    items = tuple(name for name in text.INVENTORY if name not in text.VITALS)
    obs = crowded_observation(tuple(i for i in items if i not in ("iron_pickaxe", "iron_sword", "stone_sword")))
    full = text.caption(obs)
    assert len(full) > text.MESSAGE_BYTES  # ELLM's caption is unchanged and longer than a message
    fitted = text.caption(obs, text.MESSAGE_BYTES)
    assert len(fitted) <= text.MESSAGE_BYTES and fitted.endswith("You feel hurt, hungry, thirsty, sleepy.")
    seen = fitted.split(". You face")[0]
    assert {"crafting table", "furnace", "plant", "diamond"} <= set(seen[len("You see "):].split(", "))
    assert not {"path", "sand", "grass"} & set(seen.split(", "))
    assert decode_message(text.message(obs)) == fitted
    everything = text.caption(crowded_observation(items), text.MESSAGE_BYTES)  # the longest caption there is
    assert everything.startswith("You face crafting table. You have sapling (9)") and len(everything) <= 256
    few = crowded_observation(("wood",))
    few["local_semantic"][:] = 2
    assert text.caption(few, text.MESSAGE_BYTES) == text.caption(few)  # fits: nothing left out


def test_the_wrapper_writes_each_observations_caption_as_its_message():
    env = CaptionMessage(CrafterEnv(reward=False))
    assert env.observation_space["message"].shape == (256,)
    obs, _ = env.reset(seed=3)
    for action in (0, 5, 3, 5, 1):
        assert decode_message(obs["message"]) == text.caption(obs) != ""
        obs, *_ = env.step(action)
    env.close()


def check(method: str, task: str, **options) -> None:
    """The method's own check of a run, as a grid file's check calls it (the adapter's observation space)."""
    cls, spec = get_method(method), get_task(task)
    cls.check_run(CheckContext(spec, make_adapter(spec).observation_space(), parse_options(cls, options),
                               LMConfig(backend="oracle")))


def test_motif_and_oni_accept_crafter_and_refuse_a_family_without_text(tmp_path):
    assert needed_keys(CRAFTER) == () and needed_keys(get_task("housekeep:beechwood_0")) == ("message",)
    for method in ("oni-retrieval", "oni-classification", "oni-ranking"):
        check(method, "crafter:reward-free")
    with pytest.raises(ConfigError, match="needs observation keys \\['message'\\]"):
        check("oni-retrieval", "housekeep:beechwood_0")
    with pytest.raises(ConfigError, match="does not exist"):  # the keys pass; the reward model is checked next
        check("motif", "crafter:reward-free", reward_model=str(tmp_path / "none"))


def test_a_crafter_collection_keeps_captions_and_is_asked_in_crafters_words(tmp_path):
    dataset, stats = collect_pairs("crafter:reward-free", 40, tmp_path / "pairs", seed=2, num_envs=2)
    assert len(dataset) == 40 and stats.steps >= 78 and dataset.collected_task() == "crafter:reward-free"
    assert set(dataset.data) == {"message", "inventory", "local_semantic", "facing"} and dataset.info == {}
    for i in range(0, 40, 7):
        obs = {k: np.asarray(dataset.data[k][i, 1]) for k in ("inventory", "local_semantic", "facing")}
        assert dataset.caption(i, 1) == text.caption(obs, text.MESSAGE_BYTES)  # captioned again from its keys
    report = annotate_pairs(dataset, OracleLM(), annotator="oracle")
    assert report.unknown == 0 and sum(report.counts.values()) == 40
    labels = np.asarray(dataset.labels("oracle_msg_defaultgoal_default"))
    values = [[progress.caption_value(c) for c in pair] for pair in dataset.captions(range(40))]
    expected = [LABEL_TIE if a == b else LABEL_FIRST if a > b else LABEL_SECOND for a, b in values]
    assert labels.tolist() == expected


def test_the_crafter_1m_grids_run_motif_and_both_oni_rows_on_five_seeds(tmp_path, monkeypatch):
    """ONI's rows in the protocol's grid; Motif's in a grid of its own, which waits for its reward model (made
    from a cell of the first), so that the protocol's grid never waits for it."""
    from llmexplore.benchmarks.grids.grid_file import load_grid
    from llmexplore.methods.motif.artifacts import save_reward_model
    from llmexplore.methods.motif.model import MotifRewardModel

    configs = Path(__file__).resolve().parents[2] / "configs"
    monkeypatch.chdir(tmp_path)  # the reward model's path is relative to where the grid runs
    cells = load_grid(configs / "crafter-1m.yaml", out_dir=tmp_path / "out").cells  # no model needed
    with pytest.raises(ConfigError, match="models/motif-crafter/defaultgoal-default does not exist"):
        load_grid(configs / "crafter-1m-motif.yaml", out_dir=tmp_path / "out")
    model = tmp_path / "models" / "motif-crafter" / "defaultgoal-default"
    model.mkdir(parents=True)
    save_reward_model(model, MotifRewardModel(), 0.0, 1.0, 2, 2, np.array([-1.0, 1.0]), {})
    cells += load_grid(configs / "crafter-1m-motif.yaml", out_dir=tmp_path / "out").cells
    rows = {(c.spec.method, c.spec.task): sorted(d.spec.seed for d in cells if (d.spec.method, d.spec.task) ==
                                                (c.spec.method, c.spec.task)) for c in cells}
    for method in ("motif", "oni-retrieval", "oni-classification"):
        assert rows[(method, "crafter:reward-free")] == [0, 1, 2, 3, 4]
    assert all(c.spec.steps == 1_000_000 for c in cells)
