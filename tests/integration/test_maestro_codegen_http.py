"""The one regeneration round against a real OpenAI-compatible HTTP server (scripted replies)."""

from __future__ import annotations

import pytest

from llmexplore.lm.backends import make_lm
from llmexplore.lm.config import MEMORY_CACHE, LMConfig
from llmexplore.methods.maestro.codegen import CodeGenerationError, generate_code, skill_targets
from tests.helpers.lm_server import ServerProcess

BAD = "Sure.\n```python\ndef initiation(obs):\n    import os\n    return obs['nearby']['altar'] > 0\n```\n"
GOOD = (
    "```python\ndef initiation(obs):\n    return obs['nearby']['altar'] > 0 and obs['num_items'] > 0\n```\n"
)


def _lm(server: ServerProcess):
    return make_lm(
        LMConfig(
            backend="openai",
            base_url=server.base_url,
            model=server.model,
            cache=MEMORY_CACHE,
            max_retries=1,
            timeout_s=30,
        )
    )


def test_regeneration_round_over_http(tmp_path):
    target = skill_targets(["worshipper"])[0]
    with ServerProcess.scripted([BAD, GOOD], tmp_path / "server") as server, _lm(server) as lm:
        manifest = generate_code(tmp_path / "code", lm, [target])
        prompts = server.prompts()
    entry = manifest["files"]["skills/worshipper/initiation.py"]
    assert entry["attempts"] == 2 and entry["model"] == server.model
    assert entry["rejected"][0]["reason"] == "line 2: imports are not allowed"
    assert len(prompts) == 2
    assert "About your previous attempt: none" in prompts[0]["prompt"]
    assert "refused by the validator: line 2: imports are not allowed" in prompts[1]["prompt"]
    assert "obs['num_items'] > 0" in (tmp_path / "code/skills/worshipper/initiation.py").read_text()


def test_refused_twice_over_http(tmp_path):
    target = skill_targets(["worshipper"])[0]
    with ServerProcess.scripted([BAD], tmp_path / "server") as server, _lm(server) as lm:
        with pytest.raises(CodeGenerationError) as info:
            generate_code(tmp_path / "code", lm, [target])
    assert "imports are not allowed" in str(info.value)
    assert "rejected/skills/worshipper/initiation.attempt2.py" in str(info.value)
