"""`python -m plugins.score run [pytest args]`: a scoring run whose exit code says whether it completed.
`python -m plugins.score local [--key GPU] [pytest args]`: what `make run` does: the local model on
the measured key when one exists, otherwise on the intended key (every output labelled).

`make run` and `make dry-run` call this: exit 0 when the run completed,
whatever the score; pytest's own non-zero code for a usage error, an
interruption or an internal error; 1 when a test broke or an item was omitted
(see plugins/score/runexit.py).
"""
from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from plugins.score.runexit import USAGE_ERROR, run_exit_code

log = logging.getLogger("sparktrace.run")
USAGE = ("usage: python -m plugins.score run [pytest options, e.g. -v --model local --junitxml=PATH]\n"
         "       python -m plugins.score local [--key GPU] [--set SET] [pytest options]")


def _end_with(parent: int):
    """A preexec_fn: the pytest child gets SIGKILL when this wrapper dies, even by SIGKILL, so a
    killed run never leaves a child writing on (Linux: PR_SET_PDEATHSIG; elsewhere nothing)."""
    def arm() -> None:
        if not sys.platform.startswith("linux"):
            return
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the wrapper died before the prctl took hold
            os._exit(1)
    return arm


def local_args(args: list[str], root: Path = Path(".")) -> tuple[list[str], str]:
    """The pytest arguments `make run` scores the local model with, and a line saying which key:
    the measured key when any family has items on it, else the intended winners (labelled). Without
    --key the key is plugins.items.keys.resolve_key's: the one GPU key measured, else the stand-in's."""
    from plugins.family.manifest import DEFAULT_SET, selected_sets
    from plugins.items.build import build_items
    from plugins.items.keys import KeyChoiceError, resolve_key

    key, family_set, rest = None, DEFAULT_SET, []
    it = iter(args)
    for a in it:
        if a in ("--key", "--set"):
            value = next(it, None)
            if value is None:
                raise SystemExit(f"{a} needs a value; {USAGE}")
            key, family_set = (value, family_set) if a == "--key" else (key, value)
        elif a.startswith(("--key=", "--set=")):
            name, value = a.split("=", 1)
            key, family_set = (value, family_set) if name == "--key" else (key, value)
        else:
            rest.append(a)
    try:  # several measured keys and no --key: one error listing them
        key = resolve_key(Path(root, "families"), key, intended=True)
    except KeyChoiceError as exc:
        raise SystemExit(f"{exc}; {USAGE}") from None
    items, _ = build_items(Path(root, "families"), key, sets=selected_sets(family_set))
    common = ["-v", "--model", "local", "--key", key, f"--set={family_set}"]
    if items:
        run = Path("reports", "runs", "local")
        why = f"key {key} is measured for {len({i.family for i in items})} families: scoring them"
        return [*common, f"--run-dir={run}", f"--junitxml={run / 'junit.xml'}", *rest], why
    run = Path("reports", "runs", "local-intended")
    why = (f"no family has a measured key {key} yet: scoring the intended winners instead "
           "(--key-intended; every output says NOT MEASURED)")
    return [*common, "--key-intended", f"--run-dir={run}", f"--junitxml={run / 'junit.xml'}", *rest], why


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
    if not argv or argv[0] not in ("run", "local"):
        log.error(USAGE)
        return USAGE_ERROR
    args = argv[1:]
    if argv[0] == "local":
        args, why = local_args(args)
        log.info("%s", why)
    with tempfile.TemporaryDirectory(prefix="sparktrace-run-") as tmp:
        sheet = junit_path(args)
        if sheet is None:
            sheet = str(Path(tmp, "junit.xml"))
            args = [*args, f"--junitxml={sheet}"]
        code = subprocess.call([sys.executable, "-m", "pytest", *args], preexec_fn=_end_with(os.getpid()))
        verdict = run_exit_code(code, Path(sheet))
    (log.info if verdict.code == 0 else log.error)("%s; exit %d", verdict.reason, verdict.code)
    return verdict.code


if __name__ == "__main__":
    sys.exit(main())
