"""Run folders as the site reads them: the score sheet, then each item's transcript.

Why the junit sheet first: it is the record of what the last run scored (a
transcripts/ folder also keeps files from earlier runs on other keys or sets),
and the leaderboard command reads the same sheets, so both show the same
numbers. A folder with no sheet is read from its transcripts, and says so.
"""
from __future__ import annotations

import glob
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from plugins.score.groups import GroupScore, score_groups_by_pass
from plugins.score.leaderboard import LeaderboardError, collect, read_junit
from plugins.score.tally import Record, Score, score_by_pass
from plugins.score.transcripts import TranscriptError, read_transcript, record_of, slug, transcript_path

SHEET = "junit.xml"


class RunFolderError(ValueError):
    """A path that is not a run folder, or a run that cannot be read; the message says what to fix."""


@dataclass(frozen=True)
class Trace:
    """One item in one pass as the run left it: its score record and its transcript (None if missing)."""

    record: Record
    transcript: Mapping | None
    transcript_file: Path | None
    props: Mapping[str, str]

    @property
    def key_info(self) -> Mapping:
        """The transcript's key block (gpu, measured, file, git_commit, date, and any later field)."""
        return (self.transcript or {}).get("key") or {"gpu": self.record.key, "measured": self.record.key_measured}


@dataclass(frozen=True)
class Run:
    """One model's run: one folder (or one model of a folder that holds several)."""

    name: str  # unique, used in URLs
    folder: Path
    model: str
    model_id: str
    base_url: str
    mode: str
    key: str
    traces: tuple[Trace, ...]
    scores: tuple[Score, ...]
    notes: tuple[str, ...]
    read_from: str  # "junit.xml" or "transcripts (no junit.xml)"
    problems: tuple[str, ...]

    @property
    def key_measured(self) -> bool:
        return all(s.key_measured for s in self.scores)

    @property
    def passes(self) -> tuple[int, ...]:
        return tuple(s.pass_index for s in self.scores)

    @property
    def synthetic(self) -> bool:
        """A run on a test fixture's key: its key file says SYNTHETIC."""
        return any("SYNTHETIC" in str(t.key_info.get("file", "")) for t in self.traces)

    @property
    def groups(self) -> tuple[GroupScore, ...]:
        """The data-group tally per pass (the diagnose set), from the same records as `scores`."""
        return score_groups_by_pass(t.record for t in self.traces)

    @property
    def baseline(self) -> bool:
        return self.model_id.startswith("baseline/")

    def trace(self, pass_index: int, item: str) -> Trace | None:
        for t in self.traces:
            if t.record.pass_index == pass_index and t.record.item == item:
                return t
        return None


def is_run_folder(path: Path) -> bool:
    return (path / SHEET).is_file() or (path / "transcripts").is_dir()


def expand(args: Sequence[str]) -> list[Path]:
    """Run folders from the arguments: a run folder, a folder of run folders, or a glob of either."""
    out: list[Path] = []
    for a in args:
        hits = sorted(glob.glob(a)) if glob.has_magic(a) else [a]
        if not hits:
            raise RunFolderError(f"{a}: matches nothing; fix: pass run folders such as reports/runs/<run>")
        for h in map(Path, hits):
            if not h.exists():
                raise RunFolderError(f"{h}: no such folder; fix: score a model first (make run, or pytest --model "
                                     "random --key-intended) or pass the folder its --run-dir names")
            if h.is_dir() and is_run_folder(h):
                out.append(h)
            elif h.is_dir() and (subs := sorted(d for d in h.iterdir() if d.is_dir() and is_run_folder(d))):
                out += subs
            elif h.is_dir() and not any(h.iterdir()):
                continue  # an empty reports/runs/: no run yet
            elif h.is_dir() and all(d.is_dir() and not any(d.rglob("*.json")) and not any(d.rglob("*.xml"))
                                    for d in h.iterdir()):
                continue  # only folders with nothing scored in them (a run that built no item)
            else:
                raise RunFolderError(
                    f"{h}: not a run folder (no {SHEET} and no transcripts/ in it or in its subfolders); fix: pass "
                    "the folder a run wrote, e.g. reports/runs/local (pytest --model NAME --run-dir=... "
                    f"--junitxml=.../{SHEET})")
    return list(dict.fromkeys(out))


def _transcript_for(folder: Path, model: str, rec: Record, props: Mapping[str, str]) -> tuple[Mapping | None, Path | None]:
    """The transcript under the run folder, else at the absolute path the sheet names (a --run-dir
    outside the repository). A relative path in the sheet is relative to a rootdir we do not know,
    so it is never guessed at: that could read another run's file."""
    candidates = []
    try:
        candidates.append(transcript_path(folder, model, rec.pass_index, rec.item))
    except TranscriptError:
        pass
    if props.get("transcript") and Path(props["transcript"]).is_absolute():
        candidates.append(Path(props["transcript"]))
    for c in candidates:
        data = read_transcript(c)
        if data is not None:
            return data, c
    return None, candidates[0] if candidates else None


def _notes(folder: Path) -> tuple[str, ...]:
    """The item builder's notes the run wrote into score.json (why families had no items)."""
    path = folder / "score.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return ()
    return tuple(str(n) for n in data.get("notes", ())) if isinstance(data, dict) else ()


def _from_sheet(folder: Path) -> list[Run]:
    sheet = folder / SHEET
    try:
        rows = read_junit(sheet)
        entries = collect([sheet])
    except LeaderboardError as exc:
        raise RunFolderError(str(exc)) from None
    runs = []
    for e in entries:
        traces, problems, meta = [], [], {}
        seen: set[tuple[int, str]] = set()
        for props, rec in rows:
            if (props["model"], props.get("mode", "one-step"), rec.key) != (e.model, e.mode, e.key):
                continue
            if (rec.pass_index, rec.item) in seen:
                continue  # the same testcase twice: collect() has checked that both copies agree
            seen.add((rec.pass_index, rec.item))
            meta = meta or props
            data, path = _transcript_for(folder, e.model, rec, props)
            if data is None:
                problems.append(f"{rec.item} pass {rec.pass_index}: transcript not found ({path})")
            traces.append(Trace(rec, data, path if data is not None else None, props))
        base_url = next((t.transcript["model"].get("base_url", "") for t in traces
                         if t.transcript and isinstance(t.transcript.get("model"), dict)), "")
        runs.append(Run(
            name=slug(folder.name), folder=folder, model=e.model, model_id=meta.get("model_id", ""), base_url=base_url,
            mode=e.mode, key=e.key, traces=tuple(traces), scores=e.scores, notes=_notes(folder),
            read_from=SHEET, problems=tuple(problems)))
    return runs


def _from_transcripts(folder: Path) -> list[Run]:
    groups: dict[tuple[str, str, str], list[Trace]] = {}
    meta: dict[tuple[str, str, str], Mapping] = {}
    problems: list[str] = []
    for path in sorted((folder / "transcripts").rglob("*.json")):
        data = read_transcript(path)
        if data is None:
            problems.append(f"{path}: not a transcript, skipped")
            continue
        try:
            rec = record_of(data, path)
        except TranscriptError as exc:
            problems.append(str(exc))
            continue
        model = data.get("model", {}) if isinstance(data.get("model"), dict) else {}
        k = (str(model.get("name", "")), str(data.get("mode", "one-step")), rec.key)
        groups.setdefault(k, []).append(Trace(rec, data, path, {}))
        meta.setdefault(k, model)
    runs = []
    for (model, mode, key), traces in sorted(groups.items()):
        try:
            scores = score_by_pass(t.record for t in traces)
        except ValueError as exc:
            raise RunFolderError(f"{folder}: {exc}; fix: keep one run per folder") from None
        runs.append(Run(
            name=slug(folder.name), folder=folder, model=model, model_id=str(meta[(model, mode, key)].get("id", "")),
            base_url=str(meta[(model, mode, key)].get("base_url", "")), mode=mode, key=key, traces=tuple(traces),
            scores=scores, notes=_notes(folder), read_from=f"transcripts (no {SHEET})", problems=tuple(problems)))
    return runs


def read_run_folder(folder: Path) -> list[Run]:
    """The runs of one folder (usually one): from its junit sheet, else from its transcripts."""
    folder = Path(folder)
    runs = _from_sheet(folder) if (folder / SHEET).is_file() else _from_transcripts(folder)
    if not runs:
        raise RunFolderError(f"{folder}: no scored item in it (was the run stopped before its first item?); "
                             "fix: rerun it, or leave this folder out")
    if len(runs) > 1:  # several models or keys in one folder: each gets its own name
        runs = [Run(**{**r.__dict__, "name": f"{r.name}--{slug(r.model)}--{slug(r.key)}"
                       + ("--two-step" if r.mode == "two-step" else "")}) for r in runs]
    return runs


def is_empty_run(folder: Path) -> str:
    """Why a run folder holds nothing to show ("" when it has something): no scored item in its
    sheet and no transcript (a run that built no item, e.g. `make run` before any key is measured)."""
    folder = Path(folder)
    transcripts = list((folder / "transcripts").rglob("*.json")) if (folder / "transcripts").is_dir() else []
    if transcripts:
        return ""
    if (folder / SHEET).is_file():
        try:
            if read_junit(folder / SHEET):
                return ""
        except LeaderboardError:
            return ""  # unreadable: read_run_folder names the problem
        return f"{folder}: no scored item in it (the run built no item or was stopped before its first); skipped"
    return f"{folder}: no score sheet and no transcript in it; skipped"


def read_runs(folders: Sequence[Path], notes: list[str] | None = None) -> list[Run]:
    """The runs of the folders; an empty run folder is skipped, with a note appended to `notes`."""
    runs: list[Run] = []
    for f in folders:
        why = is_empty_run(f)
        if why:
            if notes is not None:
                notes.append(why)
            continue
        runs += read_run_folder(f)
    names: dict[str, int] = {}
    out = []
    for r in runs:  # two folders with the same name (a/local, b/local): number the second
        n = names[r.name] = names.get(r.name, 0) + 1
        out.append(r if n == 1 else Run(**{**r.__dict__, "name": f"{r.name}-{n}"}))
    return out
