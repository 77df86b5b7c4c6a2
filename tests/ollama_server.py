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
A tool call written as JSON in the reply text (as small local models do) is
just a text reply: ``server.enqueue('{"name": "save_fact", "arguments": {...}}')``.

A request with ``format`` (``"json"`` or a JSON schema) is answered as Ollama's constrained
decoding answers it: a scripted text that is not JSON is put in the shape (the schema's one
string property, or ``{"response": text}``). :func:`verbatim` sends a text as it is, for the
replies small models give when the shape is not enforced (fenced JSON, prose around JSON,
``<think>`` blocks, the schema echoed back; :func:`echo_schema` builds the last). Each
request's ``format`` is recorded in :attr:`Prompt.format`.
Endpoints: ``/api/chat`` (stream and non-stream), ``/api/tags``, ``/api/show``,
``/api/embed``, ``/api/version``.

The context window behaves like Ollama's:

- a request runs with ``options.num_ctx``; without it, with the Modelfile's
  ``num_ctx`` if the model has one, else Ollama's default of 4096 tokens; a value
  above the model's ``context_length`` is lowered to it;
- a prompt over the window loses its oldest non-system messages first (the last
  message is always kept); if the system messages and the last message alone
  are still too long, the rendered prompt's beginning is cut;
- the kept prompt is rendered as Ollama's qwen2.5 template renders a chat: every
  system message (wherever it stands) joined at the top, the tool definitions
  right after them with the template's instructions, then the other messages in
  order, consecutive messages of one role merged as Ollama collates them, tool
  results as ``<tool_response>`` user turns (:func:`render`);
- one prompt cache per model, as Ollama's runner keeps one KV cache a slot: a
  request re-evaluates only the tokens after the prefix its rendering shares with
  the model's previous one (at least one); ``prompt_eval_count`` is that number,
  as Ollama reports it, ``eval_count`` the reply's; what was kept and how much of
  it came from the cache is recorded in :attr:`ScriptedOllama.prompts`;
- ``/api/show`` reports ``model_info["<arch>.context_length"]`` and, when the
  Modelfile sets it, ``num_ctx`` in ``parameters``.

Tokens are counted by :func:`tokenize`, a deterministic word-piece tokenizer
(about 3.5 characters per token on English prose, fewer on JSON), deliberately
not the four characters per token an engine would guess.
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

from tests import openai_api

CREATED_AT = "2026-01-31T12:00:00.000000Z"
EMBED_DIM = 64
OLLAMA_DEFAULT_NUM_CTX = 4096
"""What Ollama runs a model with when neither the request nor the Modelfile sets ``num_ctx``."""
MESSAGE_OVERHEAD_TOKENS = 5
"""Tokens the chat template adds around each message (role header and end-of-turn markers)."""
PROMPT_OVERHEAD_TOKENS = 5
"""Tokens the template adds once (begin-of-text and the assistant header that starts the reply)."""
STREAM_CHUNK_CHARS = 8
OPENAI_CHAT = "/v1/chat/completions"
CHAT_PATHS = ("/api/chat", OPENAI_CHAT)

_TOKEN = re.compile(r"\s*<\|im_(?:start|end)\|>|\s*\w{1,4}|\s*[^\w\s]|\s+")
"""Word pieces and punctuation; the chat template's markers are one token each, as in a real vocabulary."""


def tokenize(text: str) -> list[str]:
    """Split ``text`` into tokens: word pieces of up to four characters (with their leading
    whitespace), each punctuation mark, trailing whitespace. Lossless: ``"".join(tokenize(t)) == t``."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    """How many tokens :func:`tokenize` makes of ``text``."""
    return len(_TOKEN.findall(text))


@dataclass
class Prompt:
    """What one ``/api/chat`` request put in front of the model, after the window was applied."""

    num_ctx: int
    """The window the request ran with."""
    messages: list[dict[str, Any]]
    """The messages the model saw (a cut message holds only its kept end)."""
    tokens: int
    """Tokens kept: the whole prompt the model ran on."""
    full_tokens: int
    """Tokens of the whole prompt as sent."""
    dropped_messages: int
    """Oldest non-system messages left out."""
    cut_tokens: int
    """Tokens cut from the beginning of what remained."""
    tools: bool
    """The request offered tools (a planner call; summarizer calls offer none)."""
    options: dict[str, Any]
    keep_alive: Any
    rendered: str = ""
    """The kept prompt as the chat template renders it (see :func:`render`)."""
    format: Any = None
    """The request's ``format``: ``"json"``, a JSON schema, or None."""
    cached_tokens: int = 0
    """Leading tokens of :attr:`rendered` shared with the model's previous prompt: not evaluated again."""
    rendered_tokens: int = 0
    """Tokens of :attr:`rendered`, the count :attr:`cached_tokens` is part of (the template's markers
    make it differ a little from :attr:`tokens`, the window's reckoning)."""

    @property
    def evaluated(self) -> int:
        """Tokens evaluated for this request, the ``prompt_eval_count`` reported: the rendering's tokens
        after the part shared with the previous prompt (both counted on the same rendering)."""
        return max(1, self.rendered_tokens - self.cached_tokens)

    @property
    def cached_share(self) -> float:
        """Share of the rendered prompt taken from the cache."""
        return self.cached_tokens / self.rendered_tokens if self.rendered_tokens else 0.0

    @property
    def truncated(self) -> bool:
        """The model did not see the whole prompt."""
        return self.dropped_messages > 0 or self.cut_tokens > 0

    @property
    def text(self) -> str:
        """Everything the model saw, the messages' contents joined by blank lines."""
        return "\n\n".join(_content_text(m) for m in self.messages)


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


@dataclass
class Verbatim:
    """Send this reply text as it is, even to a request with ``format`` (an unconstrained model)."""

    text: str


def verbatim(text: str) -> Verbatim:
    """A reply text sent unchanged whatever the request's ``format``."""
    return Verbatim(text)


def echo_schema(body: dict[str, Any]) -> Verbatim:
    """The reply of a small model that answers a schema with the schema itself (use as a queued reply)."""
    return Verbatim(json.dumps(body.get("format")))


def shaped(text: str, form: Any) -> str:
    """``text`` as Ollama's constrained decoding returns it for ``format`` ``form``: unchanged if it is
    already JSON, else in the schema's one string property (``{"response": text}`` for ``"json"``)."""
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    names = [name for name, prop in ((form or {}).get("properties") or {}).items()
             if prop.get("type") == "string"] if isinstance(form, dict) else []
    return json.dumps({names[0] if names else "response": text})


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
    """A unit bag-of-words vector (hashing trick): texts sharing words are close; a constant slot keeps it
    non-zero."""
    vector = [0.0] * EMBED_DIM
    vector[0] = 0.5
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[1 + hashlib.sha256(word.encode()).digest()[0] % (EMBED_DIM - 1)] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class ScriptedOllama:
    """The server: start it, enqueue replies, run the code under test, read ``requests``."""

    def __init__(self, models: tuple[str, ...] = ("llama3.1",), default: Any = None, *,
                 context_length: int = 131072, modelfile_num_ctx: int | None = None,
                 architecture: str = "llama", n_ctx: int | None = None, flavour: str = "llamacpp",
                 overflow: str = "refuse", apis: tuple[str, ...] = ("ollama", "openai"),
                 response_format: bool = True, api_key: str = "") -> None:
        self.models = set(models)
        self.apis = apis
        """The APIs it answers: ``ollama`` (``/api/*``) and ``openai`` (``/v1/*``, ``/props``); llama-server's
        is ``("openai",)``."""
        self.default = default
        """Reply when the queue is empty; ``None`` answers HTTP 500 'script exhausted'."""
        self.context_length = context_length
        """The model's trained context length, as ``/api/show`` reports it."""
        self.modelfile_num_ctx = modelfile_num_ctx
        """A ``PARAMETER num_ctx`` of the Modelfile, if any: the window when a request sends none."""
        self.architecture = architecture
        self.n_ctx = n_ctx or context_length
        """The window of the OpenAI face (a server's ``--ctx-size``), whatever a request says."""
        self.flavour = flavour
        """How the OpenAI face tells its window: ``llamacpp`` (``/props``), ``vllm`` (``max_model_len``),
        ``lmstudio`` (``/api/v0/models``) or ``plain`` (it does not)."""
        self.overflow = overflow
        """What the OpenAI face does with a prompt over its window: ``refuse`` (llama-server) or
        ``truncate``."""
        self.response_format = response_format
        """Whether the OpenAI face takes ``response_format`` (else: HTTP 400, as a server without schemas)."""
        self.api_key = api_key
        """The key the OpenAI face wants as ``Authorization: Bearer <key>`` (as ``llama-server --api-key``:
        HTTP 401 without it, except for ``/v1/models`` and ``/health``); empty: none."""
        self.generated: list[int] = []
        """The tokens of each reply sent (a reply cut at ``max_tokens`` / ``num_predict`` counts as cut)."""
        self.refused: list[Prompt] = []
        """Prompts the OpenAI face refused as too long for its window."""
        self.summarizer: Callable[[str], str] | None = None
        """If set, answers every chat request that offers no tools (summarizer calls) from the text the
        model kept, without taking a reply from the queue."""
        self.replies: deque[Any] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.prompts: list[Prompt] = []
        """One entry per answered ``/api/chat`` request: what the model saw."""
        self._cache: dict[str, tuple[int, list[str]]] = {}
        """Per model: the window and the tokens of the previous prompt (Ollama's KV cache, one slot)."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def forget_requests(self) -> None:
        """Drop what was recorded so far (a long torture run embeds hundreds of thousands of texts), and
        stay quiet about clients killed in the middle of a request, as the torture campaigns kill them."""
        with self._lock:
            self.requests.clear()
            self.prompts.clear()
        self._httpd.handle_error = lambda request, client_address: None

    @property
    def host(self) -> str:
        """``http://127.0.0.1:<port>``, the value for ``OLLAMA_HOST``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of every ``/api/chat`` request, in arrival order."""
        with self._lock:
            return [body for path, body in self.requests if path in CHAT_PATHS]

    @property
    def truncated(self) -> list[Prompt]:
        """The chat requests of which the model saw only a part."""
        with self._lock:
            return [p for p in self.prompts if p.truncated]

    def planner_prompts(self) -> list[Prompt]:
        """The chat requests that offered tools."""
        with self._lock:
            return [p for p in self.prompts if p.tools]

    def summarizer_prompts(self) -> list[Prompt]:
        """The chat requests that offered no tools."""
        with self._lock:
            return [p for p in self.prompts if not p.tools]

    def window_of(self, body: dict[str, Any]) -> int:
        """The ``num_ctx`` a request runs with, as Ollama chooses it."""
        requested = (body.get("options") or {}).get("num_ctx")
        num_ctx = int(requested or self.modelfile_num_ctx or OLLAMA_DEFAULT_NUM_CTX)
        return min(num_ctx, self.context_length) if self.context_length else num_ctx

    def show(self) -> dict[str, Any]:
        """The ``/api/show`` answer."""
        parameters = 'stop "<|eot_id|>"'
        modelfile = "FROM /models/test.gguf\n"
        if self.modelfile_num_ctx:
            parameters = f"num_ctx {self.modelfile_num_ctx}\n{parameters}"
            modelfile += f"PARAMETER num_ctx {self.modelfile_num_ctx}\n"
        return {"modelfile": modelfile, "parameters": parameters, "template": "{{ .Prompt }}",
                "details": {"family": self.architecture, "format": "gguf"},
                "model_info": {"general.architecture": self.architecture,
                               f"{self.architecture}.context_length": self.context_length},
                "capabilities": ["completion", "tools"]}

    def rendered_prompts(self, tools_only: bool = True) -> list[str]:
        """The rendered text of each planner prompt (every answered prompt with ``tools_only=False``)."""
        with self._lock:
            return [p.rendered for p in self.prompts if p.tools or not tools_only]

    def reuse(self, model: str, prompt: Prompt) -> None:
        """Set ``prompt.cached_tokens`` from the model's previous prompt and keep this one in its place."""
        pieces = tokenize(prompt.rendered)
        with self._lock:
            num_ctx, previous = self._cache.get(model.split(":")[0], (0, []))
            shared = 0
            if num_ctx == prompt.num_ctx:  # another num_ctx reloads the model: its cache is gone
                for mine, theirs in zip(pieces, previous):
                    if mine != theirs:
                        break
                    shared += 1
            self._cache[model.split(":")[0]] = (prompt.num_ctx, pieces)
        # A cut prompt fills the window, though its rendering leaves out the tool definitions cut with it.
        prompt.rendered_tokens = max(len(pieces), prompt.tokens) if prompt.cut_tokens else len(pieces)
        prompt.cached_tokens = min(shared, max(0, len(pieces) - 1))

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

    def next_reply(self, path: str, body: dict[str, Any], prompt: Prompt | None = None) -> Any:
        with self._lock:
            self.requests.append((path, body))
            if prompt is not None:
                self.prompts.append(prompt)
            if prompt is not None and not prompt.tools and self.summarizer is not None:
                summarizer = self.summarizer
                return lambda _body: summarizer(prompt.text)
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
            if not self._answers():
                self._json(404, openai_api.error(404, f"File Not Found: {self.path}"))
            elif not self._authorized():
                self._json(401, openai_api.error(401, "Invalid API Key", "authentication_error"))
            elif self.path == "/v1/models":
                self._json(200, openai_api.models(server))
            elif self.path == "/props" and openai_api.props(server) is not None:
                self._json(200, openai_api.props(server))
            elif self.path.startswith("/api/v0/models/") and openai_api.studio_model(server, self.path[15:]):
                self._json(200, openai_api.studio_model(server, self.path[15:]))
            elif self.path == "/api/tags":
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
            if not self._answers():
                server.record(self.path, body)
                self._json(404, openai_api.error(404, f"File Not Found: {self.path}"))
            elif not self._authorized():
                server.record(self.path, body)
                self._json(401, openai_api.error(401, "Invalid API Key", "authentication_error"))
            elif self.path == "/api/chat":
                self._chat(body)
            elif self.path == OPENAI_CHAT:
                self._openai_chat(body)
            elif self.path == "/api/show":
                server.record(self.path, body)
                self._known_model(body, server.show)
            elif self.path == "/api/embed":
                texts = body.get("input")
                texts = [texts] if isinstance(texts, str) else list(texts or [])
                server.record(self.path, body)
                self._known_model(body, lambda: {"model": body.get("model"),
                                                 "embeddings": [embed_text(t) for t in texts]})
            else:
                self._json(404, {"error": f"unknown endpoint {self.path}"})

        def _answers(self) -> bool:
            """Whether the path belongs to an API the server answers."""
            return ("openai" if self.path.startswith(("/v1/", "/props",
                                                      "/api/v0/")) else "ollama") in server.apis

        def _authorized(self) -> bool:
            """Whether the request may pass ``--api-key``: it carries the key, or needs none."""
            if not server.api_key or not self.path.startswith(("/v1/", "/props", "/api/v0/")) \
                    or self.path in ("/v1/models", "/v1/health"):
                return True
            return self.headers.get("Authorization") == f"Bearer {server.api_key}"

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
            prompt = fit_window(body, server.window_of(body))
            server.reuse(model, prompt)
            reply = self._resolve(server.next_reply("/api/chat", body, prompt), body)
            if reply is None:
                self._json(500, {"error": "script exhausted: the test enqueued no reply for this request"})
            elif isinstance(reply, Error):
                self._json(reply.status, {"error": reply.message})
            else:
                message = capped(_message(reply), (body.get("options") or {}).get("num_predict"))
                counts = {"prompt_eval_count": prompt.evaluated, "eval_count": _reply_tokens(message)}
                server.generated.append(counts["eval_count"])
                if body.get("stream", True):
                    self._stream(model, message, counts)
                else:
                    self._json(200, _response(model, {k: v for k, v in message.items() if k != "cut"},
                                              done=True, counts=counts,
                                              reason="length" if message.get("cut") else "stop"))

        def _resolve(self, reply: Any, body: dict[str, Any]) -> Any:
            """The queued ``reply`` as it is sent: a Block waited for, a callable called, a text shaped."""
            while isinstance(reply, Block):
                reply = server.wait_released(reply)
            if callable(reply):
                reply = reply(body)
            if isinstance(reply, Verbatim):
                return reply.text
            if isinstance(reply, str) and body.get("format"):
                return shaped(reply, body["format"])
            return reply

        def _openai_chat(self, wire: dict[str, Any]) -> None:
            body = openai_api.internal(wire)
            model = str(body.get("model") or "")
            if model.split(":")[0] not in server.models:
                server.record(OPENAI_CHAT, body)
                self._json(404, openai_api.error(404, f"model '{model}' not found"))
                return
            if wire.get("response_format") and not server.response_format:
                server.record(OPENAI_CHAT, body)
                self._json(400,
                           openai_api.error(400, "Unrecognized request argument supplied: response_format"))
                return
            prompt = fit_window(body, server.n_ctx)
            if prompt.truncated and server.overflow == "refuse":
                server.record(OPENAI_CHAT, body)
                with server._lock:
                    server.refused.append(prompt)
                self._json(400, openai_api.error(400, f"request ({prompt.full_tokens} tokens) exceeds the "
                                                      f"available context size ({server.n_ctx} tokens), try "
                                                      "increasing it",
                                                 "exceed_context_size_error"))
                return
            server.reuse(model, prompt)
            reply = self._resolve(server.next_reply(OPENAI_CHAT, body, prompt), body)
            if reply is None:
                self._json(500, openai_api.error(500, "script exhausted: the test enqueued no reply for this "
                                                      "request"))
            elif isinstance(reply, Error):
                self._json(reply.status, openai_api.error(reply.status, reply.message))
            elif not wire.get("stream"):
                message = capped(_message(reply), wire.get("max_tokens"))
                server.generated.append(_reply_tokens(message))
                self._json(200, openai_api.completion(model, message, prompt, _reply_tokens(message)))
            else:
                message = capped(_message(reply), wire.get("max_tokens"))
                server.generated.append(_reply_tokens(message))
                include = bool((wire.get("stream_options") or {}).get("include_usage"))
                parts = openai_api.chunks(model, message, prompt, _reply_tokens(message), include,
                                          STREAM_CHUNK_CHARS)
                data = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n"
                                for p in parts) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def _stream(self, model: str, message: dict[str, Any], counts: dict[str, int]) -> None:
            text = message.get("content") or ""
            parts = [_response(model, {"role": "assistant", "content": text[i:i + STREAM_CHUNK_CHARS]},
                               done=False)
                     for i in range(0, len(text), STREAM_CHUNK_CHARS)]
            rest = {k: v for k, v in message.items() if k not in ("content", "cut")}
            if rest.get("tool_calls"):  # Ollama sends the calls in a chunk of their own, before the final one
                parts.append(_response(model, dict(rest, content=""), done=False))
            parts.append(_response(model, {"role": "assistant", "content": ""}, done=True, counts=counts,
                                   reason="length" if message.get("cut") else "stop"))
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


def _response(model: str, message: dict[str, Any], done: bool,
              counts: dict[str, int] | None = None, reason: str = "stop") -> dict[str, Any]:
    payload: dict[str, Any] = {"model": model, "created_at": CREATED_AT, "message": message, "done": done}
    if done:
        payload.update(done_reason=reason, total_duration=1000, eval_duration=500,
                       **(counts or {"prompt_eval_count": 10, "eval_count": 5}))
    return payload


def capped(message: dict[str, Any], limit: Any) -> dict[str, Any]:
    """``message`` as a server that stops after ``limit`` generated tokens sends it (Ollama's ``num_predict``,
    the OpenAI API's ``max_tokens``): its text cut there, marked ``cut`` (finish reason ``length``)."""
    if not isinstance(limit, int) or limit <= 0 or message.get("tool_calls"):
        return message
    tokens = tokenize(str(message.get("content") or ""))
    if len(tokens) < limit:
        return message
    return dict(message, content="".join(tokens[:limit - 1]), cut=True)  # the end-of-reply token counts too


def _content_text(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    calls = message.get("tool_calls")
    if calls:
        text += json.dumps(calls)
    return text


def _reply_tokens(message: dict[str, Any]) -> int:
    return count_tokens(_content_text(message)) + 1


def fit_window(body: dict[str, Any], num_ctx: int) -> Prompt:
    """Apply Ollama's truncation to a chat request: what the model sees with ``num_ctx`` tokens.

    As Ollama's chat prompt: going back from the last message, the oldest non-system messages that
    do not fit are left out (system messages and the last message always stay). If that is still
    over the window, the runner cuts the prompt's beginning (the tool definitions are rendered right
    after the system messages, so they go with the beginning).
    """
    messages = [dict(m) for m in body.get("messages") or []]
    tools = body.get("tools") or []
    tools_tokens = count_tokens(tools_text(tools)) if tools else 0
    sizes = [MESSAGE_OVERHEAD_TOKENS + count_tokens(_content_text(m)) for m in messages]
    full = PROMPT_OVERHEAD_TOKENS + tools_tokens + sum(sizes)
    system = [i for i, m in enumerate(messages) if m.get("role") == "system"]
    start = max(0, len(messages) - 1)
    fixed = PROMPT_OVERHEAD_TOKENS + tools_tokens + (sizes[start] if messages else 0)
    for i in range(start - 1, -1, -1):  # Ollama's loop: extend back while system-before-i + messages[i:] fits
        total = fixed + sum(sizes[j] for j in system if j < i) + sum(sizes[i:start])
        if total > num_ctx:
            break
        start = i
    kept_idx = [j for j in system if j < start] + list(range(start, len(messages)))
    dropped = len(messages) - len(kept_idx)
    kept = [messages[j] for j in kept_idx]
    used = PROMPT_OVERHEAD_TOKENS + tools_tokens + sum(sizes[j] for j in kept_idx)
    cut = max(0, used - num_ctx)
    if cut:
        kept = _cut_front(kept, tools_tokens, cut)
        used = num_ctx
    options = dict(body.get("options") or {})
    return Prompt(num_ctx=num_ctx, messages=kept, tokens=used, full_tokens=full, dropped_messages=dropped,
                  cut_tokens=cut, tools=bool(tools), options=options, keep_alive=body.get("keep_alive"),
                  format=body.get("format"),
                  rendered=render(kept, tools if not cut else []))


TOOLS_HEADER = ("\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_FOOTER = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                "\"arguments\": <args-json-object>}\n</tool_call>")
"""What qwen2.5's template writes around the tool definitions (Ollama's ``qwen2.5`` library template)."""


def tools_text(tools: list[dict[str, Any]]) -> str:
    """The tool definitions as qwen2.5's template writes them after the system prompt: one line a tool,
    the function as Go's compact JSON."""
    lines = "".join('\n{"type": "function", "function": ' + _compact(t.get("function",
                                                                           t)) + "}" for t in tools)
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def collate(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ollama's collation before a template runs: consecutive messages of one role become one, their
    contents joined by a blank line; tool results stay one message each."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and out[-1].get("role") == message.get("role") != "tool":
            out[-1] = dict(out[-1],
                           content=f"{out[-1].get('content') or ''}\n\n{message.get('content') or ''}")
        else:
            out.append(message)
    return out


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """A chat as Ollama's qwen2.5 template renders it. Ollama gathers the content of every system
    message, wherever it stands, into the template's ``.System`` at the top (llama3.x's template does
    the same); the tool definitions follow it; then the collated messages: a tool result as a user
    turn in ``<tool_response>``, an assistant turn as its text or else its ``<tool_call>`` lines."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    out = ""
    if system or tools:
        out = "<|im_start|>system" + (f"\n{system}" if system else "") + (tools_text(tools) if tools else "")
        out += "<|im_end|>\n"
    collated = collate(messages)
    for i, message in enumerate(collated):
        role, text, last = message.get("role"), str(message.get("content") or ""), i == len(collated) - 1
        if role == "user":
            out += f"<|im_start|>user\n{text}<|im_end|>\n"
        elif role == "assistant":
            out += "<|im_start|>assistant\n" + (text or _tool_call_lines(message.get("tool_calls") or []))
            out += "" if last else "<|im_end|>\n"
        elif role == "tool":
            out += f"<|im_start|>user\n<tool_response>\n{text}\n</tool_response><|im_end|>\n"
        if role != "assistant" and last:
            out += "<|im_start|>assistant\n"
    return out


def _tool_call_lines(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return ""
    lines = "".join(
        f'{{"name": "{call["name"]}", "arguments": {_compact(call.get("arguments") or {})}}}\n'
        for call in (c["function"] for c in calls)
    )
    return f"<tool_call>\n{lines}</tool_call>"


def _cut_front(messages: list[dict[str, Any]], tools_tokens: int, tokens: int) -> list[dict[str, Any]]:
    """Remove ``tokens`` tokens from the beginning of the rendering: the system messages first,
    then the tool definitions rendered after them, then the conversation."""
    tokens = max(0, tokens - PROMPT_OVERHEAD_TOKENS)
    out: list[dict[str, Any]] = []
    tools_pending = tools_tokens > 0
    for message in messages:
        if tools_pending and message.get("role") != "system":
            cut = min(tokens, tools_tokens)
            tokens -= cut
            tools_pending = False
        size = MESSAGE_OVERHEAD_TOKENS + count_tokens(_content_text(message))
        if tokens >= size:
            tokens -= size
            continue
        if tokens > 0:
            pieces = tokenize(_content_text(message))
            skip = max(0, tokens - MESSAGE_OVERHEAD_TOKENS)
            message = dict(message, content="".join(pieces[skip:]))
            message.pop("tool_calls", None)
            tokens = 0
        out.append(message)
    return out


def _model_entry(name: str) -> dict[str, Any]:
    """One model of the ``/api/tags`` list."""
    return {"name": f"{name}:latest", "model": f"{name}:latest", "modified_at": CREATED_AT,
            "size": 1, "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {"format": "gguf", "family": "test"}}
