"""A command on a pseudo-terminal, driven by keystrokes, and the screen a person would see.

``Terminal(argv, env)`` forks the command with the pseudo-terminal as its controlling terminal (its
stdin, stdout and stderr); :meth:`Terminal.expect` reads until a text appears; :func:`screen_lines`
replays what was written (carriage returns, erased lines, backspaces) into the lines left visible.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
from pathlib import Path

WAIT_S = 120
"""The most a step waits for the command's output: a hang ends the test, a busy machine does not."""

_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b[()][0-9A-Za-z]|\x1b[=>]|[\r\n\b]|[^\x1b\r\n\b]+")


class Terminal:
    """``argv`` on a pseudo-terminal of 80 columns."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path | str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.chdir(cwd)
            # a test worker may ignore Ctrl-C; a user's shell does not
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(argv[0], argv, dict(env, TERM="xterm", COLUMNS="80", LINES="24"))
        self.screen = ""
        self.seen = 0

    def expect(self, text: str) -> str:
        """Read until ``text`` appears after what was matched before; return what came in between."""
        while text not in self.screen[self.seen:]:
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            assert ready, f"no {text!r} on the terminal; it shows:\n{self.screen[self.seen:]}"
            chunk = self._read()
            assert chunk, f"the command left before {text!r}; it showed:\n{self.screen[self.seen:]}"
            self.screen += chunk
        start = self.seen
        self.seen = self.screen.index(text, self.seen) + len(text)
        return self.screen[start:self.seen]

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def exit_code(self) -> int:
        """Wait for the command to leave (draining its output) and return its exit code."""
        while True:
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            assert ready, "the command did not leave"
            chunk = self._read()
            if not chunk:
                break
            self.screen += chunk
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def _read(self) -> str:
        try:
            return os.read(self.fd, 4096).decode("utf-8", "replace")
        except OSError:  # the command closed the terminal
            return ""


def screen_lines(written: str) -> list[str]:
    """The lines a terminal shows after ``written``: ``\\r`` returns to the line's start, ``ESC[K`` erases to
    its end, ``\\b`` steps back, other escape sequences (colours, modes) change no text."""
    lines = [""]
    column = 0
    for match in _CONTROL.finditer(written):
        token = match.group(0)
        if token == "\n":
            lines.append("")
            column = 0
        elif token == "\r":
            column = 0
        elif token == "\b":
            column = max(0, column - 1)
        elif match.group(2) == "K":
            lines[-1] = lines[-1][:column]
        elif token.startswith("\x1b"):
            continue
        else:
            line = lines[-1].ljust(column)
            lines[-1] = line[:column] + token + line[column + len(token):]
            column += len(token)
    return lines
