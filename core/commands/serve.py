"""Subcommands that serve an agent's memory to other programs and people: mcp, inspect."""

from __future__ import annotations

import argparse
import sys

from core.commands.base import AGENT, arg, command
from core.inspector import cli as inspector


@command("mcp", AGENT, arg("--http", metavar="HOST:PORT", help="serve streamable HTTP at this address "
                           "(e.g. 127.0.0.1:8765) instead of stdio"),
         arg("--session", default="main", help="the conversation the memory tool works on (default: main)"))
def mcp(args: argparse.Namespace) -> int:
    """Serve the agent's memory as an MCP server (stdio by default) for Claude Desktop, IDEs and other agents.

    Tools: update_status, log_activity, save_fact, get_fact, recall_memory, store_memory,
    forget_memory, publish_memory and the conversation memory tool (with its recall and forget actions);
    resources: NOW.md, the LOG.md tail, the facts (secrets redacted). Safe beside a
    running engine on the same agent.
    """
    from core.paths import existing_agent
    from core.memory.shared import shared_manager

    existing_agent(args.agent)
    shared_manager(args.agent).cold.warm_up()  # the model loads while the MCP SDK is imported
    from core.mcp_server import serve  # the SDK is loaded only by this command

    if args.http:
        print(f"agentos mcp: agent {args.agent} at http://{args.http}/mcp", file=sys.stderr)
    serve(args.agent, http=args.http, session=args.session)
    return 0


command("inspect", configure=inspector.add_arguments)(inspector.run)
