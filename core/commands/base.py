"""The subcommand table of ``agentos`` and the helpers every subcommand uses."""

from __future__ import annotations

import argparse
import inspect
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from core.errors import ValidationError
from core.memory import MemoryManager, MemoryReader, open_for_reading
from core.paths import existing_agent
from core.terminal import visible

Run = Callable[[argparse.Namespace], "int | None"]


@dataclass(frozen=True)
class Arg:
    """One argparse argument of a subcommand."""

    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Arg:
    """An argument, written as for ``ArgumentParser.add_argument``."""
    return Arg(flags, options)


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for a count from ``low`` to ``high`` (None: no bound), so that a bad one is
    refused under the option's own name (``argument -n/--results: ...``), not the library's parameter."""
    bounds = f"from {low} to {high}" if high is not None else f"of {low} or more"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be a whole number {bounds}, got {text!r}")
        return value
    return parse


AGENT = arg("--agent", required=True, metavar="NAME", help="the agent, e.g. finn")
JSON = arg("--json", action="store_true", help="print JSON for scripts instead of text")


@dataclass(frozen=True)
class Command:
    """One ``agentos`` subcommand."""

    name: str
    run: Run
    arguments: tuple[Arg, ...] = ()
    configure: Callable[[argparse.ArgumentParser], None] | None = None
    """Adds the arguments itself (``run`` shares the engine's parser)."""

    def add_to(self, subcommands: Any) -> None:
        doc = plain(inspect.getdoc(self.run) or "")
        # The list of commands shows the docstring's first paragraph whole (argparse wraps it).
        sub = subcommands.add_parser(self.name, help=" ".join(doc.split("\n\n")[0].split()), description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        if self.configure is not None:
            self.configure(sub)
        for argument in self.arguments:
            sub.add_argument(*argument.flags, **argument.options)


def plural(count: int, word: str, words: str = "") -> str:
    """``1 attempt``, ``3 attempts`` (``words``: the plural when it is not ``word`` + s)."""
    return f"{count} {word if count == 1 else words or word + 's'}"


def plain(doc: str) -> str:
    """A docstring as a terminal shows it: ``code`` and :role:`target` marks of reStructuredText dropped."""
    return _ROLE.sub(r"\1", doc).replace("``", "")


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")

REGISTRY: dict[str, Command] = {}
"""Every subcommand by name, in registration order."""


def command(name: str, *arguments: Arg, configure: Callable[[argparse.ArgumentParser], None] | None = None):
    """Register the decorated ``run(args) -> exit code`` as subcommand ``name``; its docstring is the help."""
    def register(run: Run) -> Run:
        REGISTRY[name] = Command(name, run, arguments, configure)
        return run
    return register


def open_memory(name: str) -> MemoryManager:
    """The memory of an agent that exists, to write (UnknownAgentError lists the agents; nothing is
    created)."""
    existing_agent(name)
    return MemoryManager(name)


def read_memory(name: str, recall: bool = False) -> MemoryReader | MemoryManager:
    """The memory of an agent that exists, to read: a reader, which writes nothing, or a writer when a killed
    process left work that a writer does first (see :func:`core.memory.open_for_reading`; ``recall``: the
    command recalls, so recall's index and vectors count too)."""
    return open_for_reading(name, recall=recall)


def emit(args: argparse.Namespace, data: Any, text: str | Callable[[], str]) -> None:
    """Print ``data`` as JSON with ``--json``, else ``text`` (its control characters shown as escapes: it
    holds memories, which may come from anyone)."""
    if getattr(args, "json", False):
        print(json_text(data))
    else:
        print(visible(text() if callable(text) else text))


def json_text(data: Any) -> str:
    """``data`` as indented JSON that any parser reads: never ``NaN`` or ``Infinity``, which JSON has not.

    Raises:
        ValidationError: ``data`` holds such a number (a bug above: inputs are checked to be finite).
    """
    try:
        return json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError as exc:
        raise ValidationError(f"the answer holds a number that JSON cannot carry ({exc}); nothing was "
                              "printed") from exc
