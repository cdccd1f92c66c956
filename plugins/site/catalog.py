"""The committed side of the report: families, their measured keys and slips, and the
items a run answered, rebuilt from them.

Why rebuild items instead of trusting a copy: a transcript keeps the prompt but
not the option table or the runtimes. Rebuilding the item from families/ (on
the run's key) and comparing the prompt's sha256 tells whether what the site
shows is what the model saw; a mismatch is said on the page, never hidden.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from plugins.family.manifest import Family, discover
from plugins.items.build import Item, build_items, read_jsonl
from plugins.items.prompt import END_IF, IF_SLIP, TEMPLATE_PATH
from plugins.items.slip import ABLATION, cue_ablation, load_slip, render_slip, slip_lines
from plugins.measure.keyfile import FamilyKey, KeyFileError, load_key


def fragile_of(fk: FamilyKey | Mapping | None) -> bool | None:
    """The key's fragile flag (runner-up interval reaching below the keep gate), None where the
    key predates the flag. Read from the FamilyKey attribute or the file's ranking block."""
    if fk is None:
        return None
    if isinstance(fk, Mapping):
        v = fk.get("fragile")
        return None if v is None else bool(v)
    v = getattr(fk, "fragile", None)
    if v is None and isinstance(fk.record.get("ranking"), Mapping):
        v = fk.record["ranking"].get("fragile")
    return None if v is None else bool(v)


@dataclass(frozen=True)
class SlipView:
    """A captured slip: each line of the full slip, and whether its set's ablated condition deletes it."""

    gpu: str
    path: Path
    lines: tuple[tuple[str, bool], ...] = ()
    error: str = ""


@dataclass(frozen=True)
class KeyView:
    gpu: str
    key: FamilyKey | None
    error: str = ""
    repeats: tuple[Path, ...] = ()  # <gpu>.<stamp>.json beside the key: other passes

    @property
    def fragile(self) -> bool | None:
        return fragile_of(self.key)


@dataclass(frozen=True)
class FamilyView:
    name: str
    path: Path
    family: Family | None
    error: str
    keys: tuple[KeyView, ...]
    slips: tuple[SlipView, ...]

    @property
    def set(self) -> str:
        return self.family.set if self.family else "?"

    def key(self, gpu: str) -> KeyView | None:
        return next((k for k in self.keys if k.gpu == gpu), None)


def _keys(fam_dir: Path) -> tuple[KeyView, ...]:
    mdir = fam_dir / "measurements"
    if not mdir.is_dir():
        return ()
    files = sorted(mdir.glob("*.json"))
    gpus = sorted({p.stem for p in files if "." not in p.stem})
    out = []
    for gpu in gpus:
        repeats = tuple(p for p in files if p.stem.startswith(gpu + "."))
        try:
            out.append(KeyView(gpu, load_key(fam_dir, gpu), repeats=repeats))
        except KeyFileError as exc:
            out.append(KeyView(gpu, None, error=str(exc), repeats=repeats))
    return tuple(out)


def _slips(slips_root: Path, name: str, fam: Family | None = None) -> tuple[SlipView, ...]:
    if not slips_root.is_dir():
        return ()
    out = []
    for gdir in sorted(d for d in slips_root.iterdir() if d.is_dir()):
        path = gdir / f"{name}.csv"
        if not path.is_file():
            continue
        try:
            report = load_slip(slips_root, gdir.name, name)
            assert report is not None
            cues = fam.slip if fam is not None else None  # a data group member ablates its declared cue rows
            render_slip(report, ablated=True, cues=cues)  # the checks the prompts get
            ablation = cue_ablation(cues) if cues is not None else ABLATION
            out.append(SlipView(gdir.name, path, tuple((ln.text, ln.ablated(ablation)) for ln in slip_lines(report))))
        except (ValueError, OSError) as exc:
            out.append(SlipView(gdir.name, path, error=str(exc)))
    return tuple(out)


def load_families(families_root: Path, slips_root: Path) -> tuple[FamilyView, ...]:
    """Every family of every set, with its keys and slips; a broken one carries its error."""
    out = []
    for d in discover(families_root, None):
        out.append(FamilyView(d.name, d.path, d.family, str(d.error) if d.error else "", _keys(d.path),
                              _slips(slips_root, d.name, d.family)))
    return tuple(out)


@dataclass(frozen=True)
class ItemMatch:
    """The item a transcript answered, as rebuilt now; `verified` when the prompts' sha256 agree."""

    item: Item | None
    verified: bool
    note: str


@dataclass
class ItemIndex:
    """Items rebuilt per key (and from any --items JSONL given), looked up by id and prompt sha256."""

    families_root: Path
    slips_root: Path
    extra: Sequence[Path] = ()
    _built: dict[tuple[str, bool], dict[str, Item]] = field(default_factory=dict)
    _errors: dict[tuple[str, bool], str] = field(default_factory=dict)
    _extra: dict[tuple[str, str], Item] | None = None

    def _extras(self) -> dict[tuple[str, str], Item]:
        if self._extra is None:
            self._extra = {(it.id, it.prompt_sha256): it for p in self.extra for it in read_jsonl(p)}
        return self._extra

    def _for_key(self, gpu: str, measured: bool) -> dict[str, Item]:
        k = (gpu, measured)
        if k not in self._built:
            try:
                items, _ = build_items(self.families_root, gpu, allow_intended=not measured,
                                       slips_root=self.slips_root, sets=None)
                self._built[k] = {it.id: it for it in items}
            except (ValueError, OSError) as exc:
                self._built[k] = {}
                self._errors[k] = str(exc)
        return self._built[k]

    def match(self, item_id: str, prompt_sha256: str, gpu: str, measured: bool) -> ItemMatch:
        if (hit := self._extras().get((item_id, prompt_sha256))) is not None:
            return ItemMatch(hit, True, "from the items file given to the site builder")
        it = self._for_key(gpu, measured).get(item_id)
        if it is not None and it.prompt_sha256 == prompt_sha256:
            return ItemMatch(it, True, f"rebuilt from {self.families_root.name}/ on key {gpu}; same prompt")
        if it is not None:
            return ItemMatch(it, False, (
                f"the family files changed since this run (the prompt rebuilt from {self.families_root.name}/ on "
                f"key {gpu} differs from the one the model saw): options and runtimes below are today's; the prompt "
                "above is what the model read"))
        why = self._errors.get((gpu, measured)) or f"no such item is built from {self.families_root.name}/ on key {gpu} today"
        return ItemMatch(None, False, f"options and runtimes unavailable: {why}")


# -- the prompt's slip section --------------------------------------------------


def _first_line(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def slip_markers(template: str | None = None) -> tuple[str, str]:
    """The heading that opens the slip section and the heading that follows it, from the template."""
    text = TEMPLATE_PATH.read_text(encoding="utf-8") if template is None else template
    head, rest = text.split(IF_SLIP, 1)
    block, tail = rest.split(END_IF, 1)
    return _first_line(block), _first_line(tail)


def split_prompt(prompt: str, markers: tuple[str, str] | None = None) -> tuple[str, str, str]:
    """(before, slip section, after): the slip section is '' when the prompt has none."""
    start, end = markers or slip_markers()
    i = prompt.find("\n" + start + "\n")
    if not start or i < 0:
        return prompt, "", ""
    j = prompt.find("\n" + end + "\n", i + 1) if end else -1
    j = len(prompt) if j < 0 else j
    return prompt[: i + 1], prompt[i + 1: j + 1], prompt[j + 1:]


def gpu_name(families: Sequence[FamilyView], gpu: str) -> str:
    """The device name any key file records for this slug, else the slug."""
    for f in families:
        k = f.key(gpu)
        if k and k.key and isinstance(k.key.record.get("gpu"), Mapping):
            return str(k.key.record["gpu"].get("name") or gpu)
    return gpu


def record_get(record: Mapping[str, Any], *path: str) -> Any:
    cur: Any = record
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur
