"""The LaTeX ``\\label`` of every leaderboard table, in one place: the writer takes them from here and the
README's list is checked against what a built leaderboard holds (tests/unit/test_leaderboard_labels.py)."""

from __future__ import annotations

#: kind of table -> its label; ``{task}`` is the task's key (``task_key``)
LABELS: dict[str, str] = {
    "aggregate": "tab:agg",
    "aggregate improvement": "tab:pi-all",
    "task": "tab:{task}",
    "improvement": "tab:pi-{task}",
    "achievements": "tab:ach-{task}",
    "published": "tab:pub-{task}",
    "inert": "tab:inert",
    "not counted": "tab:not-counted",
}


def task_key(task: str) -> str:
    """``crafter:reward-free`` -> ``crafter-reward-free``: every character but a letter or digit as a dash,
    so the label is one word to LaTeX."""
    return "".join(c if c.isalnum() else "-" for c in task)


def table_label(kind: str, task: str | None = None) -> str:
    """The label of a table of ``kind`` (a key of LABELS), for ``task`` where the kind is per task."""
    pattern = LABELS[kind]
    if "{task}" in pattern:
        if task is None:
            raise ValueError(f"a '{kind}' table's label needs its task")
        return pattern.format(task=task_key(task))
    return pattern
