"""The embedded oracle's rule versions: what changed in each, why, and a frozen digest of the rules.

Why: results judged against the oracle are only comparable when the oracle did not move between them.
Every answer rule lives in the files ``rule_files`` lists (each family's declared answer modules, or the
files such a module names as its rules); the version a committed table used is frozen here by the sha256 of
those files, so editing a frozen rule set fails the suite (``tests/unit/test_oracle_versions.py``)
instead of silently changing what a table means: a change of rules is a new ``ORACLE_VERSION`` with an
entry below naming the evidence that motivated it. ``llmexplore lm oracle --version`` prints this list.
Versions before the current one are history: their code is in the git commits named, not in the package.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OracleVersion:
    version: str
    #: the commit that introduced it
    commit: str
    #: what changed in the rules
    changes: str
    #: what motivated the change (the evidence, and where it is written up)
    evidence: str
    #: sha256 of the rule files (``rules_digest``) once a committed table used this version; None: not frozen
    frozen_digest: str | None = None


VERSIONS: tuple[OracleVersion, ...] = (
    OracleVersion("1", "dd18940",
                  "the first rules: Motif's message preferences from NetHack's published event structure "
                  "(descents, level-ups, kills, gold), ONI's helpfulness labels, ELLM's Crafter goals, "
                  "Housekeep placements, MaestroMotif's reference skill code",
                  "none: written before any result"),
    OracleVersion("2", "621c304",
                  "under the gold and the combat goals each weighs the other's key event 0",
                  "the steering benchmark's first reward models ordered kills and gold alike under both goals, "
                  "so the goals could not steer (docs/MOTIF.md, issue 5)"),
    OracleVersion("3", "f47840a",
                  "under the gold goal, items other than gold tie with routine messages",
                  "the gold reward model paid for every item pickup, not for gold (docs/MOTIF.md, 'Oracle rules "
                  "version 3')"),
    OracleVersion("4", "03e222d",
                  "under the combat goal a monster's attack on the hero is a loss or routine, never a gain",
                  "combat reward models paid for being bitten and the combat agents died sooner without killing "
                  "more (docs/MOTIF.md, docs/LM.md; issue 5)"),
    OracleVersion("5", "b932960",
                  "Motif's goals carry the published exclusions (combat: going down is routine, gold: fights "
                  "are); ONI's classification asks for extremely helpful messages under the defaultgoal, combat "
                  "and gold variants",
                  "a reading of Motif's published goal prompts and ONI's classifier prompt: ours differed from "
                  "them; changed to follow the papers, not a result (docs/MOTIF.md, 'Oracle rules version 5')",
                  frozen_digest="89b6740d3d02702f5cdaa436161c321b707e5c01ba6d967181aee68ca5968839"),
    OracleVersion("6", "c7095fd",
                  "MiniHack: a goal of its own, `minihack` (reach the staircase down), for Motif's preferences "
                  "(and ONI-Ranking's) and ONI's classification, answered by the MiniHack family's rules "
                  "(envs/minihack/oracle.py: keys, doors unlocked, opened or locked, ways across water or lava, "
                  "monsters in the way, items, fountains, walls, the stairs; NetHack's events reused), with ONI's "
                  "published threshold (only extremely helpful messages are helpful); NetHack's goals unchanged. "
                  "Crafter (commit 11b0a0d) answers Motif's and ONI's questions (crafter_preference, "
                  "crafter_helpfulness; envs/crafter/progress.py): a caption evidencing an achievement deeper in "
                  "Crafter's published prerequisite tree is preferred (then more achievements evidenced, then fewer "
                  "low vitals); helpful means one evidenced at depth 2 or more (a placed table or plant, anything "
                  "made or mined)",
                  "MiniHack: the inert audit (issue 53): all 15 committed MiniHack oni-retrieval cells rewarded 0% "
                  "of steps, since under NetHack's goals no message of KeyRoom or MultiRoom is extremely helpful "
                  "(results/minihack/README.md, docs/minihack.md). Crafter: none, new rules for a family Motif and "
                  "ONI had not run on, written from Crafter's published achievement structure before any result "
                  "(issue 48; docs/MOTIF.md, docs/ONI.md)",
                  # frozen when the first committed cells judged by it ran: Crafter 1M's ONI and Motif rows
                  frozen_digest="d107bece884e976875b257710531e95d758ed6cb837acffbfd3d7ca8d254308e"),
)


def rule_files() -> list[Path]:
    """Every file whose content decides an oracle answer, in a fixed order: for each answer module a family
    declares, the files it names in ``ORACLE_RULE_FILES`` (an answer drawn from reference files, such as
    MaestroMotif's code), else the module itself. The LM layer's plumbing around them is not a rule."""
    from llmexplore.envs.registry import families

    modules = sorted({path.split(":")[0] for family in families() for path in family.oracle_answers.values()})
    files: list[Path] = []
    for name in modules:
        declared = getattr(importlib.import_module(name), "ORACLE_RULE_FILES", None)
        files += [Path(path) for path in declared] if declared is not None else [
            Path(importlib.util.find_spec(name).origin)]  # type: ignore[union-attr, arg-type]
    return files


def rules_digest() -> str:
    """sha256 over the rule files' contents (each file's sha256, sorted): an edit changes it, moving a file
    to another folder of the package does not."""
    files = sorted(hashlib.sha256(path.read_bytes()).hexdigest() for path in rule_files())
    return hashlib.sha256("\n".join(files).encode()).hexdigest()


def version_entry(version: str) -> OracleVersion | None:
    """The changelog entry of ``version``, None when it has none."""
    return next((v for v in VERSIONS if v.version == version), None)
