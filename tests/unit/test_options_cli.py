"""`llmexplore options`: every -t, -o and --lm key with its default, read from the models that check them."""

from __future__ import annotations

import json

from llmexplore.agents.train_config import TrainConfig, family_defaults
from llmexplore.cli import main
from llmexplore.lm.config import LMConfig
from llmexplore.methods import get_method
from llmexplore.options_cli import sections


def test_the_listing_has_every_key_of_the_models_with_family_defaults_filled_in():
    listing = sections("rnd", "crafter:reward-free")
    train = {row["key"]: row for row in listing["train"]}
    assert list(train) == list(TrainConfig.model_fields)
    assert train["batch_size"]["default"] == family_defaults("crafter")["batch_size"]
    assert train["gamma"]["values"] == "> 0, <= 1" and train["device"]["values"] == "cpu | gpu | auto"
    assert [row["key"] for row in listing["method"]["options"]] == list(get_method("rnd").Options.model_fields)
    assert [row["key"] for row in listing["lm"]] == list(LMConfig.model_fields)
    assert all(row["description"] for group in (listing["train"], listing["lm"]) for row in group)


def test_the_command_prints_the_three_groups_and_json(capsys):
    assert main(["options", "--method", "rnd"]) == 0
    text = capsys.readouterr().out
    assert "-t / --train KEY=VALUE" in text and "-o / --option KEY=VALUE: method rnd" in text
    assert "--lm KEY=VALUE" in text and "update_fraction" in text and "reward_clip" in text
    assert main(["options", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert set(listing) == {"train", "lm"}  # no method named: no -o keys


def test_an_unknown_method_or_task_is_a_clear_error(capsys):
    assert main(["options", "--method", "nope"]) == 2
    assert main(["options", "--task", "nope"]) == 2
    assert "error" in capsys.readouterr().err


def test_a_task_lists_its_familys_networks_and_presets_with_what_each_is(capsys):
    """The generic option descriptions name no family; the family's own offers are printed from its
    declaration (EnvFamily.networks and presets), so a new family's networks show without a change here."""
    from llmexplore.envs.registry import families

    for family in (f for f in families() if f.adapter.startswith("llmexplore.envs.")):  # the built-in ones
        name = family.name
        assert all(network.description for network in family.networks.values()), name
        assert set(family.preset_notes) == set(family.presets), name  # every preset says what it is
    assert main(["options", "--task", "crafter:reward", "--json"]) == 0
    offers = json.loads(capsys.readouterr().out)["family"]
    assert offers["name"] == "crafter" and set(offers["networks"]) == {"small", "published"}
    assert "stable-baselines3" in offers["presets"]["published"]
    assert main(["options", "--task", "nethack:score"]) == 0
    text = capsys.readouterr().out
    assert "-t network=NAME: the networks of the nethack family" in text and "NLE baseline network" in text
    for field in ("network", "preset"):
        description = TrainConfig.model_fields[field].description
        assert not any(family in description.lower() for family in ("nethack", "crafter", "housekeep"))


def test_network_and_preset_offer_only_what_the_tasks_family_accepts(capsys):
    """MiniHack offers the small network alone: `network=published`, which its runs refuse, is not listed."""
    from llmexplore.envs.registry import families

    rows = {row["key"]: row for row in sections(None, "minihack:keyroom-s5")["train"]}
    assert rows["network"]["values"] == "small" and rows["preset"]["values"] == "(none)"
    rows = {row["key"]: row for row in sections(None, "nethack:score")["train"]}
    assert rows["network"]["values"] == "small | light | published"
    assert rows["preset"]["values"] == "published | light"
    assert main(["options", "--task", "minihack:keyroom-s5"]) == 0
    network_line = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["network"])
    assert "published" not in network_line.split("policy network")[0]
    # without a task every family's networks are the choices: the model's names are exactly their union
    everyone = {name for family in families() for name in family.networks}
    generic = {row["key"]: row for row in sections(None, None)["train"]}
    assert set(generic["network"]["values"].split(" | ")) == everyone
