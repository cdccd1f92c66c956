"""One content-addressed cache on disk: .cache/sparktrace/<kind>/<sha256>.

Why: a candidate compiles, disassembles and builds for the emulator the same way
in every xdist worker and every session until its source, the options or a tool
changes, so the work is done once and read back after. The key is the sha256 of
everything the result depends on (source, options, tool versions), so an
upgraded tool misses instead of serving a stale result. Entries are written to a
temp file and renamed (plugins/atomicio.py) and carry their payload's sha256,
so two workers writing the same entry, or a run killed mid-write, can never
leave a file that reads as valid. SPARKTRACE_NO_CACHE=1 turns the cache off (for
tests that measure fresh work); SPARKTRACE_CACHE_DIR moves it.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from plugins.atomicio import write_bytes_atomic
from plugins.cache.work import count

OFF_ENV = "SPARKTRACE_NO_CACHE"
DIR_ENV = "SPARKTRACE_CACHE_DIR"
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / ".cache" / "sparktrace"
MAGIC = b"sparktrace-cache/1\n"
_SCRATCH: dict[str, Path] = {}


def enabled() -> bool:
    return os.environ.get(OFF_ENV, "") in ("", "0")


def root() -> Path:
    return Path(os.environ.get(DIR_ENV) or DEFAULT_ROOT)


def digest(*parts: bytes | str) -> str:
    """sha256 over the parts, each length-prefixed, so ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else p.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def kind_dir(kind: str) -> Path:
    """Where entries of `kind` live; with the cache off, a folder of this process's own,
    removed at exit, for tools that need a directory to build in (the emulator)."""
    if enabled():
        return root() / kind
    if kind not in _SCRATCH:
        _SCRATCH[kind] = Path(tempfile.mkdtemp(prefix=f"sparktrace-{kind}-"))
        atexit.register(shutil.rmtree, _SCRATCH[kind], True)
    return _SCRATCH[kind]


def entry_path(kind: str, key: str) -> Path:
    return root() / kind / key[:2] / key


def load(kind: str, key: str) -> bytes | None:
    """The stored payload, or None when missing, off, or not a whole valid entry."""
    if not enabled():
        return None
    try:
        raw = entry_path(kind, key).read_bytes()
    except OSError:
        return None
    head, sep, payload = raw[len(MAGIC):].partition(b"\n")
    if not raw.startswith(MAGIC) or not sep or hashlib.sha256(payload).hexdigest().encode() != head:
        return None
    return payload


def store(kind: str, key: str, payload: bytes) -> None:
    if enabled():
        write_bytes_atomic(entry_path(kind, key), MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def cached(kind: str, key: str, make: Callable[[], bytes]) -> bytes:
    """The entry for `key`, made (and counted as `kind`) when it is not stored."""
    if (hit := load(kind, key)) is not None:
        count("hit:" + kind)
        return hit
    count(kind)
    payload = make()
    store(kind, key, payload)
    return payload


def cached_json(kind: str, key: str, make: Callable[[], Any]) -> Any:
    """`cached` for a JSON-able value (read back as JSON: tuples come back as lists)."""
    return json.loads(cached(kind, key, lambda: json.dumps(make(), sort_keys=True).encode()))
