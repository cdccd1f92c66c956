"""Where NVRTC's automatic precompiled headers live, and how much of them may pile up.

Why: with `-pch` alone NVRTC writes each PCH (7 MB to 160 MB, one per header set and
target) to /tmp/__nvrtc_auto_pch_<pid>_0 and removes the folder only when the process
exits normally. A killed run, or a worker that does not exit normally, leaves all of
it behind: 26 such folders, 64 GB, on one development machine, leaving 1.8 GB free.
Each process now writes into a folder of its own under .cache/nvrtc-pch/ (moved by
SPARKTRACE_PCH_DIR) and holds a lock on it while it lives. It keeps the folder under
MAX_BYTES by removing its least recently used PCH files (NVRTC makes a missing one
again) and removes it at session end and at exit. The first compile of every process
removes the folders whose lock nobody holds: their process has ended, however it ended.
"""
from __future__ import annotations

import atexit
import fcntl
import itertools
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from plugins.cache.work import count

ENV = "SPARKTRACE_PCH_DIR"
DEFAULT_PARENT = Path(__file__).resolve().parents[2] / ".cache" / "nvrtc-pch"
# About ten header-heavy PCHs (150 MB each). Measured on every family's compile tests under
# -n 2: 192 PCHs made and 242 s with this cap, peak 3.3 GB on disk; 147 and 220 s with none,
# peak 9.8 GB. A disk that fills costs more than the 10%.
MAX_BYTES = 1536 << 20
LOCK = ".lock"
_OWNED: dict[tuple[int, Path], tuple[Path, int]] = {}  # (pid, parent) -> (folder, fd holding its lock)
_USED: dict[Path, int] = {}  # PCH file -> when this process last made or used it
_SEQ = itertools.count()
_CLAIMED: set[int] = set()


def parent() -> Path:
    """Absolute, so a later chdir neither moves the folder nor hides it from release."""
    return Path(os.environ.get(ENV) or DEFAULT_PARENT).absolute()


def _lock(folder: Path, wait: bool) -> int | None:
    """An fd holding the folder's lock, or None where another process holds it (or the file
    system has no locks: then nobody may sweep the folder)."""
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | (os.O_CREAT if wait else 0), 0o644)
    except OSError:  # no lock file (not such a folder), or not ours to open
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        if not wait:
            os.close(fd)
            return None
    return fd


def _make(root: Path) -> tuple[Path, int]:
    """A new folder, locked before it gets the name a sweep looks at."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    fd = _lock(tmp, wait=True)
    assert fd is not None
    final = root / f"{socket.gethostname()}-{os.getpid()}-{tmp.name.removeprefix('.new-')}"
    os.rename(tmp, final)
    return final, fd


def sweep(root: Path) -> list[Path]:
    """Remove the folders under `root` whose lock nobody holds; what was removed. A folder
    without a lock file is not one of these and is left alone. This process's own folders are
    locked through other open files, so they are skipped like any live one."""
    gone = []
    try:
        entries = list(os.scandir(root))
    except FileNotFoundError:
        return gone
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        if (fd := _lock(path, wait=False)) is None:
            continue  # its process lives
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        if not path.exists():
            gone.append(path)
    return gone


def folder() -> Path:
    """This process's PCH folder, made (again, if something removed it) before every compile."""
    key = (os.getpid(), parent())
    if key not in _OWNED:  # this process's first compile here (a forked child is a new process)
        sweep(key[1])
        if not any(pid == key[0] for pid, _ in _OWNED):
            atexit.register(release, key[0])
        _OWNED[key] = _make(key[1])
    path, fd = _OWNED[key]
    if not (path / LOCK).exists():  # removed under us: make it again, locked
        path.mkdir(parents=True, exist_ok=True)
        if (new := _lock(path, wait=True)) is not None:
            os.close(fd)
            _OWNED[key] = (path, new)
    return path


_MESSAGE = re.compile(r'^"[^"\n]*": (creating|using) precompiled header file "([^"\n]+)"\n?', re.M)


def note_use(path: Path, log: str) -> str:
    """Record each PCH in `path` that NVRTC's messages say this compile made or used as the most
    recently used (prune reads it), and return the log without those messages."""
    for m in _MESSAGE.finditer(log):
        count("nvrtc_pch_create", m.group(1) == "creating")
        if (used := Path(m.group(2))).parent == path:
            _USED[used] = next(_SEQ)
    return _MESSAGE.sub("", log).rstrip()


def prune(path: Path, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Remove the least recently used PCH files (never noted ones first) until the folder holds
    at most `max_bytes`; the most recently used is kept."""
    files = []
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return []
    for entry in entries:
        try:
            if entry.name.endswith(".pch") and entry.is_file(follow_symlinks=False):
                p = Path(entry.path)
                files.append((_USED.get(p, -1), entry.name, p, entry.stat(follow_symlinks=False).st_size))
        except FileNotFoundError:
            continue
    files.sort()
    total = sum(size for *_, size in files)
    removed = []
    for _, _, p, size in files[:-1]:
        if total <= max_bytes:
            break
        p.unlink(missing_ok=True)
        _USED.pop(p, None)
        removed.append(p)
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
    for key in [k for k in _OWNED if k[0] == os.getpid()]:
        path, fd = _OWNED.pop(key)
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
        for p in [p for p in _USED if p.parent == path]:
            del _USED[p]
