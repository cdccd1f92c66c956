"""Scoring a model: options, the per-item flow, and the session kept in config.stash.

Why a session object: pytest hooks stay one-liners, every xdist worker builds
the same cases in the same order, and the controller (which never runs an
item) computes the end-of-run table from the transcripts on disk.
"""
from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from plugins.family.manifest import DEFAULT_SET, selected_sets
from plugins.items.build import Item, build_items, read_jsonl
from plugins.items.keys import KeyChoiceError, resolve_key
from plugins.items.options import LETTERS, ORDERS, conditions_of
from plugins.score.modelapi import (
    Completion,
    ContextOverflowError,
    FatalModelError,
    GenerateConfig,
    Message,
    ModelAPI,
    OmittedError,
)
from plugins.score.tally import Record, outcome_of, score_by_set
from plugins.score.transcripts import (
    TranscriptError,
    read_transcript,
    record_of,
    slug,
    transcript_path,
    utc_now,
    write_transcript,
)

ITEMS_TEST_FILE = "test_items_model.py"  # the thin module whose test_item runs one case
log = logging.getLogger("sparktrace.scoring")


class ScoringConfigError(ValueError):
    """Options or inputs that cannot be scored; the message says what to fix."""


class RunStopped(Exception):
    """A fatal model error: the run stops instead of burning through the items."""


# -- strategies ----------------------------------------------------------------


class Extractor(Protocol):
    """How a letter is read from a trace: `letter` is the scorer, `strict` the plain regex."""

    def letter(self, text: str) -> str | None: ...

    def strict(self, text: str) -> str | None: ...


class PluginExtractor:
    """plugins.score.extract (imported lazily: it is another engineer's module)."""

    def letter(self, text: str) -> str | None:
        from plugins.score.extract import extract_letter

        return extract_letter(text)

    def strict(self, text: str) -> str | None:
        from plugins.score.extract import strict_letter

        return strict_letter(text)


class ItemBound(Protocol):
    """A model that wants to know which item and pass it answers (the seeded baseline)."""

    def for_item(self, item_id: str, pass_index: int) -> ModelAPI: ...


# -- options -------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    model: str | None = None
    model_url: str | None = None
    model_id: str | None = None
    model_key_env: str | None = None
    model_sets: tuple[str, ...] = ()  # --model-set FIELD=VALUE: registry fields for --model-url or an entry
    registry: Path | None = None
    key: str | None = None  # None: plugins.items.keys.resolve_key's choice, or whatever --items carries
    key_intended: bool = False
    items_path: Path | None = None
    passes: int = 1
    refresh: bool = False
    two_step: bool = False
    run_dir: Path | None = None
    rootdir: Path = Path(".")
    families_root: Path = Path("families")  # plugins.family.hooks' --families-root when it is loaded
    sets: tuple[str, ...] = (DEFAULT_SET,)  # plugins.family.hooks' --set, as the sets it selects
    combine_sets: bool = False  # also one table over every set (--combine-sets)

    @property
    def enabled(self) -> bool:
        return bool(self.model or self.model_url)

    @property
    def name(self) -> str:
        """The model's label: --model, else the --model-id."""
        return self.model or (self.model_id or "")

    @property
    def mode(self) -> str:
        return "two-step" if self.two_step else "one-step"

    @property
    def key_gpu(self) -> str:
        """--key, else the one GPU key measured, else (--key-intended) the stand-in's key; one clear error otherwise."""
        try:
            return resolve_key(Path(self.rootdir, self.families_root), self.key, self.key_intended)
        except KeyChoiceError as exc:
            raise ScoringConfigError(str(exc)) from None

    @property
    def key_label(self) -> str:
        """The key for a message, never an error (with --items the items name their own key)."""
        try:
            return self.key_gpu
        except ScoringConfigError:
            return self.key or "(none chosen)"

    @property
    def resolved_run_dir(self) -> Path:
        if self.run_dir is not None:
            return Path(self.rootdir, self.run_dir)
        suffix = ".two-step" if self.two_step else ""
        return Path(self.rootdir, "reports", "runs", slug(self.name) + suffix)

    def check(self) -> None:
        if not self.enabled:
            for flag, value in (("--model-id", self.model_id), ("--model-key-env", self.model_key_env),
                                ("--items", self.items_path), ("--two-step", self.two_step),
                                ("--key-intended", self.key_intended), ("--refresh", self.refresh),
                                ("--run-dir", self.run_dir), ("--model-set", self.model_sets)):
                if value:
                    raise ScoringConfigError(f"{flag} only applies when scoring: add --model NAME or --model-url URL")
            return
        if self.model_url and not self.model_id:
            raise ScoringConfigError("--model-url needs --model-id ID (the id the server expects in 'model')")
        if self.model_id and not self.model_url:
            raise ScoringConfigError("--model-id needs --model-url URL; for a registry entry use --model NAME")
        if self.model_key_env and not self.model_url:
            raise ScoringConfigError("--model-key-env goes with --model-url; a registry entry names its own api_key_env")
        if self.passes < 1:
            raise ScoringConfigError(f"--passes {self.passes}: give a whole number >= 1")
        if self.two_step and self.key_intended:
            raise ScoringConfigError(
                "--two-step shows the model the measured runtime of its pick, and --key-intended has no "
                "measured runtimes; drop one of them"
            )


def options_from(getoption: Callable[..., Any], rootdir: Path) -> Options:
    """Options from pytest's config.getoption (dest names as registered in plugins.score.hooks)."""

    def path(v: Any) -> Path | None:
        return Path(v) if v else None

    return Options(
        model=getoption("st_model"), model_url=getoption("st_model_url"), model_id=getoption("st_model_id"),
        model_key_env=getoption("st_model_key_env"), registry=path(getoption("st_registry")),
        model_sets=tuple(getoption("st_model_set", None) or ()),
        key=getoption("st_key"), key_intended=bool(getoption("st_key_intended")),
        items_path=path(getoption("st_items")), passes=int(getoption("st_passes")),
        refresh=bool(getoption("st_refresh")), two_step=bool(getoption("st_two_step")),
        run_dir=path(getoption("st_run_dir")), rootdir=Path(rootdir),
        families_root=Path(getoption("families_root", "families") or "families"),
        sets=selected_sets(getoption("st_set", DEFAULT_SET) or DEFAULT_SET),
        combine_sets=bool(getoption("st_combine_sets", False)),
    )


# -- the model -----------------------------------------------------------------


def redact_url(url: str) -> str:
    """A base URL as recorded: no user:password@, no query string."""
    from urllib.parse import urlsplit, urlunsplit

    p = urlsplit(url)
    host = p.hostname or ""
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


@dataclass(frozen=True)
class ModelInfo:
    """What every transcript records about the model (never its key)."""

    name: str
    model_id: str
    base_url: str
    config: GenerateConfig
    make: Callable[[], ModelAPI] = field(compare=False, repr=False)


def resolve_model(opts: Options) -> ModelInfo:
    """Find the model without starting it: a baseline, --model-url, or a registry entry."""
    from plugins.score.baselines import BASELINES, HEURISTICS, is_heuristic, make_heuristic

    if opts.model_sets and not opts.model_url and (opts.model in BASELINES or is_heuristic(opts.model)):
        raise ScoringConfigError(f"--model-set sets a served model's fields; {opts.model!r} is a baseline with none")
    if opts.model in BASELINES and not opts.model_url:
        factory = BASELINES[opts.model]
        probe = factory()
        return ModelInfo(opts.model, probe.model_id, "", GenerateConfig(), factory)  # type: ignore[attr-defined]
    if is_heuristic(opts.model) and not opts.model_url:
        from plugins.score.heuristics import HeuristicError

        try:  # a heuristic reads the families and their binaries for the chosen key
            key = opts.key if opts.items_path is not None else opts.key_gpu  # --items: the items name theirs
            probe = make_heuristic(str(opts.model), Path(opts.rootdir, opts.families_root), key)
        except HeuristicError as exc:
            raise ScoringConfigError(str(exc)) from None
        return ModelInfo(probe.name, probe.model_id, "", GenerateConfig(),
                         lambda: make_heuristic(probe.name, probe.families_root, probe.key))
    from plugins.score.registry import (
        RegistryError,
        load_registry,
        make_model,
        parse_settings,
        spec_from_url,
        with_settings,
    )

    try:
        settings = parse_settings(opts.model_sets)
        if opts.model_url:
            spec = spec_from_url(opts.model_url, opts.model_id or "", name=opts.model or opts.model_id,
                                 api_key_env=opts.model_key_env, **settings)
        else:
            registry = load_registry(opts.registry or Path(opts.rootdir, "models.toml"))
            if opts.model not in registry:
                known = sorted(set(registry) | set(BASELINES) | set(HEURISTICS))
                raise ScoringConfigError(
                    f"--model {opts.model!r} is not in {opts.registry or 'models.toml'} and is not a baseline; "
                    f"use one of {', '.join(known)}, or --model-url URL --model-id ID"
                )
            spec = with_settings(registry[opts.model], settings)
    except RegistryError as exc:
        raise ScoringConfigError(str(exc)) from None
    if spec.api_key_env and not os.environ.get(spec.api_key_env, "").strip():
        raise ScoringConfigError(
            f"model {spec.name!r} reads its key from ${spec.api_key_env}, which is not set; "
            f"export {spec.api_key_env}=<your key> (keys are only read from the environment)"
        )
    base = redact_url(spec.base_url) if spec.base_url else "embedded llama.cpp server (127.0.0.1)"
    return ModelInfo(spec.name, spec.model_id, base, spec.generate_config(), lambda: make_model(spec))


# -- cases ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One item in one pass: what one test asks."""

    item: Item
    pass_index: int
    passes: int

    @property
    def id(self) -> str:
        return self.item.id if self.passes == 1 else f"{self.item.id}#p{self.pass_index}"


def check_items(items: Sequence[Item], where: str, opts: Options) -> None:
    """Every item usable as asked, or one error naming the file, the field and the fix."""
    seen: set[str] = set()
    for it in items:
        at = f"{where}: item {it.id!r}"
        if it.id in seen:
            raise ScoringConfigError(f"{at}: the id appears twice; fix: give every item a unique id")
        seen.add(it.id)
        if it.condition not in conditions_of(it.set) or it.order not in ORDERS:
            raise ScoringConfigError(f"{at}: condition/order {it.condition!r}/{it.order!r} in set {it.set!r}; "
                                     f"fix: use {conditions_of(it.set)} and {ORDERS}")
        if it.answer not in LETTERS:
            raise ScoringConfigError(f"{at}: field 'answer' is {it.answer!r}; fix: one of {', '.join(LETTERS)}")
        if hashlib.sha256(it.prompt.encode()).hexdigest() != it.prompt_sha256:
            raise ScoringConfigError(f"{at}: field 'prompt_sha256' does not match the prompt; "
                                     "fix: re-export the items (python -m plugins.items export)")
        if not it.key.measured and not opts.key_intended:
            raise ScoringConfigError(f"{at}: its key ({it.key.gpu}) was not measured; fix: measure it, "
                                     "or pass --key-intended for a dry run on the intended winner")
        if opts.key and it.key.gpu != opts.key:
            raise ScoringConfigError(f"{at}: key {it.key.gpu!r} but --key {opts.key}; fix: drop --key "
                                     "or export the items for that key")
        if opts.two_step and set(it.runtimes_ms) != set(LETTERS):
            raise ScoringConfigError(f"{at}: field 'runtimes_ms' lacks letters for --two-step; "
                                     "fix: export items from a measured key")


def load_items(opts: Options) -> tuple[list[Item], list[str]]:
    """Items from --items, or built from families/ on the chosen key; plus notes on families left out."""
    if opts.items_path is not None:
        path = Path(opts.rootdir, opts.items_path)
        if not path.is_file():
            raise ScoringConfigError(f"--items {opts.items_path}: no such file; fix: export items first "
                                     "(python -m plugins.items export) or give the right path")
        try:
            items = read_jsonl(path)
        except ValueError as exc:
            raise ScoringConfigError(f"--items: {exc}") from None
        check_items(items, str(path), opts)
        return items, []
    key = opts.key_gpu
    try:
        items, notes = build_items(Path(opts.rootdir, opts.families_root), key, allow_intended=opts.key_intended,
                                   sets=opts.sets)
    except (OSError, ValueError) as exc:  # a missing folder, a corrupt key file: the builder's own message
        raise ScoringConfigError(f"building items from {opts.families_root} on key {key}: {exc}") from None
    check_items(items, f"{opts.families_root} on key {key}", opts)
    return list(items), list(notes)


def make_cases(items: Sequence[Item], passes: int) -> list[Case]:
    """Pass-major, item order as given: the same list on every xdist worker."""
    return [Case(it, k, passes) for k in range(1, passes + 1) for it in items]


# -- one case ------------------------------------------------------------------


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    expected: str
    chosen: str | None
    first_choice: str | None  # two-step: the pick before the runtime was shown
    strict: str | None
    outcome: str
    tokens: int | None
    latency_s: float
    transcript: Path
    reused: bool
    omitted_reason: str = ""
    key_measured: bool = True
    stop_reason: str | None = None
    omitted_for: str = ""  # "context" when the prompt could not fit the model's window

    def explain(self) -> str:
        key = "" if self.key_measured else " (intended winner: the key was NOT measured)"
        if self.outcome == "truncated":
            return (f"{self.case_id}: truncated: the reply was cut off by its token budget (stop reason "
                    f"{self.stop_reason!r}), expected {self.expected}{key}; see {self.transcript}")
        if self.outcome == "no-letter":
            return f"{self.case_id}: no answer letter in the trace (expected {self.expected}{key}); see {self.transcript}"
        return f"{self.case_id}: chose {self.chosen}, expected {self.expected}{key}; see {self.transcript}"


def format_ms(t: float) -> str:
    """A runtime for the follow-up message: four significant figures, never exponent notation."""
    return f"{t:,.0f}" if t >= 10_000 else f"{t:.4g}" if t >= 1e-3 else f"{t:.6f}"


def followup_message(item: Item, letter: str) -> str:
    """Two-step: the measured runtime of the model's pick, and the invitation to pick again."""
    return (
        f"On the {item.key.gpu} GPU, option {letter} (the rewrite you picked) was measured at "
        f"{format_ms(item.runtimes_ms[letter])} ms. The runtimes of the other options are not shown. "
        "You may keep your pick or change it. End your reply with exactly one line: "
        "Answer: A, Answer: B, Answer: C or Answer: D."
    )


def _turn(model: ModelAPI, messages: list[Message], config: GenerateConfig, ex: Extractor) -> dict:
    started = utc_now()
    c: Completion = model.generate(messages, config)
    text = c.text
    return {
        "request": [{"role": m.role, "content": m.content} for m in messages],
        "response": text,
        "response_model": c.model,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "latency_s": c.latency_s,
        "attempts": c.attempts,
        "started_utc": started,
        "finished_utc": utc_now(),
        "letter": ex.letter(text) if text is not None else None,
        "strict_letter": ex.strict(text) if text is not None else None,
        "stop_reason": c.stop_reason,
        "truncated": c.truncated,
        "reasoning": c.reasoning,  # kept and shown, never scored
        "raw": c.raw,
    }


def _score_fields(item: Item, turns: list[dict], two_step: bool, omitted_reason: str, omitted_for: str = "") -> dict:
    """The fields a rerun recomputes: they depend on the key and the extractor, not the model.

    A last turn cut off by its budget is "truncated", whatever letter it had reached:
    the model never finished its answer."""
    last = turns[-1] if turns else {}
    truncated = bool(last.get("truncated")) and not omitted_reason
    chosen, strict = (None, None) if truncated else (last.get("letter"), last.get("strict_letter"))
    toks = [(t["prompt_tokens"], t["completion_tokens"]) for t in turns]
    tokens = None if not toks or any(p is None or c is None for p, c in toks) else sum(p + c for p, c in toks)
    return {
        "item": item.id, "task": item.task, "family": item.family, "set": item.set, "group": item.group,
        "pair": item.pair, "condition": item.condition,
        "order": item.order, "prompt_sha256": item.prompt_sha256, "key": asdict(item.key),
        "expected": item.answer,
        "first_choice": turns[0]["letter"] if two_step and turns else None,
        "chosen": None if omitted_reason else chosen,
        "strict": None if omitted_reason else strict,
        "outcome": "omitted" if omitted_reason else outcome_of(item.answer, chosen, truncated=truncated),
        "omitted_reason": omitted_reason,
        "omitted_for": omitted_for if omitted_reason else "",
        "stop_reason": last.get("stop_reason"),
        "tokens": tokens,
        "latency_s": sum(t["latency_s"] for t in turns),
        "attempts": sum(t["attempts"] for t in turns),
    }


def _reusable(saved: dict, case: Case, info: ModelInfo, two_step: bool, ex: Extractor) -> bool:
    """A saved transcript answers this case: same prompt, model, mode, and it was not omitted."""
    if (saved.get("prompt_sha256") != case.item.prompt_sha256 or saved.get("outcome") == "omitted"
            or saved.get("mode") != ("two-step" if two_step else "one-step")
            or saved.get("model", {}).get("name") != info.name or saved.get("pass") != case.pass_index):
        return False
    turns = saved.get("turns") or []
    if not turns:
        return False
    if saved.get("outcome") == "truncated" and (saved.get("generation") or {}).get("max_tokens") != info.config.max_tokens:
        return False  # cut off by a budget that has changed since: ask again with the new one
    if not two_step:
        return len(turns) == 1
    first = ex.letter(turns[0]["response"]) if turns[0].get("response") is not None else None
    if first is None:
        return len(turns) == 1
    # The follow-up must be what would be sent now (same key, same runtimes, same first pick).
    return len(turns) == 2 and turns[1]["request"][-1]["content"] == followup_message(case.item, first)


def _rescore_turns(turns: list[dict], ex: Extractor) -> list[dict]:
    out = []
    for t in turns:
        text = t.get("response")
        out.append({**t, "letter": ex.letter(text) if text is not None else None,
                    "strict_letter": ex.strict(text) if text is not None else None})
    return out


def _result(data: dict, path: Path, case: Case, reused: bool) -> CaseResult:
    return CaseResult(
        case_id=case.id, expected=data["expected"], chosen=data["chosen"], first_choice=data["first_choice"],
        strict=data["strict"], outcome=data["outcome"], tokens=data["tokens"], latency_s=data["latency_s"],
        transcript=path, reused=reused, omitted_reason=data["omitted_reason"], key_measured=case.item.key.measured,
        stop_reason=data.get("stop_reason"), omitted_for=data.get("omitted_for", ""),
    )


class LazyModel:
    """Starts the real model on first use, so re-scoring saved transcripts needs no server and no key."""

    def __init__(self, make: Callable[[], ModelAPI], name: str):
        self._make = make
        self.name = name

    def for_item(self, item_id: str, pass_index: int) -> ModelAPI:
        m = self._make()
        return m.for_item(item_id, pass_index) if hasattr(m, "for_item") else m  # type: ignore[attr-defined]

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        return self._make().generate(messages, config)


def run_case(case: Case, model: ModelAPI, info: ModelInfo, run_dir: Path, *,
             two_step: bool = False, refresh: bool = False, extractor: Extractor | None = None) -> CaseResult:
    """Score one case: re-score its saved transcript, or ask the model and save one.

    Raises FatalModelError (nothing written) and lets KeyboardInterrupt through.
    """
    ex = extractor or PluginExtractor()
    item = case.item
    path = transcript_path(run_dir, info.name, case.pass_index, item.id)
    saved = None if refresh else read_transcript(path)
    if saved is not None and _reusable(saved, case, info, two_step, ex):
        turns = _rescore_turns(saved["turns"], ex)
        data = {**saved, "turns": turns, **_score_fields(item, turns, two_step, "")}
        data.pop("schema", None)
        if {**data, "schema": saved.get("schema")} != saved:
            write_transcript(path, data)
        return _result(data, path, case, reused=True)
    if hasattr(model, "for_item"):
        model = model.for_item(item.id, case.pass_index)  # type: ignore[union-attr]
    started = utc_now()
    messages = [Message("user", item.prompt)]
    turns: list[dict] = []
    omitted = omitted_for = ""
    try:
        turns.append(_turn(model, messages, info.config, ex))
        first = turns[0]["letter"]
        if two_step and first is not None and not turns[0]["truncated"]:
            messages = messages + [Message("assistant", turns[0]["response"] or ""),
                                   Message("user", followup_message(item, first))]
            turns.append(_turn(model, messages, info.config, ex))
    except OmittedError as exc:
        omitted = str(exc) or "no model turn after retries"
        omitted_for = "context" if isinstance(exc, ContextOverflowError) else ""
    data = {
        "pass": case.pass_index,
        "model": {"name": info.name, "id": info.model_id, "base_url": info.base_url},
        "generation": asdict(info.config),
        "mode": "two-step" if two_step else "one-step",
        "turns": turns,
        "started_utc": started,
        "finished_utc": utc_now(),
        **_score_fields(item, turns, two_step, omitted, omitted_for),
    }
    write_transcript(path, data)
    return _result(data, path, case, reused=False)


def properties(case: Case, info: ModelInfo, result: CaseResult, rootdir: Path, two_step: bool) -> list[tuple[str, object]]:
    """The junit score sheet's properties for one testcase."""
    try:
        shown = result.transcript.resolve().relative_to(Path(rootdir).resolve())
    except ValueError:
        shown = result.transcript
    props: list[tuple[str, object]] = [
        ("model", info.name), ("model_id", info.model_id), ("item", case.item.id),
        ("family", case.item.family), ("set", case.item.set), ("group", case.item.group), ("pair", case.item.pair),
        ("condition", case.item.condition), ("order", case.item.order),
        ("pass", case.pass_index), ("key", case.item.key.gpu),
        ("key_measured", "true" if case.item.key.measured else "false"),
        ("key_fragile", "true" if case.item.key.fragile else "false"),
        ("expected", result.expected), ("chosen", result.chosen or ""),
        ("strict", result.strict or ""), ("outcome", result.outcome),
        ("stop_reason", result.stop_reason or ""), ("omitted_for", result.omitted_for),
        ("tokens", "" if result.tokens is None else result.tokens), ("latency_s", result.latency_s),
        ("transcript", str(shown)), ("reused_transcript", "true" if result.reused else "false"),
        ("mode", "two-step" if two_step else "one-step"),
    ]
    if two_step:
        props.append(("first_choice", result.first_choice or ""))
    return props


# -- the session ---------------------------------------------------------------


class ScoringSession:
    """One per pytest process (controller and each worker), kept in config.stash."""

    def __init__(self, opts: Options, worker: bool, extractor: Extractor | None = None):
        self.opts = opts
        self.worker = worker
        self.extractor = extractor or PluginExtractor()
        self.info: ModelInfo | None = None
        self.cases: list[Case] = []
        self.notes: list[str] = []
        self._model: ModelAPI | None = None
        self._seen: dict[str, None] = {}  # transcripts reported this run (controller side), in order
        self._reports: list[Any] | None = None  # the end-of-run reports, computed once (finish, junit)

    def prepare(self) -> None:
        """Check options and inputs up front, so a bad run fails before any call."""
        self.opts.check()
        if not self.opts.enabled:
            return
        self.info = resolve_model(self.opts)
        items, self.notes = load_items(self.opts)
        self.cases = make_cases(items, self.opts.passes)
        for note in self.notes:
            log.info("%s", note)

    def ignore(self, path: Path) -> bool:
        """Without --model the item tests are not collected at all (nothing noisy
        skipped); with it, only they are, so the junit file is a clean score sheet
        and no other plugin (syrupy's unused-snapshot check) sees half a suite."""
        name = Path(path).name
        if not self.opts.enabled:
            return name == ITEMS_TEST_FILE
        return name.startswith("test_") and name.endswith(".py") and name != ITEMS_TEST_FILE

    def split(self, items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Scoring runs only the item tests: (kept, deselected). Without --model nothing is deselected."""
        if not self.opts.enabled:
            return list(items), []
        keep = [i for i in items if "item_case" in getattr(i, "fixturenames", ())]
        return keep, [i for i in items if "item_case" not in getattr(i, "fixturenames", ())]

    def parametrize(self) -> tuple[list[Case], list[str]]:
        """Cases and their ids; with no case, one id that says why (the test file was named explicitly)."""
        if self.cases:
            return self.cases, [c.id for c in self.cases]
        if not self.opts.enabled:
            return [], ["no --model given: pass --model NAME (or --model-url URL --model-id ID) to score a model"]
        return [], [f"no item was built for key {self.opts.key_label}; see the notes at the end of the run"]

    def model(self) -> ModelAPI:
        if self._model is None:
            assert self.info is not None
            self._model = self.info.make()
        return self._model

    def score(self, case: Case, user_properties: list, pytest_session: Any) -> CaseResult:
        """Run one case and record its properties; a fatal error stops the whole run."""
        assert self.info is not None
        try:
            result = self._run(case)
        except FatalModelError as exc:
            msg = f"model {self.info.name!r} failed fatally on {case.id}; the run is stopped: {exc}"
            pytest_session.shouldstop = msg
            raise RunStopped(msg) from None
        user_properties.extend(properties(case, self.info, result, self.opts.rootdir, self.opts.two_step))
        return result

    def _run(self, case: Case) -> CaseResult:
        assert self.info is not None
        return run_case(case, LazyModel(self.model, self.info.name), self.info, self.opts.resolved_run_dir,
                        two_step=self.opts.two_step, refresh=self.opts.refresh, extractor=self.extractor)

    def note(self, when: str, user_properties: Iterable[tuple[str, object]]) -> None:
        """Controller side: remember which transcripts this run produced (read back at the end)."""
        if when == "call":
            for name, value in user_properties:
                if name == "transcript":
                    self._seen[str(value)] = None

    def records(self) -> list[Record]:
        out = []
        for rel in self._seen:
            path = Path(self.opts.rootdir, rel)
            data = read_transcript(path)
            if data is None:
                raise TranscriptError(f"{path}: reported by a test but not readable now")
            out.append(record_of(data, path))
        return out

    def reports(self) -> list[Any]:
        """Controller side: one RunReport per family set from the transcripts on disk (read once);
        a set with data groups carries their tally (plugins.score.groups), the combined table none."""
        if self._reports is None:
            from plugins.score.groups import score_groups_by_pass
            from plugins.score.report import RunReport

            records = self.records()
            self._reports = [
                RunReport(model=self.opts.name, key_gpu=", ".join(sorted({r.key for r in records})), mode=self.opts.mode,
                          scores=scores, notes=tuple(self.notes), family_set=family_set,
                          groups=() if family_set == "all" else
                          score_groups_by_pass(r for r in records if r.family_set == family_set))
                for family_set, scores in score_by_set(records, combine=self.opts.combine_sets).items()
            ]
        return self._reports

    def suite_properties(self) -> list[tuple[str, str]]:
        """The data-group headline of every set, as junit `<testsuite>` properties (controller side)."""
        if self.worker or not self.opts.enabled:
            return []
        from plugins.score.groups import suite_properties

        return [p for rep in self.reports() for p in suite_properties(rep.groups, rep.family_set)]

    def finish(self) -> list[str]:
        """Controller side: the table from disk, written to score.md/score.json; lines for the terminal."""
        if self.worker or not self.opts.enabled:
            return []
        from plugins.score.report import no_items_lines, reports_lines, write_report

        reps = self.reports()
        if not reps:
            return list(no_items_lines(self.opts.name, self.opts.key_label, self.notes, built=len(self.cases)))
        md, js = write_report(reps, self.opts.resolved_run_dir)
        return [*reports_lines(reps), f"written: {md} and {js}"]

    def close(self) -> None:
        model, self._model = self._model, None
        close = getattr(model, "close", None)
        if callable(close):
            close()
