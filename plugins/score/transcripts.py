"""Transcripts: one JSON file per item per pass, the run's only memory.

Why files and not a results list: with xdist every worker writes its own
items and the controller has no in-memory state, a killed run resumes by
reading back what finished, and a rerun re-scores without calling the model.
One file per item-pass, each replaced atomically, so nothing is half-written
and nothing is appended twice.
"""
from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timezone
from pathlib import Path

from plugins.atomicio import write_json_atomic
from plugins.score.tally import OUTCOMES, Record

SCHEMA = "sparktrace.transcript/1"
log = logging.getLogger("sparktrace.transcripts")

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class TranscriptError(ValueError):
    pass


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def slug(name: str) -> str:
    """A model name as one safe path segment ('meta/llama 3' -> 'meta_llama_3')."""
    s = _SAFE.sub("_", name).strip("._")
    if not s:
        raise TranscriptError(f"model name {name!r} has no characters usable in a path")
    return s


def transcript_path(run_dir: Path, model: str, pass_index: int, item_id: str) -> Path:
    """`<run_dir>/transcripts/<model>/pass<k>/<item id>.json` (the id's slashes are folders)."""
    parts = item_id.split("/")
    if any(p in ("", ".", "..") or _SAFE.search(p) for p in parts):
        raise TranscriptError(
            f"item id {item_id!r} cannot name a transcript file: use letters, digits, '._-' and '/'"
        )
    return Path(run_dir, "transcripts", slug(model), f"pass{pass_index}", *parts[:-1], parts[-1] + ".json")


def write_transcript(path: Path, data: dict) -> None:
    """Temp file in the same folder, then os.replace: a kill leaves the old file or the new one."""
    write_json_atomic(path, {"schema": SCHEMA, **data}, indent=1, sort_keys=True)


def read_transcript(path: Path) -> dict | None:
    """The saved transcript, or None when there is none or it cannot be used (logged)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable transcript (%s); the item will be asked again", path, exc)
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        log.warning("%s: not a %s record; the item will be asked again", path, SCHEMA)
        return None
    return data


def record_of(data: dict, path: Path | str = "<transcript>") -> Record:
    """The score record a transcript holds (its scoring fields, as last written)."""
    try:
        outcome = data["outcome"]
        if outcome not in OUTCOMES:
            raise TranscriptError(f"{path}: field 'outcome' is {outcome!r}, not one of {OUTCOMES}")
        return Record(
            item=data["item"],
            family=data["family"],
            condition=data["condition"],
            order=data["order"],
            pass_index=int(data["pass"]),
            expected=data["expected"],
            chosen=data.get("chosen"),
            strict=data.get("strict"),
            outcome=outcome,
            key_measured=bool(data["key"]["measured"]),
            key=str(data["key"]["gpu"]),
            key_fragile=bool(data["key"].get("fragile", False)),
            family_set=str(data.get("set", "classic")),
            group=str(data.get("group") or ""),
            omitted_for=str(data.get("omitted_for") or ""),
        )
    except KeyError as exc:
        raise TranscriptError(
            f"{path}: field {exc.args[0]!r} is missing; delete the file (or rerun with --refresh)"
        ) from None
