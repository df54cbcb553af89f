"""The embedded oracle's entry for MaestroMotif's code requests (the question kind ``maestro_code``).

The NetHack family declares it (``EnvFamily.oracle_answers``), so the oracle loads it on the first
code request in any process, and the LM layer names no method. What decides the answer is the reference
code beside it (``oracle.py`` and ``maestro_reference/``): those files are the oracle's rules for this
kind (``ORACLE_RULE_FILES``, read by ``lm/oracle/versions.py``), not this adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from llmexplore.methods.maestro.oracle import REFERENCE_DIR, code_answer

if TYPE_CHECKING:  # pragma: no cover
    from llmexplore.lm.oracle import OracleQuery

#: the files whose content decides the answers, for the oracle's rules digest
ORACLE_RULE_FILES: tuple[Path, ...] = (Path(__file__).resolve().parent / "oracle.py",
                                       *sorted(REFERENCE_DIR.rglob("*.py")))


def answer(query: OracleQuery) -> str:
    """The oracle's reply to a code request: the reference function it asks for (``oracle.code_answer``)."""
    return code_answer(dict(query.fields))
