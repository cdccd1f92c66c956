"""SIGKILL on `python -m plugins.score run` ends its pytest child (issue 22): a real subprocess."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_sigkill_of_the_wrapper_ends_its_pytest_child(tmp_path):
    pidfile = tmp_path / "child.pid"
    (tmp_path / "test_sleeps.py").write_text(
        "import os, pathlib, time\n"
        f"def test_sleeps():\n    pathlib.Path({str(pidfile)!r}).write_text(str(os.getpid()))\n    time.sleep(120)\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    wrapper = subprocess.Popen([sys.executable, "-m", "plugins.score", "run", str(tmp_path / "test_sleeps.py"),
                                "-p", "no:cacheprovider", "-q", f"--rootdir={tmp_path}", "-c", str(tmp_path / "pytest.ini")],
                               cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline, "the pytest child never started its test"
            assert wrapper.poll() is None, "the wrapper ended before its child's test started"
            time.sleep(0.1)
        child = int(pidfile.read_text())
        assert _alive(child)
        wrapper.send_signal(signal.SIGKILL)
        wrapper.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), f"pytest child {child} outlived the killed wrapper"
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
        if pidfile.exists() and pidfile.read_text() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)  # never leave a sleeping child behind
