"""Run a command's ``main(argv)`` in the test's own process, as a subprocess would run it.

What the command prints and its exit code come back as from ``subprocess.run`` (``returncode``,
``stdout``, ``stderr``), so a test reads the same either way. It saves the start-up of a Python
process per call; a test about the process boundary itself (signals, imports of a fresh process,
a terminal or a pipe) starts a real process instead.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence


@dataclass(frozen=True)
class Ran:
    """A finished command: its exit code and everything it wrote."""

    returncode: int
    stdout: str
    stderr: str


def run_main(main: Callable[..., int | None], argv: Sequence[str], stdin: str = "", **kwargs) -> Ran:
    """Call ``main(list(argv), **kwargs)`` with ``stdin`` as its standard input (at its end by default, like
    a process with none) and its standard output and error captured; ``sys.exit`` and argparse's exits
    become the exit code, as they would for a process."""
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv), **kwargs)
            except SystemExit as exc:
                code = _exit_code(exc.code, err)
    finally:
        sys.stdin = saved_stdin
    return Ran(0 if code is None else code, out.getvalue(), err.getvalue())


def _exit_code(code: object, err: io.StringIO) -> int:
    """The status a process would exit with for ``sys.exit(code)``: a message is printed and exits 1."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=err)
    return 1


def run_script(path: Path, *args: str) -> Ran:
    """Run ``python PATH ARGS`` in this process: the file as ``__main__`` with its own ``sys.argv`` (and
    ``sys.path`` put back afterwards, as a script may put its checkout first)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *args]
    try:
        return run_main(lambda argv: runpy.run_path(str(path), run_name="__main__"), args)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
