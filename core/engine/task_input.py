"""A task for the engine: where it comes from (the command line, standard input, a file) and the check it
passes before anything is written.

A turn logs its request whole (the USER_FEEDBACK entry is the record of what was asked), so a task must fit
one LOG.md entry (``memory.max_entry_bytes``) once its credentials are masked and its secrets hidden: a
larger one is refused before the run starts, never half-run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

from core.errors import ValidationError
from core.memory import REDACTED, check_text

STDIN = "-"
"""The task (or ``--task-file``) that means: read it from standard input."""
READ_FACTOR = 4
"""A task is read up to this many times ``memory.max_entry_bytes`` (masking can only shorten it so much)."""

_SECRET_WORDS = (
    r"(?:(?:api|access|secret|private|ssh|license|encryption)[ _-]?)?keys?|credentials?|passwords?|passwd"
    r"|pass[ _-]?phrases?|pass[ _-]?codes?|pins?(?:[ _-]?(?:codes?|numbers?))?|tokens?|secrets?"
    r"|(?:security|access|auth|authentication|verification|recovery)[ _-]?codes?|otp|cvv|cvc"
)
# "<word> is X", "<word>: X", "<word>=X", "<word> for <something> is X"; a quoted value is taken whole.
_CREDENTIAL = re.compile(
    rf"(?i)\b({_SECRET_WORDS})((?:\s+(?:for|of|to|on|at)\s+[\w.@:/-]+)?\s*(?:\b(?:is|are|was)\b|=|:)\s*)"
    r"(\"[^\"]*\"|'[^']*'|\S+)"
)


def mask_credentials(text: str) -> str:
    """Hide values that follow words like "API key is" or "pin code:" before they reach NOW.md or the log.

    The user's request is logged before the model saves its secret, so this masks the obvious
    phrasings at once. It is not the only defence: a secret saved later is scrubbed from
    everything that holds it (:mod:`core.memory.upkeep.scrub`), however it was phrased.
    """
    return _CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def check_task(task: object, max_bytes: int, redact: Callable[[str], str] = lambda text: text) -> str:
    """Return ``task`` when a turn can take it: non-empty UTF-8 text whose logged form (credentials masked,
    then ``redact``) fits one LOG.md entry of ``max_bytes``.

    Raises:
        ValidationError: the task is empty, not text, or too large; nothing was written.
    """
    text = check_text(task, "the task")
    if not text.strip():
        raise ValidationError("the task is empty: say what the agent should do")
    size = len(redact(mask_credentials(text)).encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(
            f"the task is {size:,} bytes, more than one LOG.md entry holds ({max_bytes:,} bytes, "
            "memory.max_entry_bytes): put the material in a file of the agent's workspace and ask the agent "
            "to read it, or raise memory.max_entry_bytes; nothing was run or written")
    return text


def read_task(task: str | None, task_file: str | None, max_bytes: int) -> str | None:
    """The task given as ``TASK``, ``-`` (standard input) or ``--task-file PATH`` (``-``: standard input);
    None when there is none (the interactive mode).

    Raises:
        ValidationError: both were given, the file cannot be read, or it is not UTF-8 text.
    """
    if task is not None and task_file is not None:
        raise ValidationError("give the task once: as TASK (- for standard input) or with --task-file PATH")
    source = task_file if task_file is not None else STDIN if task == STDIN else None
    if source is None:
        return task
    limit = READ_FACTOR * max_bytes + 1
    if source == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.read(limit) if stream is not None else sys.stdin.read(limit).encode("utf-8",
                                                                                          "surrogatepass")
        where = "standard input"
    else:
        try:
            with Path(source).open("rb") as file:
                data = file.read(limit)
        except OSError as exc:
            raise ValidationError(f"cannot read the task file {source}: {exc.strerror or exc}") from exc
        where = f"the task file {source}"
    if len(data) >= limit:
        raise ValidationError(f"{where} holds more than {limit - 1:,} bytes: a task must fit one LOG.md "
                              f"entry ({max_bytes:,} bytes, memory.max_entry_bytes); put the material in a "
                              "file of the agent's workspace and ask the agent to read it")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where} is not UTF-8 text: {exc}") from exc
