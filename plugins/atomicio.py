"""Durable writes: a temp file in the target's folder, then os.replace.

Why one module: transcripts, keys, items, reports and slips must all survive a
kill mid-write (the old file or the new one, never half of either).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these files are meant to be read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode())


def write_json_atomic(path: Path, obj: Any, indent: int | None = 2, sort_keys: bool = False) -> None:
    write_text_atomic(path, json.dumps(obj, indent=indent, sort_keys=sort_keys) + "\n")
