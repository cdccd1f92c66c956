"""Benchmarks of the CPU stages (pytest-benchmark, not timed tests): the NVRTC
compile of every family's starting kernel for one target (every target costs about
the same; all candidates on all seven targets would make the benchmark the slowest
step of `make test`), and family discovery/validation. Both do the work afresh: no
compile is read from .cache/sparktrace/ and no family from load_family's memo.
`make test`'s main run skips them (--benchmark-skip)."""
from __future__ import annotations

import pytest

from plugins.cache import store
from plugins.family import manifest
from plugins.family.catalog import Catalog
from plugins.family.compile import compile_source
from plugins.family.manifest import selected_sets


def test_bench_compile_start_kernels(benchmark, catalog, monkeypatch):
    arch = "sm_90"  # every family's targets include it (no family needs more than 9.0)
    jobs = [(f.start.source, arch, f.start.path.name) for f in catalog.families if arch in f.targets]
    if not jobs:
        pytest.skip("no valid family to compile")
    uncached = compile_source.__wrapped__  # bypass the in-process cache
    monkeypatch.setenv(store.OFF_ENV, "1")  # and the disk cache: time real compiles

    def compile_all() -> int:
        return sum(uncached(*job).ok for job in jobs)

    ok = benchmark.pedantic(compile_all, rounds=1, iterations=1)
    benchmark.extra_info.update(compiles=len(jobs), families=len(catalog.families), target=arch)
    assert ok == len(jobs)


def test_bench_collect_families(benchmark, catalog, pytestconfig, monkeypatch):
    monkeypatch.setenv(store.OFF_ENV, "1")  # the reference contract checked afresh too
    sets = selected_sets(pytestconfig.getoption("st_set"))  # the catalog holds only the --set families
    found = benchmark.pedantic(Catalog.load, args=(catalog.root, sets), setup=manifest._LOADED.clear, rounds=3, iterations=1)
    benchmark.extra_info.update(directories=len(found.found))
    assert len(found.found) == len(catalog.found)
