"""A small Ollama-compatible HTTP server on 127.0.0.1 that tests start and script.

Tests talk to it with the real ``ollama`` client (through the engine), so the
wire format, tool-call parsing and error mapping are exercised for real::

    with ScriptedOllama() as server:
        server.enqueue(tool_call("save_fact", key="api_key", value="12345", category="secret"))
        server.enqueue("Saved.")
        ... run the engine with OLLAMA_HOST=server.host ...
        assert "12345" not in server.chat_requests[0]["messages"][0]["content"]

Replies are taken from a queue in order; each one may be a text, a
:func:`tool_call` reply, an :class:`Error`, a :class:`Block` (the request waits
until the test releases it or kills the client), :func:`raw` JSON, or a
callable that builds the reply from the request. Every request is recorded.
Endpoints: ``/api/chat`` (stream and non-stream), ``/api/tags``, ``/api/show``,
``/api/embed``, ``/api/version``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

CREATED_AT = "2026-01-31T12:00:00.000000Z"
EMBED_DIM = 64


@dataclass
class Error:
    """Answer with an HTTP error, as Ollama does: ``{"error": message}``."""

    status: int
    message: str


@dataclass
class Block:
    """Hold the request open until :meth:`release` (or the server stops); then answer ``then``."""

    then: Any = "released"
    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.gate.set()


@dataclass
class Raw:
    """Send this exact assistant ``message`` object (e.g. tool arguments as a broken string)."""

    message: dict[str, Any]


def tool_call(name: str, /, **arguments: Any) -> dict[str, Any]:
    """A reply in which the model calls one tool (every keyword is an argument of the tool)."""
    return {"content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "") -> dict[str, Any]:
    """A reply with several tool calls, given as ``(name, arguments)`` pairs."""
    return {"content": content,
            "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls]}


def raw(message: dict[str, Any]) -> Raw:
    """A reply whose message is sent verbatim, bypassing any checks."""
    return Raw(message)


def embed_text(text: str) -> list[float]:
    """A unit bag-of-words vector (hashing trick): texts sharing words are close; a constant slot keeps it non-zero."""
    vector = [0.0] * EMBED_DIM
    vector[0] = 0.5
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[1 + hashlib.sha256(word.encode()).digest()[0] % (EMBED_DIM - 1)] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class ScriptedOllama:
    """The server: start it, enqueue replies, run the code under test, read ``requests``."""

    def __init__(self, models: tuple[str, ...] = ("llama3.1",), default: Any = None) -> None:
        self.models = set(models)
        self.default = default
        """Reply when the queue is empty; ``None`` answers HTTP 500 'script exhausted'."""
        self.replies: deque[Any] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        """``http://127.0.0.1:<port>``, the value for ``OLLAMA_HOST``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of every ``/api/chat`` request, in arrival order."""
        with self._lock:
            return [body for path, body in self.requests if path == "/api/chat"]

    def system_prompts(self) -> list[str]:
        """The system message of every chat request."""
        return [m["content"] for r in self.chat_requests for m in r["messages"][:1] if m["role"] == "system"]

    def enqueue(self, *replies: Any) -> None:
        """Add replies to the end of the queue."""
        with self._lock:
            self.replies.extend(replies)

    def pending(self) -> int:
        """Replies not yet used."""
        with self._lock:
            return len(self.replies)

    def start(self) -> "ScriptedOllama":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        for reply in list(self.replies):
            if isinstance(reply, Block):
                reply.release()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ScriptedOllama":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def next_reply(self, path: str, body: dict[str, Any]) -> Any:
        with self._lock:
            self.requests.append((path, body))
            if self.replies:
                return self.replies.popleft()
            return self.default

    def wait_released(self, block: Block) -> Any:
        block.entered.set()
        while not block.gate.wait(0.05):
            if self._stopping.is_set():
                break
        return block.then


def _handler_for(server: ScriptedOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path == "/api/tags":
                self._json(200, {"models": [_model_entry(m) for m in sorted(server.models)]})
            elif self.path == "/api/version":
                self._json(200, {"version": "0.0.0-test"})
            else:
                self._json(404, {"error": "not found"})

        def do_HEAD(self) -> None:
            self._json(200, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/api/chat":
                self._chat(body)
            elif self.path == "/api/show":
                self._known_model(body, lambda: {"modelfile": "", "parameters": "", "template": "",
                                                 "details": {"family": "test"}, "model_info": {},
                                                 "capabilities": ["completion", "tools"]})
            elif self.path == "/api/embed":
                texts = body.get("input")
                texts = [texts] if isinstance(texts, str) else list(texts or [])
                server.record(self.path, body)
                self._known_model(body, lambda: {"model": body.get("model"),
                                                 "embeddings": [embed_text(t) for t in texts]})
            else:
                self._json(404, {"error": f"unknown endpoint {self.path}"})

        def _known_model(self, body: dict[str, Any], build: Callable[[], dict[str, Any]]) -> None:
            name = str(body.get("model") or body.get("name") or "")
            if name.split(":")[0] not in server.models:
                self._json(404, {"error": f'model "{name}" not found, try pulling it first'})
            else:
                self._json(200, build())

        def _chat(self, body: dict[str, Any]) -> None:
            model = str(body.get("model") or "")
            if model.split(":")[0] not in server.models:
                server.record("/api/chat", body)
                self._json(404, {"error": f'model "{model}" not found, try pulling it first'})
                return
            reply = server.next_reply("/api/chat", body)
            while isinstance(reply, Block):
                reply = server.wait_released(reply)
            if callable(reply):
                reply = reply(body)
            if reply is None:
                self._json(500, {"error": "script exhausted: the test enqueued no reply for this request"})
            elif isinstance(reply, Error):
                self._json(reply.status, {"error": reply.message})
            else:
                message = _message(reply)
                if body.get("stream", True):
                    self._stream(model, message)
                else:
                    self._json(200, _response(model, message, done=True))

        def _stream(self, model: str, message: dict[str, Any]) -> None:
            text = message.get("content") or ""
            parts = [_response(model, {"role": "assistant", "content": text[i:i + 8]}, done=False)
                     for i in range(0, len(text), 8)]
            final = dict(message, content="")
            parts.append(_response(model, final, done=True))
            data = b"".join(json.dumps(p).encode() + b"\n" for p in parts)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client was killed while waiting: nothing left to answer

    return Handler


def _message(reply: Any) -> dict[str, Any]:
    if isinstance(reply, Raw):
        return dict({"role": "assistant"}, **reply.message)
    if isinstance(reply, str):
        return {"role": "assistant", "content": reply}
    return dict({"role": "assistant", "content": ""}, **reply)


def _response(model: str, message: dict[str, Any], done: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {"model": model, "created_at": CREATED_AT, "message": message, "done": done}
    if done:
        payload.update(done_reason="stop", prompt_eval_count=10, eval_count=5,
                       total_duration=1000, eval_duration=500)
    return payload


def _model_entry(name: str) -> dict[str, Any]:
    return {"name": f"{name}:latest", "model": f"{name}:latest", "modified_at": CREATED_AT,
            "size": 1, "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {"format": "gguf", "family": "test"}}
