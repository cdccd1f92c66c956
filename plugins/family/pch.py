"""Where NVRTC's automatic precompiled headers live, and how much of them may pile up.

Why: with `-pch` alone NVRTC writes each PCH (7 MB to 160 MB, one per header set and
target) to /tmp/__nvrtc_auto_pch_<pid>_0 and removes the folder only when the process
exits normally. A killed run, or a worker that does not exit normally, leaves all of
it behind: 26 such folders, 64 GB, on one development machine, leaving 1.8 GB free.
Each process now writes into a folder of its own under .cache/nvrtc-pch/ (moved by
SPARKTRACE_PCH_DIR), keeps it under MAX_BYTES while it runs by removing its least
recently used PCH files (NVRTC makes a missing one again), removes it at exit, and the
first compile of every process sweeps the folders of processes on this host that are gone.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
from pathlib import Path

from plugins.cache.work import count

ENV = "SPARKTRACE_PCH_DIR"
DEFAULT_PARENT = Path(__file__).resolve().parents[2] / ".cache" / "nvrtc-pch"
# About ten header-heavy PCHs (150 MB each). Measured on every family's compile tests under
# -n 2: 192 PCHs made and 242 s with this cap, peak 3.3 GB on disk; 147 and 220 s with none,
# peak 9.8 GB. A disk that fills costs more than the 10%.
MAX_BYTES = 1536 << 20
_OWNED: dict[Path, int] = {}  # every folder made, and by which process
_CLAIMED: set[int] = set()


def parent() -> Path:
    return Path(os.environ.get(ENV) or DEFAULT_PARENT)


def _name(pid: int) -> str:
    return f"{socket.gethostname()}-{pid}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def sweep(root: Path) -> list[Path]:
    """Remove the folders under `root` whose process on this host has ended; what was removed."""
    prefix = f"{socket.gethostname()}-"
    gone = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return gone
    for entry in entries:
        pid = entry.name[len(prefix):]
        if entry.name.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)
            gone.append(Path(entry.path))
    return gone


def folder() -> Path:
    """This process's PCH folder, made (again, if something removed it) before every compile."""
    pid = os.getpid()
    path = parent() / _name(pid)
    if path not in _OWNED:  # this process's first compile here (a forked child is a new process)
        sweep(path.parent)
        if pid not in _OWNED.values():
            atexit.register(release, pid)
        _OWNED[path] = pid
    path.mkdir(parents=True, exist_ok=True)
    return path


_MESSAGE = re.compile(r'^"[^"\n]*": (creating|using) precompiled header file "([^"\n]+)"\n?', re.M)


def note_use(path: Path, log: str) -> str:
    """Mark each PCH in `path` that NVRTC's messages say this compile made or used as just used
    (its mtime, which prune reads), and return the log without those messages."""
    for m in _MESSAGE.finditer(log):
        used = Path(m.group(2))
        count("nvrtc_pch_create", m.group(1) == "creating")
        if used.parent == path:
            try:
                os.utime(used)
            except FileNotFoundError:  # removed since; NVRTC makes it again when needed
                pass
    return _MESSAGE.sub("", log).rstrip()


def prune(path: Path, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Remove the least recently used PCH files (oldest mtime, see note_use) until the folder
    holds at most `max_bytes`; the most recent is kept."""
    files = []
    for entry in os.scandir(path):
        if entry.name.endswith(".pch") and entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            files.append((st.st_mtime_ns, entry.name, st.st_size))
    files.sort()
    total = sum(size for _, _, size in files)
    removed = []
    for _, name, size in files[:-1]:
        if total <= max_bytes:
            break
        (path / name).unlink(missing_ok=True)
        removed.append(path / name)
        count("nvrtc_pch_evict")
        total -= size
    return removed


def claim() -> bool:
    """True for the first pytest session of this process: the one that may release the folder
    at its end (a session that pytester runs inside a test must leave it to the outer one)."""
    if os.getpid() in _CLAIMED:
        return False
    _CLAIMED.add(os.getpid())
    return True


def release(pid: int | None = None) -> None:
    """Remove the folders this process made (called with another `pid`, as a forked child's
    inherited atexit does, it removes nothing)."""
    if (os.getpid() if pid is None else pid) != os.getpid():
        return
    for path in [p for p, owner in _OWNED.items() if owner == os.getpid()]:
        shutil.rmtree(path, ignore_errors=True)
        del _OWNED[path]
