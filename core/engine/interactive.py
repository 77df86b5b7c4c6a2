"""The interactive mode: line editing and a history per agent, Ctrl-C that cancels a turn, readable output.

- Lines are read through :mod:`readline` when the terminal has it: arrows edit and recall earlier
  lines; the history is the agent's ``.history`` file, read at start and written (atomically, at most
  :data:`HISTORY_LINES` lines) at exit.
- Ctrl-C during a turn cancels that turn (NOW.md records it as interrupted) and the session goes on;
  at the prompt it only says how to leave; a second Ctrl-C in a row there, or Ctrl-D, leaves.
- ``/recall`` prints a table sized to the terminal; the offline backend's advice is given once a session.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from core.errors import AgentOSError, StorageError
from core.durable import atomic_write
from core.terminal import closed_output, ctrl_c, one_line, prompt_shown, visible

log = logging.getLogger(__name__)

HISTORY_FILE = ".history"
"""In the agent's folder: the lines typed in its interactive sessions."""
HISTORY_LINES = 1000
"""The most lines the history keeps (the oldest go first)."""
LEAVE_HINT = "(Ctrl-C again or Ctrl-D to leave; /exit too)"


class History:
    """The agent's line history, through :mod:`readline` when it is available."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            import readline  # the line editor; absent on some platforms, where input() still works
        except ImportError:
            self.readline = None
            return
        self.readline = readline
        readline.set_history_length(HISTORY_LINES)
        readline.clear_history()
        if path.is_file():
            try:
                readline.read_history_file(str(path))
            except OSError as exc:  # an unreadable history only loses the arrows' memory
                log.warning("cannot read the line history %s: %s", path, exc)

    def save(self) -> None:
        """Write the history (the last :data:`HISTORY_LINES` lines) in place of the file, atomically."""
        if self.readline is None:
            return
        count = self.readline.get_current_history_length()
        if count == 0 and not self.path.exists():
            return  # nothing typed (input that is not a terminal is not kept): no file to make
        lines = [self.readline.get_history_item(i)
                 for i in range(max(1, count - HISTORY_LINES + 1), count + 1)]
        text = "".join(f"{line}\n" for line in lines if line)
        try:
            atomic_write(self.path, text.encode("utf-8"))
        except (OSError, StorageError) as exc:  # the session's work is saved already; only the arrows lose it
            print(f"warning: cannot write the line history {self.path}: {one_line(exc)}", file=sys.stderr)


class Session:
    """One interactive session: reads lines, runs turns and commands, until the user leaves."""

    def __init__(self, engine: Any, turn: Callable[..., int], command: Callable[[Any, str], str],
                 spinner: Callable[[str], Any]) -> None:
        self.engine = engine
        self.turn = turn
        self.command = command
        self.spinner = spinner
        self.warned_offline = False
        """The offline backend's advice was given in this session."""
        self.history = History(engine.paths.root / HISTORY_FILE)

    def run(self) -> int:
        """Read requests and commands until /exit, Ctrl-D or two Ctrl-C at the prompt; return 0."""
        print(f"Talking to {self.engine.paths.name} (session {self.engine.session.id}). /exit to leave.",
              file=sys.stderr)
        try:
            with ctrl_c.forwarded():
                self._loop()
        finally:
            self.history.save()
        return 0

    def _loop(self) -> None:
        interrupted = False
        while True:
            try:
                with prompt_shown():  # no spinner may draw over the prompt or the line being typed
                    line = input("> ").strip()
            except EOFError:
                print(file=sys.stderr)
                return
            except KeyboardInterrupt:
                if interrupted:
                    print(file=sys.stderr)
                    return
                interrupted = True
                print(f"\n{LEAVE_HINT}", file=sys.stderr)
                continue
            interrupted = False
            if line.partition(" ")[0] in ("/exit", "/quit"):  # "/exit now" too, as "/status now" is /status
                return
            if line:
                self._one(line)
            if closed_output.discarded():
                return  # nobody reads the answers any more

    def _one(self, line: str) -> None:
        try:
            if line.startswith("/"):
                with self.spinner(line.split()[0][1:]):
                    text = self.command(self.engine, line)
                print(visible(text))  # /log, /facts, /recall: memories, shown not obeyed
            else:
                self.turn(self.engine, lambda: self.engine.run(line), session=self)
        except KeyboardInterrupt:
            what = (
                "command cancelled"
                if line.startswith("/")
                else "turn cancelled; NOW.md records it as interrupted"
            )
            print(f"\n{what}. The session goes on.", file=sys.stderr)
        except AgentOSError as exc:  # the session goes on after a failed request
            print(f"error: {one_line(exc)}", file=sys.stderr)

    def offline_advice(self) -> bool:
        """True the first time in this session: the offline backend's advice is to be printed."""
        first, self.warned_offline = not self.warned_offline, True
        return first


def recall_table(found: list[dict[str, Any]], width: int | None = None) -> str:
    """Recall results as a table: score, kind, date and the text cut to the terminal's width."""
    if not found:
        return "(nothing recalled)"
    width = width or shutil.get_terminal_size((100, 24)).columns
    rows = [(f"{float(r.get('score') or 0):.2f}", str(r.get("kind") or r.get("tier") or ""),
             str(r.get("occurred_at") or r.get("created_at") or "")[:10],
             " ".join(str(r.get("content") or "").split())) for r in found]
    kind_w = max(4, *(len(r[1]) for r in rows))
    head = f"{'score':<5}  {'kind':<{kind_w}}  {'date':<10}  "
    room = max(10, width - len(head) - 1)
    lines = [f"{head}text", "-" * min(width - 1, len(head) + room)]
    for score, kind, date, text in rows:
        text = text if len(text) <= room else text[: room - 1] + "…"
        lines.append(f"{score:<5}  {kind:<{kind_w}}  {date:<10}  {text}")
    return "\n".join(lines)
