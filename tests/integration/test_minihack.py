"""The MiniHack family: every task builds and steps with NetHack's keys, bad input stops early,
and (slow) its tasks train with `none`, the LM-free baselines and ONI with the embedded oracle,
rank in the leaderboard by success rate with each task's random policy at 0, and are drawn."""

from __future__ import annotations

import csv
import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("llmexplore.envs.minihack.compat", reason="needs pip install 'llmexplore[minihack]'")

from llmexplore.benchmarks.run.cell import run_cell  # noqa: E402
from llmexplore.benchmarks.run.spec import RunSpec, resolve  # noqa: E402
from llmexplore.cli import main  # noqa: E402
from llmexplore.envs import EPISODE_STATS_KEY, GYM_IDS, get_family, get_task, list_tasks, make_adapter  # noqa: E402
from llmexplore.envs.minihack import compat  # noqa: E402
from llmexplore.envs.minihack.adapter import make_minihack  # noqa: E402
from llmexplore.envs.minihack.family import RANDOM_SUCCESS, TASKS  # noqa: E402
from llmexplore.envs.nethack.text import decode_message  # noqa: E402
from llmexplore.errors import ConfigError, MissingExtraError  # noqa: E402

MINIHACK = [t.name for t in list_tasks() if t.family == "minihack"]
STEPS = 2_048
SMALL = {"envs_per_worker": 16, "batch_size": 1024}


def test_the_issue_s_task_set_is_registered_with_gym_ids():
    wanted = {"keyroom-s5", "keyroom-s15", "multiroom-n2", "multiroom-n4", "multiroom-n6", "river",
              "corridor-battle", "lavacross-potion", "freeze-horn", "mazewalk-9x9"}
    assert wanted <= {name.split(":")[1] for name in MINIHACK}
    assert GYM_IDS["minihack:keyroom-s15"] == "llmexplore/MiniHackKeyroomS15-v0"
    assert set(RANDOM_SUCCESS) == set(MINIHACK)  # every task has its normalisation's 0


@pytest.mark.parametrize("task", MINIHACK)
def test_every_task_builds_and_steps_with_the_nethack_keys(task):
    spec = get_task(task)
    env_id, episode_steps, _, _ = TASKS[task.split(":")[1]]
    # the episode length we declare is MiniHack's own default for that env
    default = make_minihack(env_id, observation_keys=("message",))
    assert default._max_episode_steps == episode_steps
    default.close()
    env = gym.make(GYM_IDS[task])  # through its gymnasium id, as a user would
    space = make_adapter(task).observation_space()
    assert sorted(space.spaces) == ["blstats", "crop", "message"]
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(25):
        assert space.contains(obs), {k: (v.dtype, v.shape) for k, v in obs.items()}
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            assert set(info[EPISODE_STATS_KEY]) == {"return", "length", "success", "died"}
            obs, _ = env.reset()
    # the agent stands at the crop's centre: its '@' is what NetHack shows there
    assert obs["crop"][4, 4] == ord("@")
    assert spec.options["env_id"] == env_id and spec.default_budget == 50_000_000
    env.close()


@pytest.mark.parametrize("task", ["minihack:multiroom-n4", "minihack:keyroom-s15"])
def test_a_seed_replays_the_same_levels_and_later_episodes_differ(task):
    def first_maps(seed: int) -> list[np.ndarray]:
        env = make_adapter(task).make_env(extra_keys=("chars",))
        maps = [env.reset(seed=seed)[0]["chars"]]
        maps.append(env.reset()[0]["chars"])
        env.close()
        return maps

    a, b = first_maps(7), first_maps(7)
    assert all((x == y).all() for x, y in zip(a, b))
    assert not (a[0] == a[1]).all()


def test_episode_stats_count_a_reached_goal_as_success():
    env = make_adapter("minihack:multiroom-n2").make_env()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    outcomes = []
    while len(outcomes) < 60:  # a random walk reaches N2's goal now and then (RANDOM_SUCCESS)
        _, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            stats = info[EPISODE_STATS_KEY]
            outcomes.append((stats["success"], reward))
            env.reset()
    assert any(s for s, _ in outcomes), "no random episode reached the goal in 60"
    assert all(r > 0 for s, r in outcomes if s)  # MiniHack's +1 (less the step penalty) at the goal


def test_captions_are_nethack_messages():
    adapter = make_adapter("minihack:keyroom-s5")
    env = adapter.make_env()
    env.reset(seed=0)
    pickup = env.action_names.index("pickup")
    obs, *_ = env.step(pickup)
    assert adapter.caption(obs) == decode_message(obs["message"]) != ""
    assert "HP:" in adapter.caption_with_status(obs)


def test_an_unknown_task_names_the_close_ones():
    with pytest.raises(ConfigError, match="did you mean 'minihack:keyroom-s15'"):
        resolve(RunSpec(method="none", task="minihack:keyroom-s16", steps=STEPS))


def test_missing_minigrid_is_refused_before_any_work_for_multiroom_only(monkeypatch):
    monkeypatch.setattr(compat, "minigrid_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"(?s)MultiRoom.*needs the Python package 'minigrid'.*llmexplore\[minihack\]"):
        resolve(RunSpec(method="none", task="minihack:multiroom-n6", steps=STEPS))
    with pytest.raises(MissingExtraError):
        make_adapter("minihack:multiroom-n2").make_env()
    resolve(RunSpec(method="none", task="minihack:keyroom-s5", steps=STEPS))  # other tasks do not need it


def test_a_method_reading_keys_the_task_lacks_is_refused_before_any_work():
    with pytest.raises(ConfigError, match=r"needs observation keys \['glyphs'\]"):
        resolve(RunSpec(method="rnd", task="minihack:river", steps=STEPS, method_options={"keys": ["glyphs"]}))
    with pytest.raises(ConfigError, match="maestro|nethack"):
        resolve(RunSpec(method="maestro", task="minihack:river", steps=STEPS))


def test_pkg_resources_stand_in_finds_the_installed_files():
    import os

    assert os.path.isfile(compat.resource_filename("minihack", "scripts/mh_patch_nhdat.sh"))
    assert os.path.isdir(compat.resource_filename("nle", "nethackdir"))


def test_the_family_reuses_nethack_s_network_and_screen():
    minihack, nethack = get_family("minihack"), get_family("nethack")
    assert minihack.networks["small"].encoder == nethack.networks["small"].encoder
    assert minihack.screen == nethack.screen and minihack.metric == "success"


@pytest.mark.slow  # six 2,048-step trainings, a leaderboard and a drawn episode: a few minutes on 2 cores
def test_minihack_trains_ranks_and_is_visualised(tmp_path):
    runs = tmp_path / "runs"
    cells = [("none", "minihack:multiroom-n2", {}), ("none", "minihack:corridor-battle", {}),
             ("rnd", "minihack:multiroom-n2", {}), ("e3b", "minihack:multiroom-n2", {}),
             ("noveld", "minihack:multiroom-n2", {}), ("oni-retrieval", "minihack:multiroom-n2", {"backend": "oracle"})]
    for method, task, lm in cells:
        spec = RunSpec(method=method, task=task, seed=0, steps=STEPS, train=SMALL, lm=lm)
        out = runs / f"{method}-{task.split(':')[1]}"
        record = run_cell(spec, out, quiet=True)
        assert record.status == "complete" and record.env_steps >= STEPS, record.error
        assert record.metric == "success" and record.spec.train["network"] == "small"
        if method == "none" and task.endswith("n2"):
            assert record.final_metrics["episodes"] > 0 and 0 <= record.final_metrics["success"] <= 1
        metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        if method == "oni-retrieval":  # the oracle labelled MiniHack's messages (rewards may come later)
            assert metrics[-1]["oni_labels_total"] > 0 and metrics[-1]["oni_backend_errors"] == 0
            assert metrics[-1]["oni_captions"] > 1
        elif method != "none":
            assert any(m.get("reward_int_mean", 0) != 0 for m in metrics), method

    board = tmp_path / "board"
    assert main(["leaderboard", str(runs), "--out", str(board), "--bootstrap", "200"]) == 0
    page = (board / "leaderboard.md").read_text()
    assert "## minihack:multiroom-n2" in page and "## minihack:corridor-battle" in page
    with (board / "scores.csv").open() as f:
        scores = list(csv.DictReader(f))
    assert {r["metric"] for r in scores} == {"success"}
    for row in scores:  # each task's random policy -> 0, always reaching the goal -> 1
        low = RANDOM_SUCCESS[row["task"]]
        assert float(row["normalized"]) == pytest.approx((float(row["metric_value"]) - low) / (1 - low))

    viz = tmp_path / "viz"
    assert main(["visualize", str(runs / "none-multiroom-n2"), "--episodes", "1", "--workers", "1",
                 "--format", "gif", "--out", str(viz), "--quiet"]) == 0
    index = json.loads((viz / "index.json").read_text())
    assert index["episodes"][0]["length"] > 0
    from PIL import Image

    with Image.open(next(viz.rglob("*.gif"))) as gif:  # NetHack's terminal screen: 80 columns
        assert gif.size[0] > 80 * 5


def test_motif_collects_pairs_from_a_minihack_task(tmp_path):
    from llmexplore.methods.motif.collect import collect_pairs

    dataset, stats = collect_pairs("minihack:keyroom-s5", pairs=24, out=tmp_path / "pairs", num_envs=4)
    assert stats.kept == 48 and len(dataset) == 24
    assert (tmp_path / "pairs" / "data" / "tty_chars.npy").is_file()

def test_pkg_resources_stand_in_is_gone_after_the_import():
    """The stand-in serves minihack's import only: pytest's ``syspath_prepend`` and other code that finds a
    ``pkg_resources`` in ``sys.modules`` expect setuptools' whole module."""
    import sys

    stand_in = sys.modules.get("pkg_resources")
    assert stand_in is None or hasattr(stand_in, "fixup_namespace_packages")
