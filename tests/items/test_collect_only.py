"""`pytest --collect-only` on a clean checkout: exit 0, and never the advice that would delete
the committed prompt and slip snapshots (issue 22)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_collect_only_exits_0_and_never_advises_deleting_snapshots():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", "tests/items/test_snapshots.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "--snapshot-update" not in out, out[-3000:]
    assert "unused" not in out.lower() or "disabled" in out.lower(), out[-3000:]
