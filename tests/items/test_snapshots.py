"""Snapshots of every captured slip (full and its set's ablated condition) and every prompt
that can be rendered on the key, one readable .txt file each under
tests/items/__snapshots__/test_snapshots/. A changed slip or prompt fails here as a
diff; `pytest --snapshot-update` accepts it after review."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plugins.measure.ncu import read_details_csv
from plugins.items.slip import load_slip, render_slip

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).parents[1] / "fixtures" / "ncu"


def test_slip_snapshot(slip_case, text_snapshot, pytestconfig):
    if slip_case.skip:
        pytest.skip(slip_case.skip)
    report = load_slip(Path(pytestconfig.rootpath, "slips"), slip_case.gpu, slip_case.family)
    assert report is not None, slip_case.csv
    assert render_slip(report, ablated=slip_case.ablated, cues=slip_case.cues) == text_snapshot


def test_prompts_render(snapshot_cases):
    assert snapshot_cases.error == ""
    assert snapshot_cases.prompts or not any((ROOT / "families").glob("*/family.toml")), "no prompt rendered"


def test_prompt_snapshot(prompt_case, text_snapshot):
    assert prompt_case.prompt == text_snapshot


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", *args],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_changed_slip_fails_its_snapshot(tmp_path):
    """The same extension as above, on a tmp copy: accept once, change one value, see it fail with the diff."""
    csv_path = tmp_path / "slip.csv"
    csv_path.write_text((FIX / "layout-new.placeholder.csv").read_text())
    (tmp_path / "test_snap.py").write_text(textwrap.dedent('''
        from pathlib import Path
        from plugins.items.hooks import text_extension
        from plugins.measure.ncu import read_details_csv
        from plugins.items.slip import render_slip

        def test_slip(snapshot):
            text = render_slip(read_details_csv(Path("slip.csv")))
            assert text == snapshot(extension_class=text_extension())
    '''))
    first = _run(tmp_path, "--snapshot-update")
    assert first.returncode == 0, first.stdout + first.stderr
    saved = list(tmp_path.glob("__snapshots__/test_snap/*.txt"))
    assert len(saved) == 1 and "Registers Per Thread" in saved[0].read_text()
    assert _run(tmp_path).returncode == 0, "an unchanged slip passes"
    csv_path.write_text(csv_path.read_text().replace('"Registers Per Thread","register/thread","33"',
                                                     '"Registers Per Thread","register/thread","34"'))
    changed = _run(tmp_path)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "Registers Per Thread" in changed.stdout and "34" in changed.stdout
    assert render_slip(read_details_csv(csv_path)) != saved[0].read_text()
