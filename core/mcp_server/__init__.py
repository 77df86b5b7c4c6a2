"""An MCP server of one agent's memory, on the official ``mcp`` SDK.

    agentos mcp --agent finn                   # stdio, for Claude Desktop and other MCP clients
    agentos mcp --agent finn --http 127.0.0.1:8765   # answers only requests addressed to it (Host header)

Tools: every memory skill (``update_status``, ``log_activity``, ``save_fact``,
``get_fact`` (with ``history``: a fact's earlier values too), ``recall_memory``, ``store_memory``,
``forget_memory``, ``publish_memory``) and the
provider's ``memory`` tool with its ``recall`` and ``forget`` actions (see
:mod:`core.mcp_server.tools`); resources: NOW.md, the LOG.md tail and the
facts, secrets redacted. The agent is fixed when the server starts. Until a
client writes, the server only reads (a ``MemoryReader``: starting it repairs,
indexes and expires nothing, unless a killed process left work that a writer
does first); the first write opens the same ``MemoryManager`` as the engine's,
so each write takes the agent's lock and it runs safely beside an engine on the
same agent, and starts reflection on what clients record. It never takes the
engine's run lock.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable, Sequence

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from core import __version__
from core.terminal import allowed_hosts, is_loopback, number_in
from core.errors import ValidationError, shown
from core.mcp_server.stdio import interruptible_stdin
from core.mcp_server.tools import AgentMemory, memory_tools
from core.memory.storage import open_database, redact
from core.memory.provider import Session
from core.paths import existing_agent
from core.plugins.memory import open_provider

log = logging.getLogger(__name__)

LOG_TAIL = 50
"""LOG.md entries in the log resource."""
MCP_USER = "local"
"""The user whose profile and conversation the ``memory`` tool sees: the command line's
(``core.engine.LOCAL_USER``)."""


def build_server(agent: str, *, session: str = "main") -> MCPServer:
    """The MCP server of ``agent``'s memory (which must exist); its memory is closed when the server stops.

    Args:
        agent: the agent whose memory every tool and resource reads and writes.
        session: the conversation the ``memory`` tool works on (the engine's ``--session``).

    Raises:
        UnknownAgentError, InvalidAgentNameError: no such agent; nothing is created.
    """
    paths = existing_agent(agent)
    memory = AgentMemory(agent)
    # while the client connects: its first recall_memory then finds the model loaded
    memory.reading().warm_up()
    config = memory.reading().config
    provider = open_provider(None, open_database(paths, config.storage), config=config.provider)
    bound = Session(id=f"{agent}:{session}", agent_id=agent, user_id=MCP_USER, channel="mcp")

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            provider.close()
            memory.close()  # waits for a background LOG.md compaction

    server = MCPServer(
        f"agentos-{agent}", version=__version__, log_level="WARNING", lifespan=lifespan,
        tools=memory_tools(agent, provider, bound, memory),
        instructions=(f"The long-term memory of AgentOS agent {agent}: NOW.md (update_status), LOG.md "
                      "(log_activity), facts (save_fact, get_fact), recall over all of it (store_memory, "
                      "recall_memory, forget_memory) and the conversation memory (memory)."),
    )

    @server.resource(f"agentos://{agent}/now", name="NOW.md", mime_type="text/markdown",
                     description=f"What {agent} is doing now: status, objective, plan, blockers")
    def now() -> str:
        return redact(paths.now_file.read_text(encoding="utf-8"), memory.reading().facts.secret_values())

    @server.resource(f"agentos://{agent}/log", name="LOG.md tail", mime_type="text/plain",
                     description=f"The last {LOG_TAIL} entries of {agent}'s activity log, oldest first")
    def log_tail() -> str:
        reading = memory.reading()
        secrets = reading.facts.secret_values()
        return "\n".join(redact(f"#{e['seq']} {e['ts']} {e['type']}: {e['content']}", secrets)
                         for e in reading.read_log(LOG_TAIL))

    @server.resource(f"agentos://{agent}/facts", name="facts", mime_type="application/json",
                     description=f"{agent}'s saved facts; a secret's value is [REDACTED] (get_fact returns "
                                 "it)")
    def facts() -> str:
        return json.dumps(memory.reading().list_facts(), ensure_ascii=False, indent=1, allow_nan=False)

    return server


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT`` for 127.0.0.1) as ``(host, port)``.

    Raises:
        ValidationError: not of that form.
    """
    host, sep, digits = text.rpartition(":")
    port = number_in(digits, 1, 65535) if sep else None
    if port is None:
        raise ValidationError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8765; got {shown(text)}")
    return host.strip("[]") or "127.0.0.1", port


def transport_security(host: str, port: int, extra: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection for any bound address: a request whose ``Host`` is not one of
    :func:`allowed_hosts` is answered 421, one from a web page of another origin 403 (the SDK protects
    only the literal loopback names by itself, and answered ``Host: evil.example`` on 127.0.0.2)."""
    hosts = allowed_hosts(host, port, extra)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"http://{name}" for name in hosts])


def serve(agent: str, *, http: str | None = None, session: str = "main",
          allow_hosts: Sequence[str] = (), listening: Callable[[str], None] | None = None) -> None:
    """Serve ``agent``'s memory over stdio, or over streamable HTTP at ``http`` (``HOST:PORT``) until stopped.

    Over HTTP, only requests addressed to the bound address, a loopback name or one of ``allow_hosts``
    (their ``Host`` header) are answered; ``listening(url)`` is called once the address is bound.

    Raises:
        KeyboardInterrupt: Ctrl-C stopped the stdio server (after it closed the agent's memory).
        ValidationError: the HTTP address cannot be bound (taken, or not this machine's).
    """
    address = parse_address(http) if http is not None else None
    server = build_server(agent, session=session)
    if address is None:
        with interruptible_stdin() as interrupted:
            server.run("stdio")
        if interrupted():
            raise KeyboardInterrupt  # stopped cleanly; the command line reports it as any Ctrl-C
        return
    host, port = address
    listener = _bind(host, port)
    if not is_loopback(host):
        log.warning("the MCP server listens on %s: anyone who can reach it can read and write %s's memory, "
                    "secrets included through get_fact", host, agent)
    if listening is not None:
        listening(f"http://{http}/mcp")
    import uvicorn  # the SDK's own server for streamable HTTP, given the socket bound here

    security = transport_security(host, port, allow_hosts)
    app = server.streamable_http_app(transport_security=security, host=host)
    with listener:
        uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run(sockets=[listener])


def _bind(host: str, port: int) -> socket.socket:
    """A socket listening at ``host:port``, bound before the server is announced, so that a taken port is
    one line that names the fix (the SDK's server logged its error after the address was announced and
    exited 3, the code of a blocked run)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)  # create_server adds the address to strerror
        raise ValidationError(f"cannot listen on {host}:{port}: {why}; choose another port with --http "
                              "HOST:PORT") from exc
