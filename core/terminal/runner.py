"""How every AgentOS command line runs a command: logging set up, library errors as one line and an exit code.

    def main(argv=None) -> int:
        args = parser().parse_args(argv)
        return run_cli(lambda: execute(args), verbose=args.verbose)

``agentos``, ``python -m core.engine`` and ``python -m core.inspector`` all end here, so an error,
Ctrl-C or a closed pipe looks the same in each (the codes are :mod:`core.terminal.exit_codes`).
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Callable

from core.errors import AgentOSError
from core.durable import storage_error
from core.terminal import closed_output, exit_codes

log = logging.getLogger(__name__)

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def setup_logging(verbose: bool) -> None:
    """Log to stderr: warnings and errors, and with ``verbose`` what the library does (INFO)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT)


def run_cli(command: Callable[[], "int | None"], *, verbose: bool = False) -> int:
    """Run ``command()`` as a command line's body and return its exit code (None counts as done).

    - an :class:`~core.errors.AgentOSError` becomes ``error: <message>`` on one line of stderr and the
      exit code of :func:`core.terminal.exit_codes.for_error`;
    - Ctrl-C becomes ``interrupted`` and 130;
    - an OSError that no library call converted becomes the one line of a StorageError that names the fix
      (too many open files, a full disk, a read-only folder), and 5;
    - a reader that closed our output early (``agentos log --agent finn | head``) ends it quietly with 141,
      the shell's code for a closed pipe.
    """
    setup_logging(verbose)
    try:
        code = command()
        sys.stdout.flush()  # a closed pipe shows here, where it is handled, rather than at exit
    except AgentOSError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return exit_codes.for_error(exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except BrokenPipeError:
        if not closed_output.stdout_closed():
            raise  # a socket or another pipe: an error to report, not a reader that had enough
        closed_output.discard_stdout()
    except ConnectionError:
        raise  # a network failure that a backend did not convert: a bug to see whole
    except OSError as exc:  # a file the command could not read or write: one line that names the fix
        log.info("the command failed on an OS error", exc_info=exc)  # the traceback with -v
        print(f"error: {one_line(storage_error(exc, 'the command could not go on'))}", file=sys.stderr)
        return exit_codes.STORAGE
    if closed_output.discarded():  # also when a reply's display met the closed pipe and went on quietly
        return exit_codes.CLOSED_OUTPUT
    return exit_codes.OK if code is None else code


def one_line(exc: BaseException) -> str:
    """The error's message on one line (a wrapped message from below keeps its words)."""
    return " ".join(str(exc).split())


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls (``\\x9b`` starts a sequence as ``ESC [`` does)."""


def visible(text: str) -> str:
    """``text`` with each control character but newline and tab written as its ``\\xNN`` escape.

    What a command prints comes from outside as often as not (a fact from an imported archive, a memory a
    space member published, a model's reply): an escape sequence in it would drive the terminal, set its
    title, clear the screen to hide what came before, or write the clipboard (OSC 52).
    """
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
