"""The inspector's HTTP server: the standard library's threaded server, GET only.

Routes (every answer is JSON, except the page and its assets):

    /                                     the page (``static/index.html``)
    /static/<file>                        its CSS and JavaScript, shipped in the package
    /api/agents                           every agent in the home
    /api/agents/<agent>                   the first view of one agent (NOW, sizes, timeline, facts, ...)
    /api/agents/<agent>/state             NOW, sizes and facts (what a live page refetches)
    /api/agents/<agent>/log               a timeline page: type, run, q, before, after, archive, limit
    /api/agents/<agent>/facts/<key>       a fact's values, newest first (the current one, then the
                                          earlier ones)
    /api/agents/<agent>/notes             notes, older than ``before``
    /api/agents/<agent>/compactions       compaction history, older than ``before``
    /api/agents/<agent>/conversations/<n> a conversation: DAG tops and messages older than ``before``
    /api/agents/<agent>/summaries/<id>    a summary and what it was built from
    /api/agents/<agent>/recall            the cold tier's best matches for ``q`` (``n``, ``kind``;
                                          ``explain=1``: why each ranked, and what was left out)
    /api/agents/<agent>/activity          entries by type per hour or day, compactions, memory growth
    /api/agents/<agent>/now/versions      NOW.md's versions (from its NOW_UPDATE entries), older than
                                          ``before``
    /api/agents/<agent>/now/diff          NOW.md's lines as the versions of entries ``from`` and ``to``
                                          hold them
    /api/agents/<agent>/reflection        how far reflection is, and the facts it learned with their
                                          sources
    /api/agents/<agent>/events            server-sent events: ``change`` when the agent's files change
    /api/spaces                           every memory space in the home, with its members
    /api/spaces/<space>                   a space's members and timeline (its live memories, newest first)

Nothing here writes. An agent, archive, conversation or summary that does not exist,
or a name that is not one, is a 404 (a name is never joined to a path before it was
found in a listing). Requests whose ``Host`` is not the bound address, a loopback
name or a name the server was given (``--allow-host``), with its port, are refused
whatever the bound address, so a web page elsewhere cannot read the memory through
DNS rebinding, and every page is served with a content security policy that runs
no inline script.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable, Sequence
from urllib.parse import parse_qs, unquote, urlsplit

from core.terminal import allowed_hosts, number_in
from core.errors import AgentOSError, NotFoundError, ValidationError, shown
from core.inspector import timeline
from core.inspector.agent_view import AgentView
from core.memory.spaces import view as space_view
from core.memory.spaces import list_spaces
from core.paths import AgentPaths, agents_home, list_agents

log = logging.getLogger(__name__)

POLL_S = 0.5
"""How often an open event stream looks for changes."""
HEARTBEAT_S = 15.0
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
                               " connect-src 'self'; base-uri 'none'; form-action 'none';"
                               " frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
HOST_REFUSED = ("unexpected Host header: open the address the inspector printed, or start it with "
                "--allow-host NAME for the name you open it by")
MAX_INT = 2**63 - 1
MAX_RECALL_TEXT = 2000
_CONVERSATION_ID = re.compile(r"[0-9]{1,18}")
_SUMMARY_ID = re.compile(r"sum_[A-Za-z0-9_-]{1,64}")


class InspectorServer(ThreadingHTTPServer):
    """Serves the inspector for the agents of one home."""

    daemon_threads = True

    def __init__(self, host: str, port: int, home=None, allow_hosts: Sequence[str] = ()) -> None:
        """Serve the agents of ``home`` at ``host:port`` (0: a free port) to requests addressed to the bound
        address, a loopback name or one of ``allow_hosts`` (see :func:`core.terminal.allowed_hosts`)."""
        self.home = home or agents_home()
        self.stopping = threading.Event()
        self.assets = _load_assets()
        self._views: dict[str, AgentView] = {}
        self._views_guard = threading.Lock()
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), InspectorHandler)
        self.allowed_hosts = frozenset(allowed_hosts(host, self.server_address[1], allow_hosts))

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    def view(self, name: str) -> AgentView:
        """The view of agent ``name``; NotFoundError unless it is an agent folder of the home."""
        if name not in list_agents(self.home):
            raise NotFoundError(f"no agent {name!r} in {self.home}")
        with self._views_guard:
            if name not in self._views:
                self._views[name] = AgentView(AgentPaths.for_agent(name, self.home))
            return self._views[name]

    def stop(self) -> None:
        """Stop serving: end the event streams, close the sockets and the cold stores."""
        self.stopping.set()
        self.server_close()
        with self._views_guard:
            for view in self._views.values():
                view.close()


def _load_assets() -> dict[str, tuple[bytes, str]]:
    """The page's files, read once from the package: ``name -> (bytes, content type)``."""
    folder = resources.files("core.inspector").joinpath("static")
    assets = {}
    for item in folder.iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in CONTENT_TYPES:
            assets[item.name] = (item.read_bytes(), CONTENT_TYPES[suffix])
    return assets


class HTTPError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class InspectorHandler(BaseHTTPRequestHandler):
    """One request: GET or HEAD of the page, an asset, an API answer or an event stream."""

    server: InspectorServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else the headers and body of a keep-alive answer wait ~40 ms
    server_version = "AgentOS-inspector"
    _body = True
    """False for HEAD: headers only."""

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _refuse(self) -> None:
        self.close_connection = True  # a request body, if any, is never read
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"the inspector is read-only: GET and HEAD only\n",
                   "text/plain; charset=utf-8", extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    # -- dispatch -------------------------------------------------------------------

    def _serve(self, body: bool) -> None:
        self._body = body
        url = urlsplit(self.path)
        try:
            if self.headers.get("Host", "") not in self.server.allowed_hosts:
                raise HTTPError(HTTPStatus.FORBIDDEN, HOST_REFUSED)
            segments = [unquote(s) for s in url.path.split("/")[1:]]
            try:
                params = parse_qs(url.query, keep_blank_values=False, max_num_fields=50)
            except ValueError as exc:
                raise ValidationError(f"bad query string: {exc}") from exc
            self._route(segments, params)
        except HTTPError as exc:
            self._send_error(exc.status, str(exc))
        except NotFoundError as exc:
            self._send_error(HTTPStatus.NOT_FOUND, str(exc))
        except ValidationError as exc:
            self._send_error(HTTPStatus.BAD_REQUEST, str(exc))
        except AgentOSError as exc:
            log.warning("inspector request %s failed: %s", url.path, exc)
            self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # noqa: BLE001 - the request boundary: the page gets a 500, the log the traceback
            log.exception("inspector request %s failed", url.path)
            self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error: see the inspector's log")

    def _route(self, segments: list[str], params: dict[str, list[str]]) -> None:
        if segments == [""]:
            return self._asset("index.html")
        if len(segments) == 2 and segments[0] == "static":
            return self._asset(segments[1])
        if segments[:2] == ["api", "spaces"] and len(segments) <= 3:
            return self._json(_spaces(self.server.home, segments[2:]))
        if segments[:2] != ["api", "agents"]:
            raise HTTPError(HTTPStatus.NOT_FOUND, "not found")
        if len(segments) == 2:
            return self._json({"home": str(self.server.home),
                               "agents": [self.server.view(n).card() for n in list_agents(self.server.home)]})
        view = self.server.view(segments[2])
        rest = segments[3:]
        if not rest:
            return self._json(view.overview())
        if rest == ["events"]:
            return self._events(view)
        handler = _AGENT_ROUTES.get((rest[0], len(rest)))
        if handler is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, "not found")
        return self._json(handler(view, rest[1:], Params(params)))

    # -- answers --------------------------------------------------------------------

    def _asset(self, name: str) -> None:
        asset = self.server.assets.get(name)
        if asset is None:
            raise HTTPError(HTTPStatus.NOT_FOUND, "not found")
        self._send(HTTPStatus.OK, *asset)

    def _json(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        self._send(HTTPStatus.OK, data, "application/json; charset=utf-8")

    def _send_error(self, status: HTTPStatus, message: str) -> None:
        data = json.dumps({"error": message, "status": status.value}, ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
        self._send(status, data, "application/json; charset=utf-8")

    def _send(self, status: HTTPStatus, data: bytes, content_type: str,
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if self._body:
            self.wfile.write(data)

    def _events(self, view: AgentView) -> None:
        """Server-sent events: ``change`` with the newest seq and NOW.md's version whenever the agent's
        files change, checked every ``POLL_S``; a comment line now and then keeps the stream open."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Connection", "close")
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        if not self._body:
            return
        seen = None
        last_write = time.monotonic()
        while not self.server.stopping.is_set():
            stamp = view.fingerprint()
            if stamp != seen:
                seen = stamp
                self._event("change", view.status())
                last_write = time.monotonic()
            elif time.monotonic() - last_write > HEARTBEAT_S:
                self.wfile.write(b": still here\n\n")
                last_write = time.monotonic()
            self.server.stopping.wait(POLL_S)

    def _event(self, name: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data, allow_nan=False)}\n\n".encode("utf-8"))


class Params:
    """The query parameters of a request, checked and converted."""

    def __init__(self, raw: dict[str, list[str]]) -> None:
        self.raw = raw

    def text(self, name: str, default: str = "", limit: int = timeline.MAX_TEXT) -> str:
        value = self.raw.get(name, [default])[-1]
        if len(value) > limit:
            raise ValidationError(f"parameter {name} is longer than {limit} characters")
        return value

    def integer(self, name: str, default: int | None = None, low: int = 0, high: int = MAX_INT) -> int | None:
        value = self.raw.get(name, [None])[-1]
        if value in (None, ""):
            return default
        number = number_in(value, low, high)
        if number is None:
            raise ValidationError(f"parameter {name} must be a whole number from {low} to {high}, "
                                  f"got {shown(value)}")
        return number

    def many(self, name: str) -> list[str]:
        return [v for item in self.raw.get(name, []) for v in item.split(",") if v]


def _spaces(home, rest: list[str]) -> dict[str, Any]:
    """The spaces of the home, or one space's members and timeline (404 for a name not in the listing)."""
    if not rest:
        return {"home": str(home), "spaces": space_view.cards(home)}
    if rest[0] not in list_spaces(home):
        raise NotFoundError(f"no memory space {rest[0]!r} in {home}")
    return space_view.read_timeline(rest[0], home)


def _log(view: AgentView, rest: list[str], params: Params) -> dict[str, Any]:
    archive_id = params.text("archive")
    query = timeline.LogQuery(
        types=timeline.check_types(params.many("type")),
        run=params.text("run") or None,
        text=params.text("q").strip(),
        before=params.integer("before"),
        after=params.integer("after"),
        archive=view.archive(archive_id) if archive_id else None,
        limit=params.integer("limit", timeline.PAGE_SIZE, 1, timeline.MAX_PAGE_SIZE),
    )
    return view.timeline(query)


def _conversation(view: AgentView, rest: list[str], params: Params) -> dict[str, Any]:
    if not _CONVERSATION_ID.fullmatch(rest[0]):
        raise NotFoundError(f"no conversation {rest[0]!r}")
    return view.conversation(int(rest[0]), params.integer("before"))


def _summary(view: AgentView, rest: list[str], params: Params) -> dict[str, Any]:
    if not _SUMMARY_ID.fullmatch(rest[0]):
        raise NotFoundError(f"no summary {rest[0]!r}")
    return view.summary(rest[0])


def _recall(view: AgentView, rest: list[str], params: Params) -> dict[str, Any]:
    text, kind = params.text("q", limit=MAX_RECALL_TEXT), params.text("kind") or None
    return view.recall(text, params.integer("n", 8, 1, 50), kind,
                       explain=params.integer("explain", 0, 0, 1) == 1)


def _now(view: AgentView, rest: list[str], params: Params) -> dict[str, Any]:
    if rest == ["versions"]:
        return view.now_versions(params.integer("before"))
    if rest == ["diff"]:
        older, newer = params.integer("from"), params.integer("to")
        if older is None or newer is None:
            raise ValidationError("parameters from and to name the NOW_UPDATE entries to compare (their "
                                  "seqs)")
        return view.now_diff(older, newer)
    raise NotFoundError("not found")


_AGENT_ROUTES: dict[tuple[str, int], Callable[[AgentView, list[str], Params], dict[str, Any]]] = {
    ("log", 1): _log,
    ("state", 1): lambda view, rest, params: view.state(),
    ("facts", 2): lambda view, rest, params: view.fact_history(rest[0]),
    ("notes", 1): lambda view, rest, params: view.notes(params.integer("before")),
    ("compactions", 1): lambda view, rest, params: view.compactions(params.integer("before")),
    ("conversations", 2): _conversation,
    ("summaries", 2): _summary,
    ("recall", 1): _recall,
    ("activity", 1): lambda view, rest, params: view.activity(),
    ("now", 2): _now,
    ("reflection", 1): lambda view, rest, params: view.reflection(),
}
