"""The embedded oracle's rules are frozen per version (issue 53): editing the rules a committed table was
judged by fails here, so a change of rules is always a new version with its reason written down."""

from __future__ import annotations

import shutil

import pytest

from llmexplore.lm.oracle import ORACLE_VERSION
from llmexplore.lm.oracle import versions
from llmexplore.lm.oracle.versions import VERSIONS, rule_files, rules_digest, version_entry


def test_every_version_up_to_the_current_one_says_what_changed_and_why():
    assert [v.version for v in VERSIONS] == [str(n) for n in range(1, int(ORACLE_VERSION) + 1)]
    assert all(v.changes and v.evidence and len(v.commit) >= 7 for v in VERSIONS)


def test_the_current_rules_are_the_frozen_ones():
    entry = version_entry(ORACLE_VERSION)
    if entry.frozen_digest is None:
        pytest.skip(f"oracle rules version {ORACLE_VERSION} is not frozen yet (no committed table uses it)")
    assert rules_digest() == entry.frozen_digest, (
        f"the oracle's rules differ from frozen version {ORACLE_VERSION}, which committed tables were judged by: "
        "make the change a new version (bump ORACLE_VERSION in llmexplore/lm/oracle/__init__.py and add an entry "
        "to llmexplore/lm/oracle/versions.py naming what motivated it)")


def test_an_edit_of_one_rule_changes_the_digest_and_a_move_does_not(tmp_path, monkeypatch):
    files, real = rule_files(), rules_digest()
    assert any(f.name == "oracle.py" and f.parent.name == "nethack" for f in files)
    copies = []
    for i, path in enumerate(files):
        copy = tmp_path / str(i) / path.name
        copy.parent.mkdir()
        shutil.copy(path, copy)
        copies.append(copy)
    monkeypatch.setattr(versions, "rule_files", lambda: list(reversed(copies)))  # moved and listed otherwise
    assert rules_digest() == real
    nethack_rules = next(c for c, f in zip(copies, files) if f.parent.name == "nethack")
    nethack_rules.write_text(nethack_rules.read_text().replace("gold", "g0ld", 1))
    assert rules_digest() != real
