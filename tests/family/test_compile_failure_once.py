"""One compile failure is one failure (issue 22): the profile checks of a candidate that does
not compile skip, naming the test_compiles case that reports it, instead of repeating it as
tracebacks on every target."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "fixtures" / "families" / "gather_rows"


def test_a_compile_failure_fails_once_and_its_profile_checks_skip_with_the_reason(project):
    pytester = project
    for rel in ("family/test_families.py", "family/test_profiles.py"):
        (pytester.path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "tests" / rel, pytester.path / "tests" / rel)
    fam = pytester.path / "families" / "broken_compile"
    shutil.copytree(GOOD, fam)
    toml = fam / "family.toml"
    toml.write_text(toml.read_text().replace('name = "gather_rows"', 'name = "broken_compile"', 1))
    src = fam / "rewrites" / "row_major.cu"
    text = src.read_text()
    assert "out[(long long)r * C + c] =" in text
    src.write_text(text.replace("out[(long long)r * C + c] =", "out[(long long)r * C + cc] =", 1))

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:xdist", "-rfs", "--resources-out=r.json",
        "-k", "test_compiles or test_profile_checks_hold", timeout=900)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    failed = re.findall(r"^FAILED (\S+)", out, re.M)
    assert len(failed) == 1 and "test_compiles" in failed[0] and "row_major" in failed[0], failed
    skipped = re.findall(r"^SKIPPED \[\d+\] .*row_major\.cu: does not compile for (sm_\d+); reported once, by test_compiles", out, re.M)
    assert skipped, out[-3000:]
