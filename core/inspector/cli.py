"""Serve the memory inspector: a local, read-only web page of what the agents remember.

    python -m core.inspector                    # every agent of $AGENTOS_HOME, on http://127.0.0.1:8765/
    python -m core.inspector --agent finn       # open on finn
    python -m core.inspector --port 0           # any free port (the address is printed)

It binds 127.0.0.1 unless --host names another interface, prints its address and
opens nothing. Ctrl-C stops it. It never writes, and takes no lock an engine waits for.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from core import exit_codes
from core.errors import AgentOSError, UnknownAgentError
from core.inspector.agent_view import agent_names
from core.paths import agents_home, validate_agent_name

DEFAULT_PORT = 8765


def parser(prog: str) -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(prog=prog, description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--agent", help="the agent to show first (default: the first in the home)")
    cli.add_argument("--port", type=int, default=DEFAULT_PORT,
                     help=f"port to listen on (default {DEFAULT_PORT}; 0: any free one)")
    cli.add_argument("--host", default="127.0.0.1",
                     help="interface to listen on (default 127.0.0.1; another one exposes the memory)")
    cli.add_argument("-v", "--verbose", action="store_true", help="log every request to stderr")
    return cli


def main(argv: list[str] | None = None, prog: str = "python -m core.inspector") -> int:
    """Serve the inspector until Ctrl-C (or SIGTERM); return the exit code."""
    args = parser(prog).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from core.inspector.server import InspectorServer, is_loopback

    home = agents_home()
    try:
        if args.agent is not None:
            validate_agent_name(args.agent)
            if args.agent not in agent_names(home):
                raise UnknownAgentError(f"no agent {args.agent!r} in {home}: its folder does not exist")
        server = InspectorServer(args.host, args.port, home)
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.for_error(exc)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
              "choose another port with --port (0 picks a free one)", file=sys.stderr)
        return exit_codes.USAGE
    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}: anyone who can reach this machine on port "
              f"{server.server_address[1]} can read every agent's memory (secrets stay masked)",
              file=sys.stderr)
    address = server.url + (f"#agent={args.agent}" if args.agent else "")
    print(f"AgentOS inspector: {address}  (agents home {home}; Ctrl-C stops it)", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return exit_codes.OK


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
