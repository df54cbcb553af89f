"""Names for papers: a method's and a task's display name in LaTeX tables."""

from __future__ import annotations

from llmexplore.envs.registry import find_family
from llmexplore.errors import ConfigError
from llmexplore.methods.registry import get_method


def method_display_name(label: str, method: str) -> str:
    """The registered method's ``display_name`` when the row label is the method's own name; a label a grid
    chose (``rnd-big``) is kept, since it names a variant the display name would hide."""
    if label != method:
        return label
    try:
        cls = get_method(method)
    except ConfigError:  # a record of a method this installation lacks
        return label
    return cls.display_name or label


def task_display_name(task: str) -> str:
    """``nethack:score`` -> ``NetHack score``: the family's title, then the task with spaces for dashes kept."""
    family, _, name = task.partition(":")
    found = find_family(family)
    title = found.title if found else family.capitalize()
    return f"{title} {name}" if name else title
