"""Benchmarks of the CPU stages (pytest-benchmark, not timed tests): the NVRTC
compile of every candidate for one target (every target costs about the same;
seven of them would make the benchmark the slowest step of `make test`), and
family discovery/validation. `make test`'s main run skips them (--benchmark-skip)."""
from __future__ import annotations

import pytest

from plugins.family.catalog import Catalog
from plugins.family.compile import compile_source
from plugins.family.manifest import selected_sets


def test_bench_compile_all_candidates(benchmark, catalog):
    arch = "sm_90"  # every family's targets include it (no family needs more than 9.0)
    jobs = [(c.source, arch, c.path.name) for f in catalog.families if arch in f.targets for c in f.all_candidates]
    if not jobs:
        pytest.skip("no valid family to compile")
    uncached = compile_source.__wrapped__  # bypass the in-process cache: time real compiles

    def compile_all() -> int:
        return sum(uncached(*job).ok for job in jobs)

    ok = benchmark.pedantic(compile_all, rounds=1, iterations=1)
    benchmark.extra_info.update(compiles=len(jobs), families=len(catalog.families), target=arch)
    assert ok == len(jobs)


def test_bench_collect_families(benchmark, catalog, pytestconfig):
    sets = selected_sets(pytestconfig.getoption("st_set"))  # the catalog holds only the --set families
    found = benchmark.pedantic(Catalog.load, args=(catalog.root, sets), rounds=3, iterations=1)
    benchmark.extra_info.update(directories=len(found.found))
    assert len(found.found) == len(catalog.found)
