"""Read the history rows of an offline W&B run (``<run>/wandb/offline-run-*/run-*.wandb``) without uploading it.

The file is W&B's record log: a 7-byte header (``:W&B``, magic, version), then LevelDB-log blocks of
32 KiB whose chunks (crc32, length, type: full / first / middle / last) hold protobuf ``Record``s.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Iterator

BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _records(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B record log"
    pos, pending = 7, b""
    while pos + CHUNK_HEADER <= len(data):
        left_in_block = BLOCK - pos % BLOCK
        if left_in_block < CHUNK_HEADER:  # the block's tail is padding
            pos += left_in_block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + CHUNK_HEADER])
        chunk = data[pos + CHUNK_HEADER:pos + CHUNK_HEADER + length]
        pos += CHUNK_HEADER + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
            pending = b""
        elif kind == 0 and length == 0:  # zero padding at the end of a block
            pos += BLOCK - pos % BLOCK if pos % BLOCK else 0


def history_rows(run_folder: Path) -> list[dict[str, Any]]:
    """Every ``wandb.log`` row of the offline run in ``run_folder``, in order, as {key: value}."""
    from wandb.proto import wandb_internal_pb2

    files = list(Path(run_folder).glob("*.wandb"))
    assert len(files) == 1, files
    rows = []
    for raw in _records(files[0]):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") != "history":
            continue
        row = {}
        for item in record.history.item:
            key = item.key or "/".join(item.nested_key)
            row[key] = json.loads(item.value_json)
        rows.append(row)
    return rows
