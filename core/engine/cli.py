"""The command line of the engine: one task, or an interactive session.

    python -m core.engine --agent finn "Research Python asyncio and create a summary"
    python -m core.engine --agent finn                 # interactive
    python -m core.engine --agent finn --resume        # continue an interrupted run
    python -m core.engine --agent new --create "..."  # an agent that does not exist yet
    python -m core.engine --agent finn - < task.md     # the task from standard input (or --task-file task.md)

The same command is ``agentos run``.

Interactive commands: /compact /status /now /log /facts /recall QUERY /exit (see
:mod:`core.engine.interactive`). Library errors are printed as one line (:func:`core.terminal.run_cli`); the
exit codes are those of :mod:`core.terminal.exit_codes`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from core.config import load_config
from core.engine.task_input import check_task, read_task
from core.errors import ValidationError
from core.paths import AgentPaths, existing_agent
from core.terminal import ReplyDisplay, Spinner, exit_codes, progress, run_cli

EXIT_OK, EXIT_FAILED, EXIT_BLOCKED = exit_codes.OK, exit_codes.FAILED, exit_codes.BLOCKED
"""See :mod:`core.terminal.exit_codes`: the same codes for every command."""


def parser(prog: str = "python -m core.engine") -> argparse.ArgumentParser:
    """The engine's command line (``agentos run`` adds the same arguments to its subcommand)."""
    cli = argparse.ArgumentParser(prog=prog, description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(cli)
    return cli


def add_arguments(cli: argparse.ArgumentParser) -> None:
    """The engine's flags."""
    cli.add_argument("--agent", required=True,
                     help="agent name, e.g. finn (its folder is <agents home>/<agent>)")
    cli.add_argument("task", nargs="?",
                     help="what to do (- reads it from standard input); omit for the interactive mode")
    cli.add_argument("--task-file", metavar="PATH",
                     help="read the task from this file (UTF-8; - for standard input)")
    cli.add_argument("--create", action="store_true", help="create the agent if it does not exist yet")
    cli.add_argument("--backend", choices=("auto", "ollama", "openai", "offline"),
                     help="model server API (default: llm.backend): ollama, openai (llama.cpp's "
                          "llama-server, LM Studio, vLLM, ...), offline, or auto (Ollama, else an "
                          "OpenAI-compatible server, else offline)")
    cli.add_argument("--model", help="the model, as the server names it (default: llm.model in the config)")
    cli.add_argument("--host", help="the server's address (default: llm.host; for Ollama $OLLAMA_HOST or "
                                    "http://127.0.0.1:11434, for openai $OPENAI_BASE_URL or http://127.0.0.1:8080/v1)")
    cli.add_argument("--session", default="main", help="conversation session name (default: main)")
    cli.add_argument("--resume", action="store_true", help="continue the interrupted run from its checkpoint")
    cli.add_argument("--offline", action="store_true", help="use the offline backend (no model server)")
    cli.add_argument("-v", "--verbose", action="store_true", help="log each LLM call and turn to stderr")


def main(argv: list[str] | None = None) -> int:
    """Run the engine from the command line; return the exit code."""
    args = parser().parse_args(argv)
    return run_cli(lambda: execute(args), verbose=args.verbose)


def execute(args: argparse.Namespace) -> int:
    """Run the engine with parsed arguments (:func:`core.terminal.run_cli` maps its errors to exit codes)."""
    if not args.create:
        existing_agent(args.agent)  # an unknown agent is an error that lists the agents, not a new one
    # The task is read and checked before the backend is chosen (which may wait for a server) and before
    # anything is written: an empty or oversize task is a usage error that changes nothing.
    if args.resume and (args.task is not None or args.task_file is not None):
        raise ValidationError("--resume continues the interrupted run as it stood: give it no task (a task "
                              "is a new request; the task \"Continue\" resumes too)")
    limit = load_config(AgentPaths.for_agent(args.agent)).memory.max_entry_bytes
    task = read_task(args.task, args.task_file, limit)
    if task is not None:
        check_task(task, limit)
    # Importing the engine and opening the agent take seconds: the spinner says so, and is gone before the
    # notice and the first prompt are printed.
    with Spinner(f"starting {args.agent}", at_once=True):
        from core.engine.runner import Engine  # imported here so --help stays instant

        engine = Engine(args.agent, session=args.session, offline=args.offline, model=args.model,
                        host=args.host,
                        backend_name=args.backend)
    with engine:
        print(engine.notice, file=sys.stderr)
        if engine.recovered:
            print(f"Found {len(engine.recovered)} interrupted run(s); NOW.md says where it stopped.",
                  file=sys.stderr)
        try:
            if args.resume:
                code = _turn(engine, engine.resume)
            elif task is not None:
                code = _turn(engine, lambda: engine.run(task))
            else:
                code = interactive(engine)
            _finish_reflection(engine)
            return code
        except KeyboardInterrupt:
            # The run's own advice is the one line said: run_cli's generic "interrupted" would repeat it.
            print("the run stopped: NOW.md says where; --resume continues it", file=sys.stderr)
            return exit_codes.INTERRUPTED
        finally:
            engine.manager.close()  # lets a background LOG.md compaction finish before exit


def _finish_reflection(engine) -> None:
    """After the reply is shown: let reflection read the run before the process ends (Ctrl-C leaves it for the
    next run or ``agentos reflect``)."""
    reflection = engine.manager.reflection
    if not reflection.running():
        return
    try:
        with Spinner("learning from the run (Ctrl-C leaves it for later)"):
            reflection.finish(engine.config.reflect.timeout_s)
    except KeyboardInterrupt:
        print("reflection left for later: the next run or `agentos reflect` reads the rest", file=sys.stderr)


def _turn(engine, start: Callable, session=None) -> int:
    """Run one turn with the reply streaming to the terminal; return its exit code.

    In an interactive ``session`` the offline backend's advice is printed once.
    """
    display = ReplyDisplay()
    engine.runtime.on_text = display
    try:
        with Spinner(f"{engine.paths.name} is working"):
            result = start()
    except KeyboardInterrupt:
        display.end_reply()  # a reply cut mid-line ends its line: what is said next starts on its own
        raise
    finally:
        engine.runtime.on_text = None
    display.finish(result.response)
    for warning in result.warnings:
        print(f"note: {warning}", file=sys.stderr)
    if result.outcome == "blocked":
        if session is not None and not session.offline_advice():
            return EXIT_BLOCKED
        print(f"blocked: {engine.paths.name} cannot do this with the {engine.backend.name} backend; "
              "run with a model and --resume to carry it out", file=sys.stderr)
        return EXIT_BLOCKED
    if not result.ok:
        print(f"error: the run ended with outcome {result.outcome}; NOW.md says what to do next",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def interactive(engine) -> int:
    """Read requests and commands until /exit, Ctrl-D or two Ctrl-C at the prompt
    (:mod:`core.engine.interactive`)."""
    from core.engine.interactive import Session

    return Session(engine, _turn, command, Spinner).run()


COMMANDS = "commands: /compact /status /now /log /facts /recall QUERY /exit"
"""The interactive mode's commands, as an unknown one is answered."""


def command(engine, line: str) -> str:
    """Run one slash command and return its text."""
    name, _, rest = line.partition(" ")
    manager = engine.manager
    if name == "/compact":
        with progress("compacting the session"):
            report = engine.compact()
        head = f"Compacted ({report.method}): {report.tokens_before} -> {report.tokens_after} tokens."
        if report.details:
            head += f"\n{report.details}."
        return f"{head}\n\n{report.summary}" if report.summary else head
    if name == "/status":
        now = manager.now_state()
        # The backend in a line: its notice (the offline backend's warning) was given at start-up.
        backend = f"backend: {engine.backend.name}, model {engine.backend.model}"
        return (f"{backend}\nsession {engine.session.id}: {engine.conversation.message_count()} messages, "
                f"~{engine.conversation.tokens()} tokens\n{engine.window_status()}\n"
                f"NOW: {now.status} - {now.current_step or '(no step)'}")
    if name == "/now":
        return manager.paths.now_file.read_text(encoding="utf-8")
    if name == "/log":
        return "\n".join(f"#{e['seq']} {e['ts']} {e['type']}: {e['content']}" for e in manager.read_log(20))
    if name == "/facts":
        return "\n".join(f"{f['key']} ({f['category']}): {f['value']}"
                         for f in manager.list_facts()) or "(no facts)"
    if name == "/recall":
        if not rest.strip():
            return "usage: /recall QUERY"
        with progress("searching memory"):
            found = manager.recall_memory(rest.strip())
        from core.engine.interactive import recall_table

        return recall_table(found) + (f"\nwarning: {found.warning}" if found.warning else "")
    return f"unknown command {name}; {COMMANDS}"
