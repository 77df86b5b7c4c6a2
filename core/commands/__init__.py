"""The ``agentos`` command: thin subcommands, each a call to one core function.

    agentos run --agent finn "Research Python asyncio"   # the engine (python -m core.engine)
    agentos status [--agent finn] [--json]
    agentos export --agent finn finn.agentos.tar.gz

Subcommands are registered with :func:`core.commands.base.command` in the
modules of :data:`MODULES`: adding a module there adds its subcommands. Each
docstring is the subcommand's ``--help``. Library errors are one line on
stderr, with the exit codes of :mod:`core.terminal.exit_codes` (:func:`core.terminal.run_cli`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from core import __version__
from core.commands.base import REGISTRY
from core.terminal import exit_codes, run_cli

DESCRIPTION = ("AgentOS: agents whose whole state lives in files. Run an agent, read and search what it\n"
               "remembers, share memories between agents, and keep its memory in shape.")
"""What ``agentos --help`` opens with."""

MODULES = (
    "core.commands.agents",
    "core.commands.memory",
    "core.commands.reflect",
    "core.commands.spaces",
    "core.commands.maintenance",
    "core.commands.transfer",
    "core.commands.serve",
)
"""The modules whose subcommands ``agentos`` offers, in the order ``--help`` lists them."""


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose subcommands (made of the same class) refuse an argument they do not know
    themselves, so the error shows that subcommand's usage, its real options, instead of the top-level
    usage, which names none of them (``agentos recall --limit 3`` is answered with recall's ``-n N``)."""

    def parse_known_args(self, args=None, namespace=None):
        found, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return found, extras


def parser() -> argparse.ArgumentParser:
    """The ``agentos`` argument parser with every registered subcommand."""
    for module in MODULES:
        importlib.import_module(module)
    cli = CommandParser(prog="agentos", description=DESCRIPTION,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="Run 'agentos COMMAND --help' for a command's options.")
    cli.add_argument("--version", action="version", version=f"agentos {__version__}")
    cli.add_argument("-v", "--verbose", action="store_true", help="log to stderr what the library does")
    subcommands = cli.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for command in REGISTRY.values():
        command.add_to(subcommands)
    return cli


def main(argv: list[str] | None = None) -> int:
    """Run ``agentos`` with ``argv`` (default: the process's arguments); return the exit code.

    Output piped to a reader that stops early (``agentos status | head``) ends the command
    quietly: see :mod:`core.terminal.closed_output`.
    """
    cli = parser()
    args = cli.parse_args(argv)
    if args.command is None:
        cli.print_help(sys.stderr)
        return exit_codes.USAGE
    return run_cli(lambda: REGISTRY[args.command].run(args), verbose=args.verbose)
