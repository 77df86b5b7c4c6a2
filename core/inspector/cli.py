"""Serve the memory inspector: a local, read-only web page of what the agents remember.

    python -m core.inspector                    # every agent of the home, on http://127.0.0.1:8765/
    python -m core.inspector --agent finn       # open on finn
    python -m core.inspector --port 0           # any free port (the address is printed)

``agentos inspect`` is the same command: :func:`add_arguments` and :func:`run` are what it
registers, :func:`main` what ``python -m core.inspector`` runs.
"""

from __future__ import annotations

import argparse
import inspect
import signal
import sys

from core.paths import agents_home, existing_agent
from core.terminal import exit_codes, is_loopback, number_in, run_cli

DEFAULT_PORT = 8765


def add_arguments(cli: argparse.ArgumentParser) -> None:
    """The inspector's options, on ``cli``."""
    cli.add_argument("--agent", metavar="NAME", help="the agent shown first (default: the first in the home)")
    cli.add_argument("--port", type=_port, default=DEFAULT_PORT,
                     help=f"port to listen on (default {DEFAULT_PORT}; 0: any free one)")
    cli.add_argument("--host", default="127.0.0.1",
                     help="interface to listen on (default 127.0.0.1; another one exposes the memory)")
    cli.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                     help="also answer requests addressed to this host name (repeat for several), e.g. the "
                          "machine's name with --host 0.0.0.0; the bound address and localhost are always "
                          "answered, any other Host header is refused")
    cli.add_argument("-v", "--verbose", action="store_true", help="log every request to stderr")


def _port(text: str) -> int:
    """``--port``'s value: a TCP port, 0 to 65535 (a larger one raised an OverflowError from the socket)."""
    port = number_in(text, 0, 65535)
    if port is None:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535 (0: any free one), got {text!r}")
    return port


def run(args: argparse.Namespace) -> int:
    """Serve a local, read-only web page of everything the agents remember, until Ctrl-C.

    NOW, the LOG.md timeline across its archives (filters, search, live updates), facts
    (secrets masked), notes and recall, conversations with their summary DAG, compactions
    and the size of each tier. It listens on 127.0.0.1 unless --host names another
    interface, prints its address and opens nothing. It never writes and takes no lock
    a running engine waits for.
    """
    from core.inspector.server import InspectorServer  # --help stays instant

    home = agents_home()
    if args.agent is not None:
        existing_agent(args.agent, home)
    try:
        server = InspectorServer(args.host, args.port, home, args.allow_host)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
              "choose another port with --port (0 picks a free one)", file=sys.stderr)
        return exit_codes.USAGE
    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}: anyone who can reach this machine on port "
              f"{server.server_address[1]} can read every agent's memory (secrets stay masked); it answers "
              f"requests addressed to {', '.join(sorted(server.allowed_hosts))} only: name the others you "
              "open it by with --allow-host NAME", file=sys.stderr)
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


def main(argv: list[str] | None = None, prog: str = "python -m core.inspector") -> int:
    """``python -m core.inspector``: parse ``argv``, serve, and return the exit code."""
    cli = argparse.ArgumentParser(prog=prog, description=inspect.getdoc(run),
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(cli)
    args = cli.parse_args(argv)
    return run_cli(lambda: run(args), verbose=args.verbose)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
