"""The on-disk cache: content-addressed, never serves a partial or foreign entry,
off with SPARKTRACE_NO_CACHE, and a changed tool version misses."""
from __future__ import annotations

import pytest

from plugins.cache import store
from plugins.cache.work import COUNTS


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of its own; the made-up kind "t" these tests count is taken out of the session's work
    counts afterwards (it showed up as rows "t" and "hit:t" in --work-report)."""
    monkeypatch.setenv(store.DIR_ENV, str(tmp_path / "c"))
    monkeypatch.delenv(store.OFF_ENV, raising=False)
    yield tmp_path / "c"
    for kind in ("t", "hit:t"):
        COUNTS.pop(kind, None)


def _maker(calls):
    def make():
        calls.append(1)
        return b"payload"
    return make


def test_second_call_reads_the_entry_and_counts_a_hit(cache):
    calls: list[int] = []
    key = store.digest("src", "opts", "tool 1.0")
    before = COUNTS["hit:t"]
    assert store.cached("t", key, _maker(calls)) == b"payload"
    assert store.cached("t", key, _maker(calls)) == b"payload"
    assert calls == [1] and COUNTS["hit:t"] == before + 1
    assert store.entry_path("t", key).is_relative_to(cache / "t")
    assert not list((cache / "t").rglob("*.tmp"))  # the temp file was renamed, not left


def test_a_tool_upgrade_is_another_key():
    assert store.digest("src", "tool 1.0") != store.digest("src", "tool 1.1")
    assert store.digest("ab", "c") != store.digest("a", "bc")


@pytest.mark.parametrize("damage", [lambda raw: raw[:-3], lambda raw: raw[:10], lambda raw: b"", lambda raw: raw + b"x",
                                    lambda raw: raw.replace(store.MAGIC, b"other/1\n")])
def test_a_truncated_or_foreign_entry_is_a_miss_and_is_rewritten(cache, damage):
    key = store.digest("k")
    store.store("t", key, b"0123456789" * 10)
    path = store.entry_path("t", key)
    path.write_bytes(damage(path.read_bytes()))
    assert store.load("t", key) is None
    calls: list[int] = []
    assert store.cached("t", key, _maker(calls)) == b"payload" and calls == [1]
    assert store.load("t", key) == b"payload"


def test_off_switch_makes_every_call_fresh_and_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(store.OFF_ENV, "1")
    calls: list[int] = []
    key = store.digest("k")
    store.cached("t", key, _maker(calls))
    store.cached("t", key, _maker(calls))
    assert calls == [1, 1] and not cache.exists()
    assert not store.kind_dir("emu_build").is_relative_to(cache)


def test_compile_result_round_trips_through_the_cache(cache):
    from plugins.family import compile as comp

    src = 'extern "C" __global__ void k0(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2.0f * y[i]; }\n'
    comp.compile_source.cache_clear()
    fresh = comp.compile_source(src, "sm_90", "t.cu")
    comp.compile_source.cache_clear()
    hits = COUNTS["hit:nvrtc_compile"]
    again = comp.compile_source(src, "sm_90", "t.cu")
    assert COUNTS["hit:nvrtc_compile"] == hits + 1
    assert again == fresh and again.cubin == fresh.cubin and again.resources and again.ok
    assert fresh.entry_params == again.entry_params == (("k0", (8, 4)),)
    assert comp.ptx_entry_params(src, "sm_90", "t.cu") == {"k0": (8, 4)}
