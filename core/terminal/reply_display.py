"""The model's reply on the terminal as it streams.

The spinner shows until the first piece of text arrives; control characters are shown as escapes
(:func:`core.terminal.visible`). A reply that starts like a tool call
written as text (``{``, ``[``, ``<tool_call>``, a fence) is held back: the engine reads it as a
call, and only if it turns out to be the answer is it printed when the turn ends.
"""

from __future__ import annotations

import sys
from typing import TextIO

from core.terminal import closed_output
from core.terminal.runner import visible
from core.terminal.spinner import stop_all

_CALL_LIKE = ("{", "[", "<tool_call", "```")


class ReplyDisplay:
    """A text sink for :meth:`core.llm.backend.Backend.chat` that writes to the terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.written = ""
        """Everything printed so far in this turn."""
        self._pending = ""
        self._held = False

    def __call__(self, piece: str) -> None:
        if self._held:
            return
        self._pending += piece
        start = self._pending.lstrip()
        if not start:
            return
        if any(start.startswith(p) or p.startswith(start) for p in _CALL_LIKE):
            self._held = start.startswith(_CALL_LIKE)
            return
        stop_all()
        self._write(self._pending)
        self._pending = ""

    def end_reply(self) -> None:
        """One model reply is complete: the next starts afresh (a held-back call is not printed)."""
        if self.written and not self.written.endswith("\n"):
            self._write("\n")
        self._pending, self._held = "", False

    def finish(self, response: str) -> None:
        """End the turn: print ``response`` unless it was already streamed, then a newline."""
        stop_all()
        if response.strip() and response.strip() not in self.written:
            if self.written and not self.written.endswith("\n"):
                self._write("\n")
            self._write(response)
        if self.written and not self.written.endswith("\n"):
            self._write("\n")
        self.written, self._pending, self._held = "", "", False

    def _write(self, text: str) -> None:
        self.written += text
        try:
            self.stream.write(visible(text))  # a reply's escape sequences are shown, never obeyed
            self.stream.flush()
        except BrokenPipeError:
            if self.stream is not sys.stdout or not closed_output.stdout_closed():
                raise
            # The reader went away mid-reply (``agentos run ... | head``): the turn still finishes and
            # is recorded in the agent's memory; only its text is dropped, and the command exits 141.
            closed_output.discard_stdout()
