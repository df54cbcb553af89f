"""What a run reads besides its settings, by content: the files and folders a method names in its options
(a reward model, generated code, an embedding model) and a fine-tuning run's parent checkpoint.

Why: a path says where an artefact was, not what it held; a reward model retrained in place, or a parent
checkpoint replaced, would leave a record naming the same path for a different run. Each session's record
keeps the sha256 of every artefact as that session found it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from llmexplore.agents.resolved_run import ResolvedRun
from llmexplore.atomic import file_sha256


def path_sha256(path: Path) -> str:
    """A file's sha256; for a folder, the sha256 of its files' relative paths and sha256s, in path order
    (so the same files give the same digest wherever the folder lies)."""
    if path.is_file():
        return file_sha256(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\n".encode())
    return digest.hexdigest()


def run_artefacts(run: ResolvedRun) -> dict[str, dict[str, Any]]:
    """Each artefact of the run by name: its resolved path and sha256 (None when it cannot be read), and what
    it was made from where the artefact records that (``made_from``: a reward model's collecting checkpoint)."""
    from llmexplore.methods.registry import get_method, parse_options

    method = get_method(run.method)
    options = parse_options(method, run.method_options)
    paths = dict(method.artefacts(options))
    origins = method.artefact_origins(options)
    if run.init_checkpoint:
        paths["parent_checkpoint"] = run.init_checkpoint
    out = {}
    for name, text in paths.items():
        path = Path(text).expanduser().resolve()
        try:
            digest: str | None = path_sha256(path) if path.exists() else None
        except OSError:
            digest = None
        out[name] = {"path": str(path), "sha256": digest}
        if origins.get(name):
            out[name]["made_from"] = origins[name]
    return out
