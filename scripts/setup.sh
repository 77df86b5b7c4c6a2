#!/usr/bin/env bash
# Create .venv, install AgentOS's pinned dependencies (torch's CPU build first) and the project itself,
# editable, so that .venv/bin/agentos exists and `import core` works from any folder.
# Idempotent: a second run with unchanged requirements.txt and pyproject.toml only checks the stamps.
# AGENTOS_SETUP_APT=0 leaves the Debian packages of the tests (PostgreSQL, Chromium) alone.
#   --model-server   also what the real-model tests start: llama.cpp's llama-server and SmolLM2's weights
#                    (scripts/setup_model_server.sh; built once per machine, then cached)
set -euo pipefail
cd "$(dirname "$0")/.."
model_server=0
for arg in "$@"; do
    case "$arg" in
        --model-server) model_server=1 ;;
        *) echo "setup: unknown option $arg (known: --model-server)" >&2; exit 2 ;;
    esac
done
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $PYTHON" >&2
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.agentos-requirements
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing dependencies (about a minute the first time)" >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    # torch first and alone: sentence-transformers would otherwise pull a multi-GB CUDA build.
    # Where the CPU wheel is not provided locally, TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
    # fetches it from PyTorch's own index instead.
    .venv/bin/python -m pip install --quiet ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} \
        "$(grep -E '^torch==' requirements.txt)"
    .venv/bin/python -m pip install --quiet -r requirements.txt
    echo "$want" > "$stamp"
fi
# The project, editable (its code stays in this checkout): the agentos command and `import core` anywhere.
# Done again when pyproject.toml (its entry points, package data) or the checkout's place changes.
project_stamp=.venv/.agentos-project
want_project="$(sha256sum pyproject.toml | cut -d' ' -f1) $(pwd -P)"
if [ "$(cat "$project_stamp" 2>/dev/null)" != "$want_project" ] || [ ! -x .venv/bin/agentos ]; then
    echo "setup: installing agentos into .venv (editable)" >&2
    # (setuptools warns on every editable install that a folder named core in the working folder would win)
    PYTHONWARNINGS=ignore .venv/bin/python -m pip install --quiet --no-deps -e .
    echo "$want_project" > "$project_stamp"
fi
if [ "${AGENTOS_SETUP_APT:-1}" != 0 ]; then
    # Debian packages the tests drive: installed where missing (needs root and apt-get), else those tests skip.
    apt_install() {  # package, what it is for
        if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
            echo "setup: $1 is not installed (installing it needs root and apt-get): $2 will be skipped" >&2
            return
        fi
        echo "setup: installing $1 for $2" >&2
        for try in 1 2 3 4 5 6; do  # another apt-get may hold the dpkg lock for a while
            if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null; then
                return
            fi
            sleep 10
        done
        echo "setup: installing $1 failed: $2 will be skipped" >&2
    }
    # A PostgreSQL server for the tests of storage.backend postgres (they start their own cluster from it).
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
        apt_install postgresql "the PostgreSQL tests"
    fi
    # The browser tests drive Debian's Chromium through Playwright (which cannot download its own browsers here).
    if [ ! -x /usr/bin/chromium ]; then
        apt_install chromium "the browser tests"
    fi
    # What the real model server's build needs (scripts/setup_model_server.sh), with the test command only.
    if [ "$model_server" = 1 ] && ! command -v cmake >/dev/null 2>&1; then
        apt_install cmake "the build of the real model server"
    fi
    if [ "$model_server" = 1 ] && ! command -v g++ >/dev/null 2>&1 && ! command -v c++ >/dev/null 2>&1; then
        apt_install g++ "the build of the real model server"
    fi
fi
# The real model server of the slow tests (tests/llama_server.py), with the test command only.
if [ "$model_server" = 1 ]; then
    ./scripts/setup_model_server.sh
fi
