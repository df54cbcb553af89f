"""Pair datasets in Motif's on-disk layout, ours and the published one.

    <root>/data/message.npy      uint8  (N, 2, 256)       captions' raw bytes
    <root>/data/blstats.npy      int    (N, 2, 27)
    <root>/data/tty_chars.npy    uint8  (N, 2, 24, 80)    optional
    <root>/data/tty_colors.npy   int8   (N, 2, 24, 80)    optional
    <root>/info/<key>.npy        (N, 2)                   e.g. score, turns, experience_level
    <root>/preference/<name>.npy uint8  (N,)              0 first, 1 second, 2 tie, 3 unknown
    <root>/digests.json                                   sha256 of each data/ and info/ file (ours only)

The published dataset stores a sequence axis of length 1 after the pair axis
((N, 2, 1, 256) ...); we accept both and present (N, 2, ...). Arrays are memory-mapped,
so datasets larger than memory work. Preference files are named
``<annotator>_msg_<goal>_<version>`` as in the published dataset.

A dataset we write carries the sha256 of each array it wrote (``digests.json``), checked each
time it is opened: a flipped bit in an observation pair would otherwise be trained on silently.
A mismatch refuses the dataset, naming the file. The published dataset has no digests; label
files change while they are annotated and are checked for shape and range instead.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from llmexplore.atomic import file_sha256
from llmexplore.errors import DataError
from llmexplore.paths import check_name, inside

#: how a dataset of ours was collected (task, seed, policy); the published dataset has none
COLLECTION_FILE = "collection.json"
#: sha256 of each array file a dataset of ours was written with (relative path -> hex digest)
DIGEST_FILE = "digests.json"
LABEL_FIRST, LABEL_SECOND, LABEL_TIE, LABEL_UNKNOWN = 0, 1, 2, 3
LABELS = (LABEL_FIRST, LABEL_SECOND, LABEL_TIE, LABEL_UNKNOWN)

DATA_SHAPES: dict[str, tuple[int, ...]] = {
    "message": (256,),
    "blstats": (27,),
    "tty_chars": (24, 80),
    "tty_colors": (24, 80),
}
#: published blstats have 26 entries (an older NLE); both are accepted
_BLSTATS_SIZES = {26, 27}
#: ending of files written before they are renamed into place
_TMP = ".tmp"


def preference_name(annotator: str, goal: str, version: str) -> str:
    """The label file's name (no .npy) of an annotation, ``<annotator>_msg_<goal>_<version>``, as published."""
    return f"{annotator}_msg_{goal}_{version}"


def _decode(raw: np.ndarray) -> str:
    data = bytes(np.asarray(raw, dtype=np.uint8))
    end = data.find(b"\0")
    return (data if end < 0 else data[:end]).decode("latin-1").strip()


@dataclass
class PairDataset:
    root: Path
    data: dict[str, np.ndarray]
    info: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.data["message"].shape[0])

    @property
    def messages(self) -> np.ndarray:
        """(N, 2, 256) uint8 view."""
        return self.data["message"]

    def caption(self, index: int, side: int) -> str:
        """The text of message ``side`` (0 or 1) of pair ``index``: bytes up to the first NUL, latin-1, stripped."""
        return _decode(self.messages[index, side])

    def captions(self, indices: Iterable[int]) -> list[tuple[str, str]]:
        """(first, second) message texts of each given pair, in order."""
        return [(self.caption(i, 0), self.caption(i, 1)) for i in indices]

    def collection_record(self) -> dict[str, Any] | None:
        """How the pairs were collected (``collection.json``: task, seed, and the policy, a checkpoint by
        sha256); None for a dataset without one (the published one)."""
        path = self.root / COLLECTION_FILE
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable collection record ({exc})",
                            hint="restore it from a copy, or collect the dataset again") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}: not a readable collection record (a JSON object is expected)",
                            hint="restore it from a copy, or collect the dataset again")
        return record

    def collected_task(self) -> str | None:
        """The task the pairs were collected in (``collection.json``); None for a dataset without one (the
        published one: NetHack's). Its family says in which words the pairs are asked about."""
        task = (self.collection_record() or {}).get("task")
        path = self.root / COLLECTION_FILE
        if task is not None and not isinstance(task, str):
            raise DataError(f"{path}: 'task' must be a task name, not {task!r}")
        return task

    # -- preference files -----------------------------------------------------------------
    @property
    def preference_dir(self) -> Path:
        """``<root>/preference``, where the label files live (it may not exist yet)."""
        return self.root / "preference"

    def preference_names(self) -> list[str]:
        """The annotations present (label file names without .npy), sorted; [] without a preference/ folder.

        Not annotations, so left out: hidden files (no annotation name starts with a dot; ``open_labels``
        writes its temporary file so) and ``<name>.tmp.npy``, the temporary file earlier versions wrote.
        Either may be left by a crash, and listing it would make opening the dataset check it as labels."""
        if not self.preference_dir.is_dir():
            return []
        return sorted(p.stem for p in self.preference_dir.glob("*.npy")
                      if not p.name.startswith(".") and not p.stem.endswith(_TMP))

    def preference_path(self, name: str) -> Path:
        """The label file of annotation ``name``; a name that would lead out of preference/ is refused."""
        return inside(self.preference_dir, check_name(name, "annotation name") + ".npy", what="annotation name")

    def labels(self, name: str) -> np.ndarray:
        """Read-only labels, checked for length and range."""
        path = self.preference_path(name)
        if not path.is_file():
            raise DataError(f"no preference file {path}",
                            hint=f"available: {', '.join(self.preference_names()) or 'none (annotate first)'}")
        try:
            labels = np.load(path, mmap_mode="r")
        except (ValueError, OSError, EOFError) as exc:  # EOFError: a truncated array
            raise DataError(f"{path}: not a readable .npy array ({exc})") from None
        _check_labels(path, labels, len(self))
        return labels

    def open_labels(self, name: str) -> np.memmap:
        """Writable labels, created filled with 'unknown' (3) if absent; flush() to persist. Several
        processes may open one label file at once (annotation chunks): exactly one creates it."""
        path = self.preference_path(name)
        self.preference_dir.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create_labels(path, len(self))
        labels = np.load(path, mmap_mode="r+")
        _check_labels(path, labels, len(self))
        return labels


def _create_labels(path: Path, n: int) -> None:
    """Write an all-unknown label file under a name of this process, then link it into place unless another
    process got there first: a label file is never replaced, since a chunk that already opened it would go on
    writing its labels into a file nobody reads."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}{_TMP}")  # never listed as an annotation, even after a crash
    array = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(n,))
    array[:] = LABEL_UNKNOWN
    array.flush()
    del array
    with open(tmp, "rb+") as fh:  # the link must not land before the data
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)  # fails, replacing nothing, when the file exists
    except FileExistsError:
        pass  # another chunk created it first: use that one
    except OSError:  # a file system without hard links: the old way, replacing only a file not there yet
        if not path.exists():
            tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _check_labels(path: Path, labels: np.ndarray, n: int) -> None:
    if not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{path}: labels have dtype {labels.dtype}, expected integers 0..3")
    if labels.shape != (n,):
        raise DataError(f"{path}: labels have shape {labels.shape}, expected ({n},) to match data/message.npy")
    if labels.size and (labels.min() < 0 or labels.max() > LABEL_UNKNOWN):
        raise DataError(f"{path}: labels out of range [0, 3] (found {int(labels.min())}..{int(labels.max())})")


def _squeeze_sequence_axis(path: Path, array: np.ndarray, key: str) -> np.ndarray:
    """Accept (N, 2, ...) and the published (N, 2, 1, ...); return (N, 2, ...)."""
    trailing = DATA_SHAPES.get(key)
    if array.ndim >= 3 and array.shape[2] == 1 and trailing is not None and array.shape[3:] == _expected(key, array, 3):
        array = array[:, :, 0]
    if array.ndim < 2 or array.shape[1] != 2:
        raise DataError(f"{path}: expected shape (N, 2, ...) for a pair dataset, found {array.shape}")
    if trailing is not None and array.shape[2:] != _expected(key, array, 2):
        raise DataError(f"{path}: expected trailing shape {trailing}, found {array.shape[2:]}")
    return array


def _expected(key: str, array: np.ndarray, start: int) -> tuple[int, ...]:
    if key == "blstats" and array.ndim > start and array.shape[start] in _BLSTATS_SIZES:
        return (array.shape[start],)
    return DATA_SHAPES[key]


def open_pair_dataset(root: str | Path, require: Sequence[str] = ("message",)) -> PairDataset:
    """Open and check a pair dataset; every problem names the file."""
    root = Path(root)
    data_dir = root / "data"
    if not data_dir.is_dir():
        raise DataError(f"{root} is not a pair dataset: no data/ folder",
                        hint="create one with `llmexplore motif collect`, or point at the published Motif dataset")
    data: dict[str, np.ndarray] = {}
    for path in sorted(data_dir.glob("*.npy")):
        try:
            array = np.load(path, mmap_mode="r")
        except (ValueError, OSError, EOFError) as exc:  # EOFError: a truncated array
            raise DataError(f"{path}: not a readable .npy array ({exc})") from None
        data[path.stem] = _squeeze_sequence_axis(path, array, path.stem)
    missing = [k for k in require if k not in data]
    if missing:
        raise DataError(f"{data_dir}: missing arrays {', '.join(f'{k}.npy' for k in missing)}")
    _check_digests(root)
    n = data["message"].shape[0] if "message" in data else next(iter(data.values())).shape[0]
    for key, array in data.items():
        if array.shape[0] != n:
            raise DataError(f"{data_dir / (key + '.npy')}: {array.shape[0]} pairs, but data/message.npy has {n}")
    if "message" in data and data["message"].dtype != np.uint8:
        raise DataError(f"{data_dir / 'message.npy'}: dtype {data['message'].dtype}, expected uint8 bytes")
    info: dict[str, np.ndarray] = {}
    info_dir = root / "info"
    if info_dir.is_dir():
        for path in sorted(info_dir.glob("*.npy")):
            try:
                array = np.load(path, mmap_mode="r")
            except (ValueError, OSError, EOFError) as exc:  # EOFError: a truncated array
                raise DataError(f"{path}: not a readable .npy array ({exc})") from None
            if array.ndim >= 3 and array.shape[2] == 1:
                array = array[:, :, 0]
            if array.shape[:2] != (n, 2):
                raise DataError(f"{path}: expected shape ({n}, 2), found {array.shape}")
            info[path.stem] = array
    dataset = PairDataset(root, data, info)
    for name in dataset.preference_names():
        dataset.labels(name)  # validates length and range
    return dataset


def write_pair_dataset(root: str | Path, arrays: dict[str, np.ndarray], info: dict[str, np.ndarray],
                       meta: dict[str, Any] | None = None) -> PairDataset:
    """Write a new dataset atomically: into a sibling temp folder (one a crashed write left is removed
    first), then renamed into place.

    ``meta`` (how the data was collected) goes to ``collection.json``; readers ignore it."""
    root = Path(root)
    if (root / "data").exists():
        raise DataError(f"{root} already holds a pair dataset", hint="choose another folder or delete it")
    tmp = root.with_name(root.name + ".partial")
    if tmp.exists():  # left by a write that crashed: none of its arrays may end up in this dataset
        shutil.rmtree(tmp)
    for sub, group in (("data", arrays), ("info", info)):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        for key, value in group.items():
            np.save(tmp / sub / f"{key}.npy", value)
    (tmp / "preference").mkdir(exist_ok=True)
    _write_digests(tmp)
    if meta is not None:
        (tmp / COLLECTION_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    root.parent.mkdir(parents=True, exist_ok=True)
    if root.exists():
        root.rmdir()  # an empty target folder is fine
    tmp.replace(root)
    return open_pair_dataset(root)


def _write_digests(root: Path) -> None:
    """Record the sha256 of every data/ and info/ array of a dataset being written."""
    files = sorted(p.relative_to(root).as_posix() for sub in ("data", "info") for p in (root / sub).glob("*.npy"))
    (root / DIGEST_FILE).write_text(json.dumps({"algorithm": "sha256",
                                                "files": {name: file_sha256(root / name) for name in files}},
                                               indent=2) + "\n")


def _check_digests(root: Path) -> None:
    """Refuse a dataset whose arrays differ from the digests it was written with, naming the file."""
    path = root / DIGEST_FILE
    if not path.exists():
        return  # the published dataset, or one written before digests
    try:
        files = json.loads(path.read_text())["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a readable digest list ({exc})",
                        hint="restore it from a copy, or collect the dataset again") from None
    for name, expected in files.items():
        file = inside(root, *str(name).split("/"), what="file named in digests.json")
        if not file.is_file():
            raise DataError(f"{file}: missing, but {path.name} lists it", hint="restore it from a copy, or "
                            "collect the dataset again")
        if file_sha256(file) != expected:
            raise DataError(f"{file}: its content differs from the sha256 recorded in {path.name} when the dataset "
                            "was written (damaged or edited)",
                            hint="restore the file from a copy, or collect the dataset again (llmexplore motif "
                                 "collect)")
