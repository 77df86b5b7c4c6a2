"""Subcommands that serve an agent's memory to other programs and people: mcp, inspect."""

from __future__ import annotations

import argparse
import json
import sys

from core.commands.base import AGENT, arg, command
from core.errors import ValidationError
from core.inspector import cli as inspector


@command("mcp", AGENT, arg("--http", metavar="HOST:PORT", help="serve streamable HTTP at this address "
                           "(e.g. 127.0.0.1:8765) instead of stdio"),
         arg("--allow-host", action="append", default=[], metavar="NAME",
             help="with --http: also answer requests addressed to this host name (repeat for several); the "
                  "bound address and localhost are always answered, any other Host header is refused"),
         arg("--session", default="main", help="the conversation the memory tool works on (default: main)"),
         arg("--print-config", action="store_true",
             help="print the mcpServers entry an MCP client needs to start this server (absolute paths), and "
                  "exit"))
def mcp(args: argparse.Namespace) -> int:
    """Serve the agent's memory as an MCP server (stdio by default) for Claude Desktop, IDEs and other agents.

    An MCP client starts this command itself and talks to it over stdin and stdout:
    `agentos mcp --agent NAME --print-config` prints the configuration to give the client.
    Tools: update_status, log_activity, save_fact, get_fact, recall_memory, store_memory,
    forget_memory, publish_memory and the conversation memory tool (with its recall and forget actions);
    resources: NOW.md, the LOG.md tail, the facts (secrets redacted). Safe beside a
    running engine on the same agent. Ctrl-C stops it.
    """
    from core.paths import existing_agent
    from core.memory import shared_reader

    existing_agent(args.agent)
    if args.allow_host and not args.http:
        raise ValidationError("--allow-host names the hosts the HTTP server answers: use it with --http")
    if args.print_config:
        return _print_config(args)
    # the model loads while the MCP SDK is imported (the server reads first)
    shared_reader(args.agent).warm_up()
    from core.mcp_server import parse_address, serve  # the SDK is loaded only by this command

    if args.http:
        parse_address(args.http)  # a bad address is refused before the memory is opened
    elif sys.stdin.isatty():  # a person, not a client: stdout is the protocol, so this goes to stderr
        print(STDIO_GREETING.format(agent=args.agent), file=sys.stderr)
    serve(args.agent, http=args.http, session=args.session, allow_hosts=args.allow_host,
          listening=lambda url: print(f"agentos mcp: agent {args.agent} at {url}", file=sys.stderr))
    return 0


STDIO_GREETING = """\
agentos mcp: the memory of agent {agent} as an MCP server on stdio (JSON-RPC on stdin and stdout).
An MCP client (Claude Desktop, Cursor, an IDE) starts this command itself; to set one up, run
  agentos mcp --agent {agent} --print-config
and add what it prints to the client's configuration. Ctrl-C stops the server."""


def _print_config(args: argparse.Namespace) -> int:
    if args.http:
        raise ValidationError("--print-config prints the configuration of the stdio server a client starts; "
                              "leave out --http (a client of the HTTP server needs only its URL)")
    from core.mcp_server.client_config import client_config

    print(json.dumps(client_config(args.agent, args.session), indent=2, allow_nan=False))
    return 0


command("inspect", configure=inspector.add_arguments)(inspector.run)
