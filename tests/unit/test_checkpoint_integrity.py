"""State corrupted between runs is caught (issue 49, class 4): a checkpoint whose bytes changed after its
save, one holding NaN weights, and another run's checkpoint copied into a run folder are set aside (renamed,
named on stderr) and the run resumes from the one before; an edited ``resolved.json`` is refused.

Checkpoints are saved through sample-factory's own ``Learner._save_impl`` on our learner (only the parts a
save reads are set up), so the digest beside each file is the one a training run writes.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from llmexplore.agents import checkpoints
from llmexplore.agents.checkpoints import list_checkpoints, load_checkpoint_file, newest_readable_checkpoint
from llmexplore.agents.learner import IntrinsicLearner
from llmexplore.agents.resolved_run import RESOLVED_FILE, ResolvedRun
from llmexplore.atomic import file_sha256
from llmexplore.benchmarks.run import cell
from llmexplore.benchmarks.run.spec import RunSpec, resolve
from llmexplore.errors import ConfigError

#: the value every weight starts at, so a test can find the weights' bytes in the saved file
MARK = 1.2345678


def _run(**changes) -> ResolvedRun:
    values = dict(method="rnd", task="crafter:reward-free", seed=2, steps=4096)
    values.update(changes)
    return resolve(RunSpec(**values))


class _Saver:
    """Our learner with just what a save reads: a small model, its Adam state, the run."""

    def __init__(self, run_dir: Path, run: ResolvedRun):
        self.learner = learner = IntrinsicLearner.__new__(IntrinsicLearner)  # no sample-factory processes
        learner.cfg = SimpleNamespace(train_dir=str(run_dir), experiment="sf")
        learner.policy_id, learner.is_initialized = 0, True
        learner.best_performance, learner.curr_lr = -1e9, 1e-4
        learner.train_step, learner.env_steps = 0, 0
        learner.actor_critic = torch.nn.Linear(4, 3)
        torch.nn.init.constant_(learner.actor_critic.weight, MARK)
        learner.optimizer = torch.optim.Adam(learner.actor_critic.parameters(), lr=1e-4)
        learner.actor_critic(torch.ones(2, 4)).sum().backward()
        learner.optimizer.step()  # the optimizer has state (exp_avg, exp_avg_sq) to save
        torch.nn.init.constant_(learner.actor_critic.weight, MARK)
        learner.settings = SimpleNamespace(run=run)
        learner.method = SimpleNamespace(state_dict=lambda: {"seen": 3})

    def save(self, env_steps: int) -> Path:
        self.learner.train_step += 1
        self.learner.env_steps = env_steps
        assert self.learner._save_impl("checkpoint", "", 2)  # sample-factory's save, with our hook
        return list_checkpoints(Path(self.learner.cfg.train_dir))[-1]


def _flip_a_weight_bit(path: Path) -> None:
    """One bit of one weight, as a bad disk or a stray write leaves it: torch still loads the file."""
    data = bytearray(path.read_bytes())
    at = data.index(struct.pack("<f", MARK))
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_each_save_leaves_its_digest_beside_it_and_the_run_it_belongs_to(tmp_path):
    run = _run()
    saver = _Saver(tmp_path, run)
    for steps in (1024, 2048, 3072):
        saver.save(steps)
    kept = list_checkpoints(tmp_path)
    assert [checkpoints.checkpoint_env_steps(p) for p in kept] == [2048, 3072]  # sample-factory keeps two
    digests = sorted(kept[0].parent.glob("digest-*"))
    # the digest of the checkpoint sample-factory removed went with it
    assert [p.name for p in digests] == [f"digest-{p.name}.sha256" for p in kept]
    assert digests[1].read_text() == f"{file_sha256(kept[1])}  {kept[1].name}\n"  # sha256sum -c reads it
    ours = load_checkpoint_file(kept[1])[checkpoints.CHECKPOINT_KEY]
    assert ours["run"] == run.identity() and ours["method_state"] == {"seen": 3}
    assert newest_readable_checkpoint(tmp_path, run.identity()) == (kept[1], [])


def test_a_flipped_bit_in_the_newest_checkpoint_is_set_aside_and_the_run_resumes_before_it(tmp_path, capsys):
    run = _run()
    saver = _Saver(tmp_path, run)
    good, newest = saver.save(1024), saver.save(2048)
    _flip_a_weight_bit(newest)
    with pytest.raises(ConfigError, match=rf"checkpoint {newest} is corrupt: its SHA-256 differs"):
        load_checkpoint_file(newest)  # evaluation and fine-tuning refuse it too
    assert cell._resume_point(tmp_path, run.identity()) == 1024
    err = capsys.readouterr().err
    assert f"skipped corrupt checkpoint {newest.name} (its SHA-256 differs" in err
    assert f"kept as corrupt-{newest.name}" in err and f"resuming from {good.name}" in err
    assert (newest.parent / f"corrupt-{newest.name}").exists() and not newest.exists()  # kept, not deleted
    assert (newest.parent / f"corrupt-digest-{newest.name}.sha256").exists()
    assert list_checkpoints(tmp_path) == [good]


@pytest.mark.parametrize("where", ["model", "optimizer"])
def test_a_checkpoint_holding_nan_is_set_aside(tmp_path, capsys, where):
    run = _run()
    saver = _Saver(tmp_path, run)
    good = saver.save(1024)
    if where == "model":
        torch.nn.init.constant_(saver.learner.actor_critic.weight, float("nan"))
    else:
        saver.learner.optimizer.state[saver.learner.actor_critic.bias]["exp_avg"][0] = float("inf")
    bad = saver.save(2048)
    with pytest.raises(ConfigError, match=rf"checkpoint {bad} is corrupt: NaN or infinite values in {where}"):
        load_checkpoint_file(bad)
    assert cell._resume_point(tmp_path, run.identity()) == 1024
    err = capsys.readouterr().err
    assert f"skipped corrupt checkpoint {bad.name} (NaN or infinite values in {where}." in err
    assert list_checkpoints(tmp_path) == [good] and (bad.parent / f"corrupt-{bad.name}").exists()


def test_another_runs_checkpoint_copied_in_is_set_aside(tmp_path, capsys):
    run, other = _run(), _run(seed=3)
    saver = _Saver(tmp_path / "run", run)
    good, newest = saver.save(1024), saver.save(2048)
    theirs = _Saver(tmp_path / "other", other).save(2048)
    shutil.copyfile(theirs, newest)  # over the newest: its bytes are not the ones saved there
    found, skipped = newest_readable_checkpoint(tmp_path / "run")  # the digest alone catches it
    assert found == good and [p.name for p, _ in skipped] == [f"corrupt-{newest.name}"]
    why = skipped[0][1]
    digest = f"digest-{newest.name}.sha256"
    assert why.startswith(f"its SHA-256 differs from the one recorded at its save in {digest}")

    copied = good.with_name("checkpoint_000000009_4096.pth")  # with its digest, as the newest
    shutil.copyfile(theirs, copied)
    shutil.copyfile(checkpoints.digest_path(theirs), checkpoints.digest_path(copied))
    assert cell._resume_point(tmp_path / "run", run.identity()) == 1024
    err = capsys.readouterr().err
    assert (f"skipped corrupt checkpoint {copied.name} (it belongs to another run "
            "(seed: 3 in the checkpoint, 2 in this run))") in err
    assert list_checkpoints(tmp_path / "run") == [good]


def test_a_checkpoint_of_an_older_version_is_taken_without_a_digest_when_its_task_and_method_match(tmp_path):
    run = _run()
    folder = tmp_path / "sf" / "checkpoint_p0"
    folder.mkdir(parents=True)
    older = {"model": {"w": torch.zeros(2)}, "optimizer": {"state": {}, "param_groups": []},
             "env_steps": 1024,
             checkpoints.CHECKPOINT_KEY: {"task": run.task, "method": run.method, "method_state": {}}}
    torch.save(older, folder / "checkpoint_000000001_1024.pth")
    torch.save({**older, checkpoints.CHECKPOINT_KEY: {"task": run.task, "method": "apt", "method_state": {}}},
               folder / "checkpoint_000000002_2048.pth")
    found, skipped = newest_readable_checkpoint(tmp_path, run.identity())
    assert found == folder / "checkpoint_000000001_1024.pth"
    assert [(p.name, why) for p, why in skipped] == [
        ("corrupt-checkpoint_000000002_2048.pth",
         "it belongs to another run (method: 'apt' in the checkpoint, 'rnd' in this run)")]


def test_a_runs_identity_leaves_out_its_budget_and_how_it_runs_here(tmp_path):
    """The lead's "extend a finished run to a larger budget" rewrites resolved.json with a larger ``steps``
    and resumes from the checkpoints the run has."""
    run = _run()
    saved = _Saver(tmp_path, run).save(1024)
    more_workers = run.train.model_copy(update={"num_workers": 3})
    extended = run.model_copy(update={"steps": 8192, "train": more_workers})
    assert extended.identity() == run.identity() and "steps" not in run.identity()
    assert newest_readable_checkpoint(tmp_path, extended.identity()) == (saved, [])
    assert _run(seed=3).identity() != run.identity()
    assert _run(train={"learning_rate": 1e-3}).identity() != run.identity()


# -- resolved.json ----------------------------------------------------------------------------------------
def test_an_edited_resolved_file_is_refused_naming_it_and_the_fix(tmp_path):
    run = _run()
    path = run.write(tmp_path)
    text = path.read_text()
    assert '"steps": 4096' in text
    path.write_text(text.replace('"steps": 4096', '"steps": 4097'))  # one bit: '6' is 0x36, '7' 0x37
    with pytest.raises(ConfigError) as caught:
        ResolvedRun.read(tmp_path)
    message = str(caught.value)
    assert f"{path} was changed after llmexplore wrote it" in message
    assert "restore the file" in message and "new output folder" in message
    path.write_text(text.replace('"seed": 2', '"seed": 5'))
    with pytest.raises(ConfigError, match="was changed after llmexplore wrote it"):
        cell.run_folder(tmp_path)  # nothing trains the edited run
    assert not (tmp_path / "run.json").exists()


def test_a_rewritten_resolved_file_reads_back_and_an_older_one_without_a_digest_too(tmp_path):
    run = _run()
    extended = run.model_copy(update={"steps": 8192})
    extended.write(tmp_path)  # the one way to change a folder's run on purpose
    assert ResolvedRun.read(tmp_path) == extended
    fields = json.loads((tmp_path / RESOLVED_FILE).read_text())
    (tmp_path / RESOLVED_FILE).write_text(json.dumps(fields))  # another layout, the same values
    assert ResolvedRun.read(tmp_path) == extended
    del fields["digest"]  # as a version before digests wrote it
    (tmp_path / RESOLVED_FILE).write_text(json.dumps(fields, indent=2))
    assert ResolvedRun.read(tmp_path) == extended
