"""Which answer key a run uses, and the GPU its prompts name: one rule for every later stage.

Why one module: the export, the scorer, the heuristics and the site must agree
on the key, and a key's GPU comes from what the device reported in its
measurement records, never from a list kept here. Only the intended dry run
with nothing measured falls back to the committed stand-in device
(prompts/stand-in-gpu.toml), which is no measurement and says so.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

from plugins.items.prompt import Gpu, gpu_of_record
from plugins.measure.keyfile import gpu_slug

STAND_IN_PATH = Path(__file__).resolve().parents[2] / "prompts" / "stand-in-gpu.toml"
MEASURE_FIX = "run the measure pass on a GPU (pytest -m measure, see README)"


class KeyChoiceError(ValueError):
    """No key can be chosen, or the chosen key's GPU is unknown: names the files and the fix."""


@dataclass(frozen=True)
class StandIn:
    """The dry run's device while no GPU has measured a key; `key` is the measure stage's slug of its name."""

    key: str
    gpu: Gpu
    path: Path


def load_stand_in(path: Path = STAND_IN_PATH) -> StandIn:
    """The stand-in device, or one error naming the file and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KeyChoiceError(f"{path}: cannot be read ({exc}); fix: restore it from git") from None
    want = {"stand_in": str, "name": str, "sm_count": int, "compute_capability": str}
    for field, kind in want.items():
        v = data.get(field)
        if not isinstance(v, kind) or isinstance(v, bool) or not v or (kind is int and v <= 0):
            raise KeyChoiceError(f"{path}: field {field!r} is {v!r}; fix: a non-empty {kind.__name__} "
                                 "(stand_in says it is no measurement)")
    extra = sorted(set(data) - set(want))
    if extra:
        raise KeyChoiceError(f"{path}: unknown fields {extra}; fix: keep only {sorted(want)} (the stand-in "
                             "reports no more than the dry-run prompts name)")
    gpu = Gpu(data["name"], data["sm_count"], data["compute_capability"])
    return StandIn(gpu_slug(gpu.name), gpu, path)


def key_files(families_root: Path, key: str = "*") -> list[Path]:
    """Every family's measurement file `<key>.json` (a file taken beside another, `<key>.<stamp>.json`, is
    no key: plugins.measure.keyfile.load_key reads only `<key>.json`)."""
    return sorted(p for p in Path(families_root).glob(f"*/measurements/{key}.json")
                  if "." not in p.stem and not p.parents[1].name.startswith((".", "_")))


def measured_keys(families_root: Path) -> tuple[str, ...]:
    """The GPU keys any family has a measurement for, sorted."""
    return tuple(sorted({p.stem for p in key_files(families_root)}))


def key_gpu(families_root: Path, key: str, stand_in_path: Path | None = STAND_IN_PATH) -> Gpu | None:
    """The GPU of `key`: what the first of its measurement records that names a device reported;
    with none, the stand-in when `key` is the stand-in's key (`stand_in_path` None: never); else None."""
    for path in key_files(families_root, key):
        try:
            gpu = gpu_of_record(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # the item builder's load_key names a corrupt file when it reads that family
        if gpu is not None:
            return gpu
    if stand_in_path is None:
        return None
    stand_in = load_stand_in(stand_in_path)
    return stand_in.gpu if key == stand_in.key else None


def resolve_key(families_root: Path, key: str | None, intended: bool, stand_in_path: Path = STAND_IN_PATH) -> str:
    """The answer key to use: an explicit `key` wins; else the one GPU key that has measurements;
    several: an error listing them; none: the stand-in's key for the intended dry run, else an error."""
    if key:
        return key
    found = measured_keys(families_root)
    if len(found) == 1:
        return found[0]
    if found:
        raise KeyChoiceError(f"{families_root}: measurements exist for several GPU keys {list(found)}; "
                             f"fix: choose one with --key (e.g. --key {found[0]})")
    if intended:
        return load_stand_in(stand_in_path).key
    raise KeyChoiceError(f"no GPU has measured a key yet ({families_root}/*/measurements/ holds no <key>.json); "
                         f"fix: {MEASURE_FIX}, or pass --key-intended for a dry run on the authors' intended "
                         f"winners (NOT measured; its prompts name the stand-in device of {STAND_IN_PATH.name})")


def unknown_gpu_error(families_root: Path, key: str, stand_in_path: Path = STAND_IN_PATH) -> KeyChoiceError:
    """The error for a dry run on a key whose GPU nothing names."""
    stand_in = load_stand_in(stand_in_path)
    found = measured_keys(families_root)
    other = (f"choose a measured key {list(found)} with --key" if found
             else f"drop --key: the dry run then uses the stand-in key {stand_in.key!r}")
    return KeyChoiceError(
        f"key {key!r}: no measurement under {families_root} names its GPU, and it is not the stand-in key "
        f"{stand_in.key!r} ({stand_in.path.name}); fix: {MEASURE_FIX}, or {other}")
