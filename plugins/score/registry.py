"""The model registry (`models.toml`) and how a name becomes a `ModelAPI`.

Why a registry file: endpoints, ids and per-vendor quirks (how thinking is
turned off, which max-tokens field a server takes) are data, checked once with
an error naming the file, the entry, the field and the fix, instead of being
guessed from a vendor's name at call time.

Names that are not in the registry (the `random` and `always-a` baselines)
are resolved through `register_factory`: another module registers a factory
under its name and `resolve_model` consults those first.
"""
from __future__ import annotations

import math
import re
import threading
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlsplit

from plugins.score.anthropic_api import DEFAULT_VERSION, MIN_THINKING_BUDGET, AnthropicClient
from plugins.score.client import (
    ANTHROPIC_REASONING_STYLES,
    MAX_TOKENS_FIELDS,
    REASONING_STYLES,
    BoundedModel,
    HTTPChatClient,
    OpenAIClient,
    RetryingModel,
)
from plugins.score.context import PROBES, ContextCheckedModel, Probe
from plugins.score.modelapi import Completion, FatalModelError, GenerateConfig, Message, ModelAPI

DEFAULT_REGISTRY = Path(__file__).resolve().parents[2] / "models.toml"
KINDS = ("http", "local")
# Which wire protocol an entry speaks: "openai" (POST <base_url>/chat/completions: OpenAI,
# Gemini's and Anthropic's compatibility layers, vLLM, SGLang, NIM, Ollama, LM Studio,
# llama.cpp) or "anthropic" (Anthropic's native Messages API, POST <base_url>/messages).
APIS = ("openai", "anthropic")
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


class RegistryError(ValueError):
    """A registry entry that cannot be used: names the file, the entry, the field and the fix."""


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry, validated. `kind = "local"` means: start the embedded server, no key."""

    name: str
    model_id: str
    base_url: str | None = None  # required for kind "http"; includes the /v1 prefix
    kind: str = "http"
    api_key_env: str | None = None  # None: the endpoint takes no key
    temperature: float = 0.0
    max_tokens: int = 4096
    reasoning: bool | None = None  # None: server default; False: ask for thinking off
    reasoning_style: str = "none"  # see plugins.score.client.REASONING_STYLES
    reasoning_effort_on: str = "medium"
    reasoning_effort_off: str = "none"
    max_tokens_field: str = "max_tokens"
    extra_body: Mapping[str, Any] = field(default_factory=dict, hash=False)
    timeout_connect_s: float = 10.0
    timeout_read_s: float = 300.0
    max_attempts: int = 4
    base_delay_s: float = 2.0
    max_delay_s: float = 60.0
    max_concurrency: int = 4
    api: str = "openai"  # see APIS
    api_key_header: str | None = None  # None: the API's own (Authorization: Bearer, or x-api-key)
    anthropic_version: str = DEFAULT_VERSION  # the anthropic-version header (api = "anthropic")
    thinking_budget_tokens: int | None = None  # Anthropic thinking budget, with reasoning = true
    context_tokens: int | None = None  # the model's context window, when the server does not say
    context_probe: str = "auto"  # "auto": ask the server for its window and tokenizer; "none"
    source: str = ""  # where the entry came from (file path or "--model-url")

    def generate_config(self, seed: int | None = None) -> GenerateConfig:
        """The settings recorded with every transcript of this model."""
        return GenerateConfig(
            temperature=self.temperature, max_tokens=self.max_tokens, reasoning=self.reasoning, seed=seed,
            thinking_budget_tokens=self.thinking_budget_tokens,
        )


# field name -> (accepted python types, description used in errors)
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "model_id": ((str,), "a non-empty string"),
    "base_url": ((str,), "an http(s) URL such as https://api.openai.com/v1"),
    "kind": ((str,), f"one of {', '.join(KINDS)}"),
    "api_key_env": ((str,), "the NAME of an environment variable (never the key itself)"),
    "temperature": ((int, float), "a number >= 0"),
    "max_tokens": ((int,), "a positive integer"),
    "reasoning": ((bool,), "true or false (leave it out for the server default)"),
    "reasoning_style": ((str,), f"one of {', '.join(REASONING_STYLES)} (api openai), "
                                f"{', '.join(ANTHROPIC_REASONING_STYLES)} (api anthropic)"),
    "reasoning_effort_on": ((str,), "a reasoning_effort value such as \"medium\""),
    "reasoning_effort_off": ((str,), "a reasoning_effort value such as \"none\" or \"minimal\""),
    "max_tokens_field": ((str,), f"one of {', '.join(MAX_TOKENS_FIELDS)}"),
    "extra_body": ((dict,), "a table of extra JSON fields sent with every request"),
    "timeout_connect_s": ((int, float), "a number of seconds > 0"),
    "timeout_read_s": ((int, float), "a number of seconds > 0"),
    "max_attempts": ((int,), "a positive integer"),
    "base_delay_s": ((int, float), "a number of seconds >= 0"),
    "max_delay_s": ((int, float), "a number of seconds >= 0"),
    "max_concurrency": ((int,), "a positive integer"),
    "api": ((str,), f"one of {', '.join(APIS)}"),
    "api_key_header": ((str,), "an HTTP header name such as x-api-key (Authorization sends 'Bearer <key>')"),
    "anthropic_version": ((str,), "an anthropic-version value such as \"2023-06-01\""),
    "thinking_budget_tokens": ((int,), f"an integer >= {MIN_THINKING_BUDGET} and below max_tokens"),
    "context_tokens": ((int,), "the model's context window in tokens, a positive integer"),
    "context_probe": ((str,), f"one of {', '.join(PROBES)}"),
}
_SPEC_FIELDS = {f.name for f in fields(ModelSpec)} - {"name", "source"}
assert set(_FIELD_TYPES) == _SPEC_FIELDS, "keep _FIELD_TYPES in step with ModelSpec"


def check_url(url: str, where: str) -> str:
    """An http(s) URL with a host; a full `/chat/completions` URL is cut back to its base."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RegistryError(
            f"{where}: base_url {url!r} is not an http(s) URL with a host; "
            "fix: give the API base including its version prefix, e.g. https://api.openai.com/v1"
        )
    if parts.query or parts.fragment:
        raise RegistryError(f"{where}: base_url {url!r} has a query or fragment; fix: remove it")
    base = url.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        base = base[: -len("/chat/completions")]
    return base


def _build_spec(name: str, entry: Mapping[str, Any], where: str, source: str) -> ModelSpec:
    unknown = sorted(set(entry) - _SPEC_FIELDS)
    if unknown:
        raise RegistryError(
            f"{where}: unknown field(s) {', '.join(unknown)}; "
            f"fix: remove or rename them (allowed: {', '.join(sorted(_SPEC_FIELDS))})"
        )
    for key, value in entry.items():
        types, desc = _FIELD_TYPES[key]
        bad_type = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if bad_type:
            raise RegistryError(f"{where}: field {key!r} is {value!r}; fix: make it {desc}")
    kind = entry.get("kind", "http")
    if kind not in KINDS:
        raise RegistryError(f"{where}: field 'kind' is {kind!r}; fix: make it one of {', '.join(KINDS)}")
    if not entry.get("model_id", "").strip():
        raise RegistryError(f"{where}: field 'model_id' is missing or empty; fix: add model_id = \"<vendor's id>\"")
    base_url = entry.get("base_url")
    if kind == "http":
        if base_url is None:
            raise RegistryError(f"{where}: field 'base_url' is missing; fix: add base_url = \"https://host/v1\"")
        base_url = check_url(base_url, where)
        if entry.get("api") == "anthropic" and base_url.endswith("/messages"):
            base_url = base_url[: -len("/messages")]  # the full endpoint given: cut back to its base
    elif base_url is not None or entry.get("api_key_env") is not None:
        raise RegistryError(
            f"{where}: kind \"local\" starts its own server and takes no base_url or api_key_env; fix: remove them"
        )
    env = entry.get("api_key_env")
    if env is not None and (not env or not env.replace("_", "").isalnum() or env[0].isdigit()):
        raise RegistryError(
            f"{where}: field 'api_key_env' is {env!r}; "
            f"fix: make it {_FIELD_TYPES['api_key_env'][1]}, e.g. OPENAI_API_KEY"
        )
    api = entry.get("api", "openai")
    if api not in APIS:
        raise RegistryError(f"{where}: field 'api' is {api!r}; fix: make it one of {', '.join(APIS)}")
    if kind == "local" and api != "openai":
        raise RegistryError(f"{where}: kind \"local\" speaks the OpenAI API; fix: remove api = {api!r}")
    for key in ("reasoning_style", "max_tokens_field"):
        allowed = ((REASONING_STYLES if api == "openai" else ANTHROPIC_REASONING_STYLES) if key == "reasoning_style"
                   else MAX_TOKENS_FIELDS if api == "openai" else ("max_tokens",))
        if key in entry and entry[key] not in allowed:
            raise RegistryError(f"{where}: field {key!r} is {entry[key]!r} for api {api!r}; "
                                f"fix: make it one of {', '.join(allowed)}")
    if "context_probe" in entry and entry["context_probe"] not in PROBES:
        raise RegistryError(f"{where}: field 'context_probe' is {entry['context_probe']!r}; "
                            f"fix: make it one of {', '.join(PROBES)}")
    header = entry.get("api_key_header")
    if header is not None and not _HEADER_NAME.fullmatch(header):
        raise RegistryError(f"{where}: field 'api_key_header' is {header!r}; fix: make it {_FIELD_TYPES['api_key_header'][1]}")
    if header is not None and env is None:
        raise RegistryError(f"{where}: field 'api_key_header' is set but there is no api_key_env; "
                            "fix: add api_key_env = \"NAME\" or remove api_key_header")
    thinking = entry.get("reasoning_style") == "anthropic_thinking" and entry.get("reasoning") is True
    budget = entry.get("thinking_budget_tokens")
    if budget is not None and entry.get("reasoning_style") != "anthropic_thinking":
        raise RegistryError(f"{where}: field 'thinking_budget_tokens' needs reasoning_style = \"anthropic_thinking\"; "
                            "fix: set it, or remove thinking_budget_tokens")
    if thinking:
        max_tokens = entry.get("max_tokens", 4096)
        if budget is None or not MIN_THINKING_BUDGET <= budget < max_tokens:
            raise RegistryError(f"{where}: field 'thinking_budget_tokens' is {budget!r}; fix: with reasoning = true, make "
                                f"it an integer >= {MIN_THINKING_BUDGET} and below max_tokens ({max_tokens})")
        if float(entry.get("temperature", 0.0)) != 1.0:
            raise RegistryError(f"{where}: field 'temperature' is {entry.get('temperature', 0.0)!r}, but Anthropic's "
                                "extended thinking takes only temperature 1; fix: temperature = 1.0")
    for key in ("max_tokens", "max_attempts", "max_concurrency", "context_tokens"):
        if key in entry and entry[key] < 1:
            raise RegistryError(f"{where}: field {key!r} is {entry[key]!r}; fix: make it a positive integer")
    for key in ("temperature", "base_delay_s", "max_delay_s", "timeout_connect_s", "timeout_read_s"):
        if key in entry:
            v = float(entry[key])
            strict = key.startswith("timeout")
            if not math.isfinite(v) or v < 0 or (strict and v == 0):
                raise RegistryError(f"{where}: field {key!r} is {entry[key]!r}; fix: make it {_FIELD_TYPES[key][1]}")
    values = dict(entry)
    values["base_url"] = base_url
    for key in ("temperature", "base_delay_s", "max_delay_s", "timeout_connect_s", "timeout_read_s"):
        if key in values:
            values[key] = float(values[key])
    if kind == "local":
        values["max_concurrency"] = 1  # llama-cpp-python serves one request at a time
    return ModelSpec(name=name, source=source, **values)


def load_registry(path: Path | str = DEFAULT_REGISTRY) -> dict[str, ModelSpec]:
    """Every `[models.NAME]` entry of a registry file, validated."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"{path}: registry file not found; fix: create it or pass the right path") from None
    except tomllib.TOMLDecodeError as e:
        raise RegistryError(f"{path}: not valid TOML ({e}); fix: correct the syntax") from None
    extra = sorted(set(data) - {"models"})
    if extra:
        raise RegistryError(
            f"{path}: unknown top-level key(s) {', '.join(extra)}; fix: put entries under [models.NAME]"
        )
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise RegistryError(f"{path}: no [models.NAME] entries; fix: add at least one")
    out: dict[str, ModelSpec] = {}
    for name, entry in models.items():
        where = f"{path}: [models.{name}]"
        if not isinstance(entry, dict):
            raise RegistryError(f"{where}: is not a table; fix: write it as [models.{name}] with fields below it")
        out[name] = _build_spec(name, entry, where, str(path))
    return out


def parse_settings(pairs: Sequence[str], where: str = "--model-set") -> dict[str, Any]:
    """`FIELD=VALUE` pairs as registry fields; VALUE is read as TOML (1.0, false,
    "max_completion_tokens", {top_p = 0.9}), and a bare word as a string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise RegistryError(f"{where} {pair!r}: not FIELD=VALUE; fix: e.g. {where} temperature=1.0")
        if name not in _SPEC_FIELDS or name in ("model_id", "base_url", "kind", "api_key_env"):
            settable = sorted(_SPEC_FIELDS - {"model_id", "base_url", "kind", "api_key_env"})
            raise RegistryError(f"{where} {pair!r}: {name!r} is not a setting; fix: use one of {', '.join(settable)} "
                                "(the URL, id and key variable have their own options)")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        out[name] = value
    return out


def spec_from_url(url: str, model_id: str, *, name: str | None = None, api_key_env: str | None = None,
                  **fields_: Any) -> ModelSpec:
    """A spec for `--model-url URL --model-id ID` (no registry entry); other fields as in
    models.toml, with the registry's defaults (`--model-set FIELD=VALUE`)."""
    entry: dict[str, Any] = {"base_url": url, "model_id": model_id, **fields_}
    if api_key_env is not None:
        entry["api_key_env"] = api_key_env
    label = name or model_id
    return _build_spec(label, entry, f"--model-url {url} --model-id {model_id}", "--model-url")


def with_settings(spec: ModelSpec, settings: Mapping[str, Any], where: str = "--model-set") -> ModelSpec:
    """A registry entry with some fields replaced, checked again as a whole."""
    if not settings:
        return spec
    entry = {f: getattr(spec, f) for f in _SPEC_FIELDS if getattr(spec, f) is not None}
    entry["extra_body"] = dict(spec.extra_body)
    entry.update(settings)
    if spec.kind == "local":
        entry.pop("base_url", None)
    return _build_spec(spec.name, entry, f"{spec.source}: [models.{spec.name}] with {where}", spec.source)


def _probe_for(client: HTTPChatClient) -> Callable[[], Probe]:
    """The context probe for a client: its base URL, its model id and its key headers."""
    return lambda: Probe(client.base_url, client.model_id, client.headers(client._api_key()), client._client())


def _context(model: ModelAPI, client: HTTPChatClient, spec: ModelSpec, context_tokens: int | None = None) -> ModelAPI:
    return ContextCheckedModel(model, context_tokens=spec.context_tokens or context_tokens, probe=spec.context_probe,
                               make_probe=_probe_for(client))


class LocalModel:
    """The embedded server, started on first use (so listing models starts nothing), stopped by `close`."""

    def __init__(self, spec: ModelSpec, log_dir: Path | None = None):
        from plugins.score.localserver import LocalServer, default_log_dir

        self.name = spec.name
        self.spec = spec
        self._server = LocalServer(log_dir or default_log_dir())
        self._inner: ModelAPI | None = None
        self._lock = threading.Lock()

    def _model(self) -> ModelAPI:
        with self._lock:
            if self._inner is None:
                self._server.start()
                client = OpenAIClient(
                    self.spec.name, self._server.base_url, self.spec.model_id, None,
                    self.spec.timeout_connect_s, self.spec.timeout_read_s,
                    reasoning_style=self.spec.reasoning_style, max_tokens_field=self.spec.max_tokens_field,
                    extra_body=dict(self.spec.extra_body),
                )
                # the window is the n_ctx we started the server with; the server counts the tokens
                self._inner = _context(_wrap(client, self.spec), client, self.spec, self._server.n_ctx)
            return self._inner

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        return self._model().generate(messages, config)

    def close(self) -> None:
        with self._lock:
            inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()  # type: ignore[attr-defined]
        self._server.stop()


def _wrap(client: HTTPChatClient, spec: ModelSpec) -> RetryingModel:
    """Retries outside, the concurrency bound inside: a slot is not held while backing off."""
    return RetryingModel(
        BoundedModel(client, spec.max_concurrency),
        max_attempts=spec.max_attempts, base_delay_s=spec.base_delay_s, max_delay_s=spec.max_delay_s,
    )


def make_client(spec: ModelSpec) -> HTTPChatClient:
    """One attempt per call, the protocol the entry's `api` names."""
    assert spec.base_url is not None
    if spec.api == "anthropic":
        return AnthropicClient(
            spec.name, spec.base_url, spec.model_id, spec.api_key_env, spec.timeout_connect_s, spec.timeout_read_s,
            anthropic_version=spec.anthropic_version, reasoning_style=spec.reasoning_style,
            extra_body=dict(spec.extra_body), api_key_header=spec.api_key_header,
        )
    return OpenAIClient(
        spec.name, spec.base_url, spec.model_id, spec.api_key_env, spec.timeout_connect_s, spec.timeout_read_s,
        reasoning_style=spec.reasoning_style, reasoning_effort_on=spec.reasoning_effort_on,
        reasoning_effort_off=spec.reasoning_effort_off, max_tokens_field=spec.max_tokens_field,
        extra_body=dict(spec.extra_body), api_key_header=spec.api_key_header,
    )


def make_model(spec: ModelSpec, *, log_dir: Path | None = None) -> ModelAPI:
    """The client for a spec: the context check outside, retries, the concurrency bound, one attempt.
    Close it with `.close()` when done.

    A missing key fails here, before any request, naming the variable.
    """
    if spec.kind == "local":
        return LocalModel(spec, log_dir)
    client = make_client(spec)
    client._api_key()  # raises FatalModelError naming the variable when it is unset
    return _context(_wrap(client, spec), client, spec)


# -- names that are not registry entries (baselines live in another module) --
_FACTORIES: dict[str, Callable[[], ModelAPI]] = {}


def register_factory(name: str, factory: Callable[[], ModelAPI]) -> None:
    """Let another module (e.g. plugins/score/baselines.py) provide a model by name."""
    if name in _FACTORIES and _FACTORIES[name] is not factory:
        raise ValueError(f"model name {name!r} is already registered by {_FACTORIES[name]!r}")
    _FACTORIES[name] = factory


def registered_names() -> list[str]:
    return sorted(_FACTORIES)


def resolve_model(name: str, registry: Mapping[str, ModelSpec] | None = None, *,
                  log_dir: Path | None = None) -> ModelAPI:
    """A registered factory first, then a registry entry; an unknown name lists what exists."""
    if name in _FACTORIES:
        return _FACTORIES[name]()
    registry = load_registry() if registry is None else registry
    if name in registry:
        return make_model(registry[name], log_dir=log_dir)
    known = sorted(set(registry) | set(_FACTORIES))
    raise FatalModelError(
        f"unknown model {name!r}; fix: use one of {', '.join(known)}, add [models.{name}] to models.toml, "
        "or pass --model-url and --model-id"
    )
