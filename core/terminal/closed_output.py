"""A reader that stops reading (``agentos status | head -n 1``): stop writing, exit quietly.

Python ignores SIGPIPE, so writing to a pipe whose reader has gone raises BrokenPipeError,
and an uncaught one ends in a traceback. Every command runs under :func:`core.terminal.run_cli`: as the
Python documentation advises (``signal`` module, "Note on SIGPIPE"), standard output is
then pointed at ``os.devnull``, so that the interpreter's own flush at exit cannot fail
again, and the command exits with :data:`core.terminal.exit_codes.CLOSED_OUTPUT` (141, what a shell
reports for a program that SIGPIPE stopped), printing nothing. The default SIGPIPE action
is not restored instead: it would also kill the process for a socket closed by its peer.
"""

from __future__ import annotations

import os
import select
import sys

_discarded = False


def stdout_closed() -> bool:
    """True if standard output is a pipe that nobody reads any more."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced by an object without a file (a test's capture)
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def discard_stdout() -> None:
    """From now on, send standard output to ``os.devnull`` (its reader went away)."""
    global _discarded
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    _discarded = True


def discarded() -> bool:
    """True once standard output's reader went away: nothing written from then on is read."""
    return _discarded
