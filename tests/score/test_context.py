"""The context check: each server's own report of its window and tokenizer (loopback stand-ins
in the servers' shapes), the conservative estimate, and an item that cannot fit omitted before
any request while the run goes on. The `local_model` test holds the estimate against SmolLM2's
real tokenizer on every committed prompt."""
from __future__ import annotations

import json

import pytest

from loopback import FaultServer
from plugins.score.context import (
    ESTIMATE_BYTES_PER_TOKEN,
    ContextCheckedModel,
    Probe,
    estimate_tokens,
    server_root,
)
from plugins.score.modelapi import ContextOverflowError, GenerateConfig, Message
from plugins.score.registry import RegistryError, load_registry, make_model, spec_from_url

MODEL = "fixture/model-id"
SHORT = [Message("user", "Which is fastest? Answer: A, B, C or D.")]
LONG = [Message("user", "x" * 40_000)]


def model(srv: FaultServer, **fields):
    return make_model(spec_from_url(srv.url, MODEL, name="fixture-model", max_attempts=1, **fields))


def cfg(max_tokens: int = 100) -> GenerateConfig:
    return GenerateConfig(temperature=0.0, max_tokens=max_tokens)


def _n(text: str) -> int:
    return max(1, len(text) // 4)  # a stand-in tokenizer: one token per 4 characters


def llamacpp_tokenize(request) -> dict | tuple:
    body = json.loads(request["body"])  # llama.cpp: {"content": ...} -> {"tokens": [...]}
    return {"tokens": list(range(_n(body["content"])))} if "content" in body else (400, {"error": "content"})


def vllm_tokenize(request) -> dict | tuple:
    body = json.loads(request["body"])  # vLLM: {"model", "messages"} -> {"count", "max_model_len", "tokens"}
    if "messages" not in body:
        return 400, {"error": "messages"}
    n = _n("".join(m["content"] for m in body["messages"]))
    return {"count": n, "max_model_len": 8192, "tokens": list(range(n))}


LLAMACPP = {"GET /props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1},
            "POST /apply-template": lambda r: {"prompt": "<|im_start|>user\n" + json.loads(r["body"])["messages"][0]["content"]},
            "POST /tokenize": llamacpp_tokenize}
VLLM = {"GET /v1/models": {"object": "list", "data": [{"id": MODEL, "object": "model", "max_model_len": 8192}]},
        "POST /tokenize": vllm_tokenize}
LMSTUDIO = {f"GET /api/v0/models/{MODEL.replace('/', '%2F')}": {"id": MODEL, "state": "loaded",
                                                                  "max_context_length": 131072,
                                                                  "loaded_context_length": 4096}}


def ollama(loaded_ctx: int | None = 4096, num_ctx: int | None = None):
    state = {"loaded": False}

    def ps(_):
        if state["loaded"] and loaded_ctx:
            return {"models": [{"name": MODEL, "model": MODEL, "context_length": loaded_ctx}]}
        return {"models": []}

    def generate(_):
        state["loaded"] = True
        return {"model": MODEL, "done": True, "done_reason": "load"}

    params = f"temperature 0.7\nnum_ctx {num_ctx}\n" if num_ctx else "temperature 0.7\n"
    return {"GET /api/version": {"version": "0.13.0"}, "GET /api/ps": ps, "POST /api/generate": generate,
            "POST /api/show": {"parameters": params, "model_info": {"llama.context_length": 131072}}}


@pytest.mark.parametrize("native,tokens,source,counted", [
    (LLAMACPP, 4096, "llama.cpp /props n_ctx", "llama.cpp /apply-template + /tokenize"),
    (VLLM, 8192, "max_model_len", "/tokenize with its chat template"),
    (ollama(), 4096, "Ollama /api/ps", "estimated"),
    (ollama(loaded_ctx=None, num_ctx=2048), 2048, "Ollama /api/show num_ctx", "estimated"),
    (LMSTUDIO, 4096, "LM Studio", "estimated"),
], ids=["llama.cpp", "vllm", "ollama-ps", "ollama-num_ctx", "lmstudio"])
def test_each_server_reports_its_window_and_an_item_too_long_is_omitted_before_asking(native, tokens, source, counted):
    with FaultServer(["good"], native=native) as srv:
        m = model(srv)
        window, _ = m.resolve()
        assert window.tokens == tokens and source in window.source
        with pytest.raises(ContextOverflowError) as info:
            m.generate(LONG, cfg())
        assert srv.requests == []  # omitted before any chat request
        msg = str(info.value)
        assert f"context window of {tokens} tokens" in msg and counted in msg and "max_tokens 100" in msg
        assert m.generate(SHORT, cfg()).text == "Answer: B"  # the run goes on: the next item is asked
        assert len(srv.requests) == 1
        m.close()


def test_the_answer_budget_must_fit_too():
    with FaultServer(["good"], native=VLLM) as srv:
        m = model(srv)
        n = m.check(SHORT, cfg()).tokens
        with pytest.raises(ContextOverflowError, match=r"plus max_tokens 8192"):
            m.generate(SHORT, cfg(8192))  # prompt + budget > 8192
        assert m.check(SHORT, cfg(8192 - n)).tokens == n  # exactly full: fits
        m.close()


def test_registry_window_wins_and_no_probe_means_estimate():
    with FaultServer(["good"], native=LLAMACPP) as srv:
        m = model(srv, context_tokens=1000, context_probe="none")
        window, counter = m.resolve()
        assert (window.tokens, window.source, counter) == (1000, "the registry's context_tokens", None)
        with pytest.raises(ContextOverflowError, match="estimated from 40000 bytes"):
            m.generate(LONG, cfg())
        assert srv.native_requests == []  # "none": nothing asked
        m.close()


def test_unknown_window_checks_nothing_and_says_so(caplog):
    with FaultServer(["good"]) as srv:  # answers chat only: every native endpoint is a 404
        m = model(srv)
        assert m.generate(LONG, cfg()).text == "Answer: B"
        assert "prompts are not checked" in caplog.text and "context_tokens" in caplog.text
        m.close()


def test_estimate_is_stated_and_rounds_up():
    c = estimate_tokens([Message("user", "é" * 5)])  # 10 bytes of UTF-8
    assert c.tokens == -(-10 // ESTIMATE_BYTES_PER_TOKEN) + 16 and "10 bytes" in c.how
    d = estimate_tokens([Message("user", "1234 ab")])  # digits count one token each
    assert d.tokens == 4 + -(-3 // ESTIMATE_BYTES_PER_TOKEN) + 16 and "4 digits" in d.how


def test_server_root():
    assert server_root("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434"
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("https://api.x/v1beta/openai") == "https://api.x/v1beta/openai"


@pytest.mark.parametrize("field,value,needle", [
    ("context_tokens", 0, "positive integer"),
    ("context_probe", "sometimes", "auto, none"),
])
def test_context_fields_are_checked(field, value, needle):
    with pytest.raises(RegistryError, match=needle):
        spec_from_url("http://127.0.0.1:9/v1", MODEL, **{field: value})


def test_probe_ignores_unexpected_shapes():
    weird = {"GET /props": {"default_generation_settings": "n/a"}, "GET /v1/models": {"data": [{"id": MODEL}]},
             "GET /api/version": ["not", "a", "dict"]}
    with FaultServer([], native=weird) as srv:
        import httpx

        with httpx.Client() as http:
            assert Probe(srv.url, MODEL, {}, http).window() is None


# -- the estimate against a real tokenizer ------------------------------------------


@pytest.mark.local_model
def test_estimate_is_above_smollm2s_count_on_every_committed_prompt():
    """The estimate is conservative: never fewer tokens than SmolLM2's tokenizer counts, with its
    chat template, on any prompt of either set (every condition that renders without a slip)."""
    from pathlib import Path

    from plugins.items.build import build_items
    from plugins.score.localserver import find_model_file, llama_cpp_installed

    if not llama_cpp_installed():
        pytest.skip("llama-cpp-python is not installed; run scripts/install-local-model.sh")
    import llama_cpp

    llm = llama_cpp.Llama(str(find_model_file()), vocab_only=True, verbose=False)
    root = Path(__file__).resolve().parents[2]
    items, _ = build_items(root / "families", "h200", allow_intended=True, sets=None)
    assert items
    ratios = []
    for it in items:
        templated = f"<|im_start|>user\n{it.prompt}<|im_end|>\n<|im_start|>assistant\n"
        real = len(llm.tokenize(templated.encode(), add_bos=True, special=True))
        est = estimate_tokens([Message("user", it.prompt)]).tokens
        assert est >= real, (it.id, est, real)
        ratios.append(len(it.prompt.encode()) / real)
    assert min(ratios) > ESTIMATE_BYTES_PER_TOKEN  # every prompt packs more bytes per token than assumed
