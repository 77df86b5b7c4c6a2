"""A small Ollama-compatible HTTP server on 127.0.0.1 for tests: ``/api/embed`` and ``/api/chat``.

Embeddings are deterministic hashed bags of words (so texts sharing words are
close), never zero. Chat replies come from a queue of canned answers. Run it
in-process with :func:`start` or as a process: ``python fake_ollama.py`` prints its port.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSION = 64
MODELS = {"fake-embed", "nomic-embed-text"}


def embed_text(text: str) -> list[float]:
    """A unit vector: one hashed slot a word, plus a constant slot so no vector is zero."""
    vector = [0.0] * DIMENSION
    vector[0] = 0.5
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        slot = 1 + int(hashlib.sha1(word.encode()).hexdigest(), 16) % (DIMENSION - 1)
        vector[slot] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector]


class Handler(BaseHTTPRequestHandler):
    replies: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path == "/api/embed":
            if body.get("model") not in MODELS:
                return self._send(404, {"error": f"model '{body.get('model')}' not found"})
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return self._send(200, {"model": body["model"], "embeddings": [embed_text(t) for t in texts]})
        if self.path == "/api/chat":
            answer = Handler.replies.pop(0) if Handler.replies else "summary"
            return self._send(200, {"model": body.get("model"), "done": True,
                                    "message": {"role": "assistant", "content": answer}})
        self._send(404, {"error": "not found"})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def start() -> tuple[ThreadingHTTPServer, str]:
    """Start the server on a free port in a daemon thread; return it and its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
    sys.exit(0)
