"""`python -m plugins.score run [pytest args]`: a scoring run whose exit code says whether it completed.

`make run` and `make dry-run` call this: exit 0 when the run completed,
whatever the score; pytest's own non-zero code for a usage error, an
interruption or an internal error; 1 when a test broke or an item was omitted
(see plugins/score/runexit.py).
"""
from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
from pathlib import Path

from plugins.score.runexit import USAGE_ERROR, run_exit_code

log = logging.getLogger("sparktrace.run")
USAGE = "usage: python -m plugins.score run [pytest options, e.g. -v --model local --junitxml=PATH]"


def junit_path(args: list[str]) -> str | None:
    """The --junitxml path among pytest's arguments, if any."""
    for i, a in enumerate(args):
        if a.startswith("--junitxml=") or a.startswith("--junit-xml="):
            return a.split("=", 1)[1]
        if a in ("--junitxml", "--junit-xml") and i + 1 < len(args):
            return args[i + 1]
    return None


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="sparktrace: %(message)s", stream=sys.stderr)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "run":
        log.error(USAGE)
        return USAGE_ERROR
    args = argv[1:]
    with tempfile.TemporaryDirectory(prefix="sparktrace-run-") as tmp:
        sheet = junit_path(args)
        if sheet is None:
            sheet = str(Path(tmp, "junit.xml"))
            args = [*args, f"--junitxml={sheet}"]
        code = subprocess.call([sys.executable, "-m", "pytest", *args])
        verdict = run_exit_code(code, Path(sheet))
    (log.info if verdict.code == 0 else log.error)("%s; exit %d", verdict.reason, verdict.code)
    return verdict.code


if __name__ == "__main__":
    sys.exit(main())
