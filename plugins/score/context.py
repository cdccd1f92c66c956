"""Will the prompt fit? The model's context window and the prompt's length, before asking.

Why before asking: Ollama cuts an over-long prompt silently (the model then
answers a question it never saw), and llama.cpp, LM Studio and vLLM answer a
400 that used to stop the whole run. An item that cannot fit is omitted with
that reason (`ContextOverflowError`) and the run goes on.

The window comes from the registry (`context_tokens`) or from what the server
reports (`context_probe = "auto"`): llama.cpp's `/props`, vLLM's (and SGLang's)
`max_model_len` in `/v1/models`, Ollama's `/api/ps` (after loading the model),
LM Studio's `loaded_context_length`. The prompt is counted by the server's
tokenizer when it has one (llama.cpp `/apply-template` + `/tokenize`, vLLM
`/tokenize`, llama-cpp-python `/extras/tokenize/count`); otherwise it is
estimated from its UTF-8 length, conservatively (see `estimate_tokens`), and the
omission says so. A prompt fits when its tokens plus `max_tokens` are within the
window (vLLM's own rule: the answer budget must fit too).
"""
from __future__ import annotations

import logging
import math
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

import httpx

from plugins.score.modelapi import Completion, ContextOverflowError, GenerateConfig, Message, ModelAPI

log = logging.getLogger("sparktrace.context")

PROBES = ("auto", "none")
# The estimate when no tokenizer answers: one token per digit (a slip's tables are mostly
# numbers, and some tokenizers, SmolLM2's among them, split every digit), one token per
# ESTIMATE_BYTES_PER_TOKEN bytes of the rest of the UTF-8, plus a chat template's overhead
# per message. Conservative: on the committed prompts (source items only: no slip is
# committed yet) SmolLM2's tokenizer, whose 49k vocabulary is less compact than those of
# most chat models served today, packs at least 1.9 bytes per token (a diagnose-set prompt
# with hex constants; 2.2 on the classic and hard sets), and the estimate counts more tokens
# than it does on every one of them (tests/score/test_context.py, local_model).
ESTIMATE_BYTES_PER_TOKEN = 1.75
ESTIMATE_MESSAGE_OVERHEAD = 8
# Ollama says nothing about a model's window until it is loaded: loading it first
# (an empty generate, as the first request would) makes /api/ps report it.
_PROBE_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Window:
    """The model's context window in tokens (None: not known, not checked) and where it came from."""

    tokens: int | None
    source: str
    server: str = ""  # which server said so: llama.cpp, vllm, ollama, lmstudio ("" for the registry)


@dataclass(frozen=True)
class Count:
    tokens: int
    how: str  # "counted by llama.cpp /tokenize", "estimated from 12345 bytes at 2.5 bytes per token", ...


def estimate_tokens(messages: Sequence[Message]) -> Count:
    """A conservative estimate: more tokens than a chat model's tokenizer gives (see ESTIMATE_*)."""
    nbytes = sum(len(m.content.encode("utf-8")) for m in messages)
    digits = sum(ch.isdigit() for m in messages for ch in m.content if ch.isascii())
    tokens = (digits + math.ceil((nbytes - digits) / ESTIMATE_BYTES_PER_TOKEN)
              + ESTIMATE_MESSAGE_OVERHEAD * (len(messages) + 1))
    return Count(tokens, f"estimated from {nbytes} bytes ({digits} digits, one token each; the rest at "
                         f"{ESTIMATE_BYTES_PER_TOKEN} bytes per token), no tokenizer endpoint")


def server_root(base_url: str) -> str:
    """The server's root for its native endpoints: the base URL without a trailing /v1."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


class Probe:
    """Asks one server what it knows (window, tokenizer). Every call is one bounded request;
    an error or an unexpected shape means "this server does not say", never a failure."""

    def __init__(self, base_url: str, model_id: str, headers: Mapping[str, str], http: httpx.Client):
        self.base = base_url.rstrip("/")
        self.root = server_root(base_url)
        self.model_id = model_id
        self.headers = dict(headers)
        self.http = http

    def _json(self, method: str, url: str, body: Any = None) -> Any:
        try:
            r = self.http.request(method, url, json=body, headers=self.headers, timeout=_PROBE_TIMEOUT)
        except httpx.HTTPError:
            return None
        if r.status_code != 200:
            return None
        try:
            return r.json()
        except ValueError:
            return None

    # -- windows -----------------------------------------------------------
    def llamacpp(self) -> Window | None:
        data = self._json("GET", self.root + "/props")
        if not isinstance(data, dict):
            return None
        settings = data.get("default_generation_settings")
        n = _int(settings.get("n_ctx")) if isinstance(settings, dict) else None
        n = n or _int(data.get("n_ctx"))
        return Window(n, "llama.cpp /props n_ctx", "llama.cpp") if n else None

    def vllm(self) -> Window | None:
        data = self._json("GET", self.base + "/models")
        rows = data.get("data") if isinstance(data, dict) else None
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get("id") == self.model_id and _int(row.get("max_model_len")):
                return Window(row["max_model_len"], "/v1/models max_model_len (vLLM, SGLang)", "vllm")
        return None

    def ollama(self) -> Window | None:
        if not isinstance(self._json("GET", self.root + "/api/version"), dict):
            return None
        found = self._ollama_ps()
        if found is None:  # not loaded yet: load it (what the first request would do), then ask again
            self._json("POST", self.root + "/api/generate", {"model": self.model_id})
            found = self._ollama_ps()
        if found is not None:
            return Window(found, "Ollama /api/ps context_length of the loaded model", "ollama")
        shown = self._json("POST", self.root + "/api/show", {"model": self.model_id})
        params = shown.get("parameters") if isinstance(shown, dict) else None
        m = _NUM_CTX.search(params) if isinstance(params, str) else None
        if m:
            return Window(int(m.group(1)), "Ollama /api/show num_ctx", "ollama")
        return None

    def _ollama_ps(self) -> int | None:
        data = self._json("GET", self.root + "/api/ps")
        for row in (data.get("models") or []) if isinstance(data, dict) else []:
            if isinstance(row, dict) and self.model_id in (row.get("name"), row.get("model")):
                return _int(row.get("context_length"))
        return None

    def lmstudio(self) -> Window | None:
        data = self._json("GET", f"{self.root}/api/v0/models/{quote(self.model_id, safe='')}")
        if isinstance(data, dict) and _int(data.get("loaded_context_length")):
            return Window(data["loaded_context_length"], "LM Studio /api/v0/models loaded_context_length", "lmstudio")
        return None

    def window(self) -> Window | None:
        for probe in (self.llamacpp, self.vllm, self.ollama, self.lmstudio):
            w = probe()
            if w is not None:
                return w
        return None

    # -- tokenizers ----------------------------------------------------------
    def counter(self, server: str = "") -> Callable[[Sequence[Message]], Count | None] | None:
        """The tokenizer endpoint of the server the window came from (Ollama and LM Studio have
        none), else the first one that answers a one-word probe, as a counting function."""
        hello = [Message("user", "hello")]
        known = {"llama.cpp": (self._count_llamacpp,), "vllm": (self._count_vllm,), "ollama": (), "lmstudio": ()}
        for fn in known.get(server, (self._count_llamacpp, self._count_vllm, self._count_llama_cpp_python)):
            if fn(hello) is not None:
                return fn
        return None

    def _count_vllm(self, messages: Sequence[Message]) -> Count | None:
        data = self._json("POST", self.root + "/tokenize", {
            "model": self.model_id, "messages": [{"role": m.role, "content": m.content} for m in messages]})
        if isinstance(data, dict) and _int(data.get("count")):
            return Count(data["count"], "counted by the server's /tokenize with its chat template (vLLM)")
        return None

    def _count_llamacpp(self, messages: Sequence[Message]) -> Count | None:
        shaped = self._json("POST", self.root + "/apply-template",
                            {"messages": [{"role": m.role, "content": m.content} for m in messages]})
        prompt = shaped.get("prompt") if isinstance(shaped, dict) else None
        templated = isinstance(prompt, str)
        text = prompt if templated else "\n".join(m.content for m in messages)
        data = self._json("POST", self.root + "/tokenize", {"content": text, "add_special": True})
        tokens = data.get("tokens") if isinstance(data, dict) and "count" not in data else None
        if not isinstance(tokens, list) or not tokens:
            return None
        if templated:
            return Count(len(tokens), "counted by llama.cpp /apply-template + /tokenize")
        return Count(len(tokens) + ESTIMATE_MESSAGE_OVERHEAD * (len(messages) + 1),
                     "counted by llama.cpp /tokenize, plus an estimated chat-template overhead")

    def _count_llama_cpp_python(self, messages: Sequence[Message]) -> Count | None:
        total = 0
        for m in messages:
            data = self._json("POST", self.root + "/extras/tokenize/count", {"input": m.content, "model": self.model_id})
            if not isinstance(data, dict) or not isinstance(data.get("count"), int):
                return None
            total += data["count"]
        return Count(total + ESTIMATE_MESSAGE_OVERHEAD * (len(messages) + 1),
                     "counted by llama-cpp-python /extras/tokenize/count, plus an estimated chat-template overhead")


class ContextCheckedModel:
    """Omits, before any request, an item whose prompt plus answer budget cannot fit the window.

    The window and the tokenizer are found once, on first use (`resolve`); with
    neither a registry window nor a server that reports one, nothing is checked
    and the log says so once.
    """

    def __init__(self, inner: ModelAPI, *, context_tokens: int | None, probe: str,
                 make_probe: Callable[[], Probe] | None):
        if probe not in PROBES:
            raise ValueError(f"context_probe {probe!r}: use one of {', '.join(PROBES)}")
        self.inner = inner
        self.name = inner.name
        self.context_tokens = context_tokens
        self.probe = probe
        self.make_probe = make_probe
        self._resolved: tuple[Window, Callable[[Sequence[Message]], Count | None] | None] | None = None
        self._lock = threading.Lock()

    def resolve(self) -> tuple[Window, Callable[[Sequence[Message]], Count | None] | None]:
        with self._lock:
            if self._resolved is None:
                window = Window(self.context_tokens, "the registry's context_tokens") if self.context_tokens else None
                counter = None
                if self.probe == "auto" and self.make_probe is not None:
                    p = self.make_probe()
                    window = window or p.window()
                    counter = p.counter(window.server) if window is not None else None
                window = window or Window(None, "not known: set context_tokens in the registry entry to check it")
                if window.tokens is None:
                    log.warning("model %r: context window %s; prompts are not checked against it", self.name, window.source)
                else:
                    log.info("model %r: context window %d tokens (%s); prompts %s", self.name, window.tokens,
                             window.source, "counted by the server's tokenizer" if counter else "estimated")
                self._resolved = (window, counter)
            return self._resolved

    def check(self, messages: Sequence[Message], config: GenerateConfig) -> Count | None:
        """Raise ContextOverflowError when the prompt cannot fit; the count used, or None (not checked)."""
        window, counter = self.resolve()
        if window.tokens is None:
            return None
        count = (counter(messages) if counter is not None else None) or estimate_tokens(messages)
        need = count.tokens + config.max_tokens
        if need > window.tokens:
            raise ContextOverflowError(
                f"context: the prompt needs {count.tokens} tokens ({count.how}) plus max_tokens "
                f"{config.max_tokens} = {need}, more than the context window of {window.tokens} tokens "
                f"({window.source}); fix: raise the server's context (README, 'Context windows') or lower max_tokens"
            )
        return count

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        self.check(messages, config)
        return self.inner.generate(messages, config)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
