"""Code generation: oracle answers pass, a refusal is fed back once, a second refusal stops with the
reason and the saved file; reruns keep what passed."""

from __future__ import annotations

import json

import pytest

from llmexplore.lm.oracle import OracleLM
from llmexplore.methods.maestro.codegen import (
    MANIFEST,
    CodeGenerationError,
    generate_code,
    skill_targets,
    task_target,
    training_target,
)
from llmexplore.methods.maestro.program import SkillProgram
from llmexplore.methods.maestro.skills import SKILLS
from tests.helpers.motif import ORACLE_ANNOTATOR
from tests.helpers.scripted_lm import ScriptedLM

BAD = "```python\ndef select_skill(obs, memory):\n    return obs['dlvl'] and 'descender'\n```"
GOOD = "```python\ndef select_skill(obs, memory):\n    return obs['available'][0]\n```"


def test_oracle_code_for_every_target_passes_and_loads(tmp_path):
    targets = skill_targets() + [training_target(), task_target("delphi", "Reach the Oracle.")]
    manifest = generate_code(tmp_path, OracleLM(), targets)
    assert set(manifest["files"]) == {t.path for t in targets}
    assert all(e["attempts"] == 1 and e["model"] == ORACLE_ANNOTATOR for e in manifest["files"].values())
    program = SkillProgram(tmp_path, SKILLS)
    assert program.skills == SKILLS and len(program.digest()) == 16
    SkillProgram(tmp_path, SKILLS, policy="task:delphi")


def test_a_refusal_is_fed_back_once(tmp_path):
    lm = ScriptedLM([BAD, GOOD])
    prompts = []
    original = lm.generate
    lm.generate = lambda ps, params: prompts.extend(ps) or original(ps, params)
    manifest = generate_code(tmp_path, lm, [task_target("descend", "Go down.")])
    entry = manifest["files"]["policies/tasks/descend.py"]
    assert entry["attempts"] == 2 and "obs has no field 'dlvl'" in entry["rejected"][0]["reason"]
    assert len(prompts) == 2 and "About your previous attempt: none" in prompts[0]
    assert "obs has no field 'dlvl'" in prompts[1]
    rejected = tmp_path / entry["rejected"][0]["file"]
    assert rejected.read_text().startswith("# REFUSED: line 2: obs has no field 'dlvl'")
    assert (tmp_path / "policies/tasks/descend.py").read_text() == GOOD.split("\n", 1)[1].rsplit("```", 1)[
        0
    ].rstrip("\n") + "\n"


def test_two_refusals_stop_with_the_reason_and_where_the_code_is(tmp_path):
    with pytest.raises(CodeGenerationError) as info:
        generate_code(tmp_path, ScriptedLM([BAD, BAD]), [task_target("descend", "Go down.")])
    message = str(info.value)
    assert "refused twice" in message and "obs has no field 'dlvl'" in message
    assert str(tmp_path / "rejected/policies/tasks/descend.attempt2.py") in message
    assert (tmp_path / "rejected/policies/tasks/descend.attempt1.py").is_file()
    assert not (tmp_path / "policies/tasks/descend.py").exists()


def test_a_reply_without_code_counts_as_a_refusal(tmp_path):
    with pytest.raises(CodeGenerationError, match="no single python code block"):
        generate_code(tmp_path, ScriptedLM(["I would rather not."]), [task_target("descend", "Go down.")])


def test_rerun_keeps_accepted_files_and_redoes_edited_ones(tmp_path):
    targets = [task_target("descend", "Go down.")]
    generate_code(tmp_path, ScriptedLM([GOOD]), targets)
    again = ScriptedLM(["never asked"])
    generate_code(tmp_path, again, targets)
    assert again.served == 0
    (tmp_path / "policies/tasks/descend.py").write_text("# edited\n")
    generate_code(tmp_path, ScriptedLM([GOOD]), targets)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["files"]["policies/tasks/descend.py"]["attempts"] == 1


def test_unknown_tasks_get_a_fallback_picked_by_key_words(tmp_path):
    generate_code(
        tmp_path,
        OracleLM(),
        [
            task_target("stairs", "Find the staircase down and go deeper."),
            task_target("sell", "Sell something to a shopkeeper."),
        ],
    )
    assert "stairs_down" in (tmp_path / "policies/tasks/stairs.py").read_text()
    assert "merchant" in (tmp_path / "policies/tasks/sell.py").read_text()
