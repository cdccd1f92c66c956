"""Pytest hooks for the model stage (thin: hands off to a session object in config.stash).

`pytest --model NAME` turns every item into a test (tests/score/test_items_model.py);
the junit XML is the score sheet and the end-of-run table is read from disk.
"""
from __future__ import annotations

import functools

import pytest

from plugins.score.session import RunStopped, ScoringConfigError, ScoringSession, options_from

SESSION = pytest.StashKey[ScoringSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("sparktrace-model", "SparkTrace: score a model")
    g.addoption("--model", dest="st_model", metavar="NAME",
                help="score this model: a models.toml entry, a baseline (random, always-a) or heuristic:NAME "
                     "(plugins/score/heuristics.py)")
    g.addoption("--model-url", dest="st_model_url", metavar="URL",
                help="score any OpenAI-compatible server at this base URL (with --model-id; "
                     "--model-set api=anthropic for Anthropic's Messages API)")
    g.addoption("--model-id", dest="st_model_id", metavar="ID", help="the model id the --model-url server expects")
    g.addoption("--model-key-env", dest="st_model_key_env", metavar="VAR",
                help="environment variable holding the --model-url server's key (never the key itself)")
    g.addoption("--model-set", dest="st_model_set", action="append", default=[], metavar="FIELD=VALUE",
                help="a models.toml field for --model-url (or to override a --model entry), repeatable: "
                     "temperature=1.0, max_tokens=16000, max_tokens_field=max_completion_tokens, reasoning=false, "
                     "reasoning_style=reasoning_effort, api=anthropic, api_key_header=x-api-key, context_tokens=32768")
    g.addoption("--registry", dest="st_registry", metavar="PATH", help="model registry (default: models.toml)")
    g.addoption("--key", dest="st_key", metavar="GPU",
                help="whose measurements are the answer key: a GPU key, the slug its measurement files are named "
                     "by, e.g. h200, rtx-4090 (default: the one GPU key any family has measured; with none, "
                     "--key-intended uses the stand-in device of prompts/stand-in-gpu.toml)")
    g.addoption("--key-intended", dest="st_key_intended", action="store_true",
                help="dry run on each family's intended winner (not measured; not a score)")
    g.addoption("--items", dest="st_items", metavar="PATH", help="load items from this JSONL instead of building them")
    g.addoption("--passes", dest="st_passes", type=int, default=1, metavar="N", help="ask every item N times")
    g.addoption("--refresh", dest="st_refresh", action="store_true",
                help="ask the model again even where a saved transcript answers")
    g.addoption("--combine-sets", dest="st_combine_sets", action="store_true",
                help="with --set all, also one table over every set (each set is always reported on its own)")
    g.addoption("--two-step", dest="st_two_step", action="store_true",
                help="show the model the measured runtime of its pick and let it pick again")
    g.addoption("--run-dir", dest="st_run_dir", metavar="PATH", help="run folder (default: reports/runs/<model>)")


def pytest_configure(config: pytest.Config) -> None:
    session = config.stash[SESSION] = ScoringSession(options_from(config.getoption, config.rootpath),
                                                     worker=hasattr(config, "workerinput"))
    try:
        session.prepare()
    except ScoringConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(_ReportListener(session), "sparktrace-model-reports")


class _ReportListener:
    """Controller side (and single-process runs): which transcripts the finished tests wrote."""

    def __init__(self, session: ScoringSession):
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.session.note(report.when, report.user_properties)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION in config.stash:
        config.stash[SESSION].close()


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    return True if config.stash[SESSION].ignore(collection_path) else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "item_case" in metafunc.fixturenames:
        cases, ids = metafunc.config.stash[SESSION].parametrize()
        metafunc.parametrize("item_case", cases or [pytest.param(None, marks=pytest.mark.skip(reason=ids[0]))],
                             ids=ids if cases else ["no-model"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = config.stash[SESSION].split(items)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(tryfirst=True)  # before junitxml writes the sheet in its own pytest_sessionfinish
def pytest_sessionfinish(session: pytest.Session) -> None:
    props = session.config.stash[SESSION].suite_properties()
    xml = next((p for p in session.config.pluginmanager.get_plugins() if hasattr(p, "add_global_property")), None)
    for name, value in props if xml is not None else ():
        xml.add_global_property(name, value)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    lines = config.stash[SESSION].finish()
    if lines:
        terminalreporter.write_sep("=", "SparkTrace score")
    for line in lines:
        terminalreporter.write_line(line)


@pytest.fixture
def model_scorer(request: pytest.FixtureRequest):
    """Score one case; a miss fails the test, an omitted item skips it, a fatal error stops the run."""
    return functools.partial(_score, request)


def _score(request: pytest.FixtureRequest, case):
    try:
        result = request.config.stash[SESSION].score(case, request.node.user_properties, request.session)
    except RunStopped as exc:
        pytest.fail(str(exc), pytrace=False)
    if result.outcome == "omitted":
        pytest.skip(f"omitted: {result.omitted_reason}")
    return result
