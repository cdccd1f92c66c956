"""The items: families x {source, full, the set's ablated condition} x {forward, mirror}.

An item is what one model call answers. It carries its measured answer key,
which is never shown in the prompt. Items round-trip through JSONL so other
harnesses (Inspect AI, lm-evaluation-harness) can run them.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

from plugins.atomicio import write_text_atomic
from plugins.measure.keyfile import FamilyKey, KeyFileError, key_path, load_key
from plugins.family.manifest import DEFAULT_SET, SET_CHOICES, Family, SlipCues, discover, selected_sets
from plugins.items.keys import STAND_IN_PATH, KeyChoiceError, key_gpu, resolve_key, unknown_gpu_error
from plugins.items.options import CONDITIONS, LETTERS, ORDERS, TASK_WORD, ablated_condition, conditions_of
from plugins.items.prompt import gpu_of_record, option_order, render_prompt
from plugins.items.slip import load_slip, render_slip, slip_path



def task_name(condition: str, order: str, family_set: str = DEFAULT_SET) -> str:
    """The seed's task names for the classic set; other sets add their name:
    `kernel-compass-full-mirror`, `kernel-compass-hard-full-mirror`,
    `kernel-compass-diagnose-ablated-mirror` (every set's third condition is `ablated`)."""
    middle = "" if family_set == DEFAULT_SET else f"{family_set}-"
    return f"kernel-compass-{middle}{TASK_WORD[condition]}-{order}"


@dataclass(frozen=True)
class Option:
    letter: str
    rewrite: str  # the rewrite's id in family.toml
    text: str


@dataclass(frozen=True)
class KeyInfo:
    """Whose measurement is the answer key, and whether it was measured at all."""

    gpu: str
    measured: bool
    file: str
    git_commit: str = ""
    date: str = ""
    fragile: bool = False  # kept, but the key's interval on runner-up/winner reaches below 1.08 (docs/artifacts.md)
    noisy: bool = False  # the winner/runner-up ratio is within the samples' spread of the keep gate
    gpu_name: str = ""  # the device the key was measured on (for an intended key: the known GPU of the slug)
    sm_count: int | None = None
    compute_capability: str = ""


@dataclass(frozen=True)
class Item:
    id: str  # "clamp_smem/full/mirror"
    task: str  # "kernel-compass-full-mirror"
    family: str
    condition: str
    order: str
    prompt: str
    prompt_sha256: str
    options: tuple[Option, ...]
    answer: str  # the letter of the measured winner in this order
    runtimes_ms: dict  # letter -> measured time of that option (two-step mode only)
    key: KeyInfo
    set: str = DEFAULT_SET  # the family set: classic, hard or diagnose
    group: str = ""  # a data group's id, its members joined by '+' (diagnose set); "" otherwise
    pair: str = ""  # a shape pair's id, both names sorted and joined by '+'; "" otherwise
    family_sha256: str = ""  # sha256 over the family's files (measurements excluded): what the item was built from

    def letter_of(self, rewrite: str) -> str:
        for o in self.options:
            if o.rewrite == rewrite:
                return o.letter
        raise KeyError(rewrite)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "Item":
        schema = d.get("schema")
        if schema is not None and schema not in ITEM_SCHEMAS:
            raise ValueError(f"field 'schema' is {schema!r}, not one of {ITEM_SCHEMAS}; re-export with this version")
        d = {k: v for k, v in d.items() if k not in EXPORT_FIELDS}
        return Item(
            **{
                **d,
                "options": tuple(Option(**o) for o in d["options"]),
                "key": KeyInfo(**d["key"]),
            }
        )


# Every exported line carries the schema and where it came from; older files without them still read.
ITEM_SCHEMA = "sparktrace.item/2"
ITEM_SCHEMAS = (ITEM_SCHEMA,)
EXPORT_FIELDS = ("schema", "export")


def write_jsonl(items: Iterable[Item], path: Path, export: dict | None = None) -> None:
    """Atomic: a killed export never leaves half a file. With `export` (the commit), every line
    also gets the schema version and that block."""
    head = {"schema": ITEM_SCHEMA, "export": export} if export is not None else {}
    write_text_atomic(path, "".join(json.dumps({**head, **it.to_json()}, sort_keys=True) + "\n" for it in items))


def family_digest(fam_dir: Path) -> str:
    """sha256 over a family's files (relative path and bytes), its measurements left out: the
    source a model reads, its reference and its launch plan."""
    h = hashlib.sha256()
    root = Path(fam_dir)
    for p in sorted(q for q in root.rglob("*") if q.is_file() and "__pycache__" not in q.parts
                    and "measurements" not in q.relative_to(root).parts):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def read_jsonl(path: Path) -> list[Item]:
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(Item.from_json(json.loads(line)))
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"{path}:{n}: not an item record ({exc})") from None
    return out


# --------------------------------------------------------------------------- building


def not_measured_banner(key: str) -> str:
    return (
        f"KEY NOT MEASURED: these items use each family author's intended winner as the answer on {key}; "
        "it was never measured on a GPU, so they only check the pipeline and score nothing."
    )


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _measured_answer(fam: Family, fk: FamilyKey, key: str, where: str) -> tuple[str, dict[str, float]] | str:
    """(winner id, rewrite id -> time_ms) from a kept measurement, or a note on why not."""
    ids = [r.id for r in fam.rewrites]
    missing = [i for i in ids if i not in fk.times_ms]
    if missing:
        return (f"{fam.name}: measurement for {key} is stale: {where} has no time_ms for rewrites {missing} "
                f"(family.toml's rewrites are {ids}); re-run the measure pass")
    if fk.winner not in ids:
        raise KeyFileError(f"{where}: field 'ranking.winner' is {fk.winner!r}, not one of the rewrites {ids}; "
                           "fix: re-run the measure pass")
    times = {i: fk.times_ms[i] for i in ids}
    fastest = min(ids, key=lambda i: times[i])
    if times[fastest] < times[fk.winner]:
        raise KeyFileError(f"{where}: field 'ranking.winner' is {fk.winner!r} but {fastest!r} has the lower time_ms; "
                           "fix: re-run the measure pass (the file was edited or is corrupt)")
    return fk.winner, times


def build_items(
    families_root: Path, key: str | None, allow_intended: bool = False, slips_root: Path = Path("slips"),
    sets: tuple[str, ...] | None = (DEFAULT_SET,),
) -> tuple[list[Item], list[str]]:
    """Six items per family kept on `key`, plus one note per family (or
    condition) left out and why. Never invents a key: `allow_intended` is the
    explicit dry run on the authors' intended winners (KeyInfo.measured False,
    no runtimes). A relative `slips_root` is taken beside `families_root`.
    `sets` selects the family sets (None: every set). `key` None is chosen by
    plugins.items.keys.resolve_key; the prompts name the GPU its measurement records report.
    """
    families_root = Path(families_root)
    repo = families_root.resolve().parent
    if not Path(slips_root).is_absolute():
        slips_root = repo / slips_root
    if not families_root.is_dir():
        raise FileNotFoundError(f"{families_root}: no such directory; fix: pass the families/ directory")
    key = resolve_key(families_root, key, allow_intended)
    # what the key's measurements report; the stand-in only for the dry run, which needs a device for every family
    device = key_gpu(families_root, key, STAND_IN_PATH if allow_intended else None)
    if allow_intended and device is None:
        raise unknown_gpu_error(families_root, key)
    items: list[Item] = []
    notes: list[str] = [not_measured_banner(key)] if allow_intended else []
    for d in discover(families_root, sets):
        if d.family is None:
            notes.append(f"{d.name}: not a valid family, no items ({d.error})")
            continue
        fam = d.family
        cc = device.compute_capability if device is not None else ""
        if cc and not fam.targets_gpu(cc):
            notes.append(f"{fam.name}: needs {fam.needs_text}; {key} is {cc}, no items")
            continue
        fk = load_key(fam.path, key)
        if allow_intended:
            winner, times = fam.intended_winner, {}
            info = KeyInfo(gpu=key, measured=False,
                           file=f"{_rel(fam.path / 'family.toml', repo)} [intended.winner]: NOT MEASURED",
                           gpu_name="", sm_count=None, compute_capability="")
        else:
            if fk is None:
                notes.append(f"{fam.name}: no measurement for {key} ({_rel(key_path(fam.path, key), repo)}), no items")
                continue
            if not fk.kept:
                why = fk.reason or f"runner-up only {fk.ratio:.2f}x"
                notes.append(f"{fam.name}: dropped on {key}: {why}")
                continue
            got = _measured_answer(fam, fk, key, _rel(fk.path, repo))
            if isinstance(got, str):
                notes.append(got)
                continue
            winner, times = got
            info = KeyInfo(gpu=key, measured=True, file=_rel(fk.path, repo), git_commit=fk.git_commit, date=fk.date,
                           fragile=fk.fragile, noisy=fk.noisy)
            if fk.fragile:
                notes.append(f"{fam.name}: kept on {key} but FRAGILE: {fk.fragile_reason}")
        gpu = (gpu_of_record(fk.record) if fk is not None else None) or device
        if gpu is None:
            raise KeyChoiceError(f"{_rel(fk.path, repo) if fk else key}: field 'gpu' names no device with 'name' and "
                                 "'sm_count'; fix: re-run the measure pass (its records name the device)")
        info = replace(info, gpu_name=gpu.name, sm_count=gpu.sm_count, compute_capability=gpu.compute_capability)
        digest = family_digest(fam.path)
        report = load_slip(slips_root, key, fam.name)
        slips: dict[str, str | None] = {"source": None}
        where = _rel(slip_path(slips_root, key, fam.name), repo)
        planned = [launch.kernel for launch in fam.start.launches]
        if report is None:
            notes.append(f"{fam.name}: no slip for {key} ({where}), so no full or {ablated_condition(fam.set)} items; "
                         "only the source items")
        elif (profiled := [k.kernel.split("(")[0].strip() for k in report.kernels]) != planned:
            notes.append(f"{fam.name}: slip for {key} is stale: {where} profiled kernels {profiled}, "
                         f"the starting plan launches {planned}; re-run the measure pass; only the source items")
        else:
            slips.update(condition_slips(fam, report))
        for condition in conditions_of(fam.set):
            if condition not in slips:
                continue
            for order in ORDERS:
                options = tuple(Option(letter, c.id, c.text) for letter, c in zip(LETTERS, option_order(fam, order)))
                prompt = render_prompt(fam, order, gpu, slips[condition])
                by_id = {o.rewrite: o.letter for o in options}
                items.append(Item(
                    id=f"{fam.name}/{condition}/{order}",
                    task=task_name(condition, order, fam.set),
                    family=fam.name,
                    condition=condition,
                    order=order,
                    prompt=prompt,
                    prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
                    options=options,
                    answer=by_id[winner],
                    runtimes_ms={o.letter: times[o.rewrite] for o in options} if times else {},
                    key=info,
                    set=fam.set,
                    group=fam.group_id,
                    pair=fam.pair_id,
                    family_sha256=digest,
                ))
    return items, notes


def condition_slips(fam: Family, report) -> dict[str, str]:
    """The slip text of each condition that shows one: `full`, and the set's ablated one
    (the bank-conflict rows deleted, or, for a data group, the family's declared cue rows)."""
    cues: SlipCues | None = fam.slip
    return {"full": render_slip(report, cues=cues),
            ablated_condition(fam.set): render_slip(report, ablated=True, cues=cues)}


# --------------------------------------------------------------------------- snapshot cases


@dataclass(frozen=True)
class SlipCase:
    """One slip rendering to snapshot, or the reason there is none for the key."""

    gpu: str
    family: str = ""
    variant: str = ""  # "full" | the family set's ablated condition ("no-conflicts", "no-cue")
    csv: str = ""  # path of the captured CSV
    skip: str = ""
    cues: SlipCues | None = None  # a data group's declared cue rows (the no-cue variant deletes them)

    @property
    def ablated(self) -> bool:
        return self.variant not in ("", "full")


@dataclass(frozen=True)
class SnapshotCases:
    """What the snapshot tests cover: every captured slip (both renderings) and
    every prompt that can be rendered on the key (source prompts for every
    family; full and the set's ablated condition where a slip exists). Loaded once per session."""

    key: str
    slips: tuple[SlipCase, ...]
    prompts: tuple[Item, ...]
    error: str = ""

    ARGNAMES = ("slip_case", "prompt_case")

    def cases(self, argname: str) -> tuple[list, list[str]]:
        """Values and ids for one of ARGNAMES."""
        if argname == "slip_case":
            return list(self.slips), [f"{c.gpu}-none" if c.skip else f"{c.gpu}-{c.family}-{c.variant}" for c in self.slips]
        return list(self.prompts), [it.id.replace("/", "-") for it in self.prompts]  # ids name files

    @classmethod
    def load(cls, root: Path, key: str | None, families: str = "families", slips: str = "slips",
             sets: tuple[str, ...] | None = (DEFAULT_SET,)) -> "SnapshotCases":
        """`key` None: the key plugins.items.keys.resolve_key chooses for a dry run."""
        root = Path(root)
        try:
            key = resolve_key(root / families, key, intended=True)
        except KeyChoiceError as exc:
            return cls("", (), (), f"cannot choose the key for the prompt snapshots: {exc}")
        csvs = sorted((root / slips).glob("*/*.csv"))
        fams = {d.name: d.family for d in discover(root / families, None) if d.family is not None} \
            if csvs and (root / families).is_dir() else {}
        found = []
        for p in csvs:
            fam = fams.get(p.stem.split(".")[0])  # a slip taken beside another is <family>.<stamp>.csv
            third = ablated_condition(fam.set) if fam else CONDITIONS[2]
            found += [SlipCase(p.parent.name, p.stem, variant, p.relative_to(root).as_posix(),
                               cues=fam.slip if fam else None) for variant in ("full", third)]
        if not any(c.gpu == key for c in found):
            found.append(SlipCase(key, skip=f"no slip captured on {key} yet: run the measure pass on a GPU"))
        try:
            # the dry-run key renders every prompt; prompts do not depend on the answer
            items, _ = build_items(root / families, key, allow_intended=True, slips_root=root / slips, sets=sets)
        except (ValueError, OSError) as exc:
            return cls(key, tuple(found), (), f"cannot build the prompts on {key}: {exc}")
        return cls(key, tuple(found), tuple(items))


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m plugins.items export [--key GPU] [--out reports/items/<key>.jsonl] [--key-intended]`"""
    ap = argparse.ArgumentParser(prog="python -m plugins.items", description="Export SparkTrace items as JSONL.")
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="build the items for one answer key and write them as JSONL")
    ex.add_argument("--key", help="whose measurements are the answer key: a GPU key, the slug its measurement files "
                    "are named by, e.g. h200, rtx-4090 (default: the one GPU key any family has measured; with none, "
                    "--key-intended uses the stand-in device of prompts/stand-in-gpu.toml)")
    ex.add_argument("--out", type=Path, help="output JSONL (default: reports/items/<key>.jsonl)")
    ex.add_argument("--families", type=Path, default=Path("families"), help="families directory (default: families)")
    ex.add_argument("--set", dest="family_set", default=DEFAULT_SET, choices=SET_CHOICES,
                    help=f"which family set (default: {DEFAULT_SET})")
    ex.add_argument("--slips", type=Path, default=Path("slips"), help="slips directory (default: slips)")
    ex.add_argument("--key-intended", action="store_true",
                    help="dry run: use each family's intended winner as the key (NOT measured, not a score)")
    args = ap.parse_args(argv)
    try:
        args.key = resolve_key(args.families, args.key, args.key_intended)
        items, notes = build_items(args.families, args.key, allow_intended=args.key_intended, slips_root=args.slips,
                                   sets=selected_sets(args.family_set))
    except KeyChoiceError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    out = args.out or Path("reports", "items", f"{args.key}.jsonl")
    kind = "NOT MEASURED (intended winners, dry run)" if args.key_intended else "measured"
    if not items:
        lines = [f"no item on key {args.key} ({kind}, set {args.family_set}): nothing written to {out}"]
        lines += [f"note: {n}" for n in notes]
        if not args.key_intended:
            lines.append("fix: measure the families on a GPU (pytest -m measure), choose a measured key with --key, "
                         "or pass --key-intended for a dry run on the intended winners")
        sys.stderr.write("\n".join(lines) + "\n")
        return 1
    write_jsonl(items, out, export=export_block(Path(args.families)))
    fams = sorted({it.family for it in items})
    lines = [f"wrote {len(items)} items from {len(fams)} families to {out} (key {args.key}: {kind})"]
    lines += [f"note: {n}" for n in notes]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def export_block(families_root: Path) -> dict:
    """The commit the export was made from (and whether the tree had changes), for every line."""
    from plugins.measure.provenance import git_state

    state = git_state(Path(families_root).resolve().parent, allow_unknown_commit=True)
    return {"git_commit": state.get("git_commit"), "git_dirty": state.get("git_dirty"), "tool": "python -m plugins.items export"}


if __name__ == "__main__":
    raise SystemExit(main())
