"""``agentos reflect``: learn now from what an agent recorded, show how far reflection is, or learn it all
again."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from core.commands.base import AGENT, JSON, arg, command, emit, open_memory, plural
from core.terminal import tqdm
from core.errors import ValidationError


@command("reflect", AGENT,
         arg("--status", action="store_true",
             help="show the lag, the failure rate per model and what is quarantined"),
         arg("--rebuild", action="store_true",
             help="forget everything learned (explicit facts stay) and learn it again from the files, e.g. "
                  "after switching to a better model"),
         arg("--retry", action="store_true",
             help="try every quarantined entry again now, not only those due"),
         arg("--backend", choices=("auto", "ollama", "openai", "offline"),
             help="model server API, as for agentos run (default: llm.backend): ollama, openai (llama.cpp's "
                  "llama-server, LM Studio, vLLM, ...), offline, or auto"),
         arg("--model", help="the model to read with (default: reflect.model, else llm.model)"),
         arg("--host", help="the model server's address (default: llm.host)"),
         arg("--offline", action="store_true",
             help="read with the offline backend's rules (explicit statements only)"),
         JSON)
def reflect(args: argparse.Namespace) -> int:
    """Learn facts, events and contradictions from what the agent recorded since the last pass.

    Reads LOG.md (and its archives), conversation messages and stored notes after reflection's marks,
    asks the model for what is worth keeping and keeps what the entries really say, each memory with its
    sources (agentos facts --json shows them). A reply that cannot be used is asked again, then split, and
    an entry that still fails is quarantined and tried again later. The background does the same after
    each run; this command does it now and waits. With no model server, the offline backend's rules read
    explicit statements ("my X is Y", "I moved to Y"), and the output says so.
    """
    if args.status and (args.rebuild or args.retry):
        raise ValidationError("--status only shows how far reflection is: leave out --rebuild and --retry")
    with open_memory(args.agent) as manager:
        if args.status:
            found = manager.reflection.status()
            emit(args, found, lambda: status_text(args.agent, found))
            return 0
        from core.llm import choose_backend  # a model client only when one is needed

        choice = choose_backend(manager.config.llm, offline=args.offline, host=args.host,
                                model=args.model or manager.config.reflect.model or None,
                                kind=args.backend)
        print(choice.notice, file=sys.stderr)
        with tqdm(desc="reflecting", unit="entry", leave=False, disable=None) as bar:
            if args.rebuild:
                report = manager.reflection.rebuild(choice.backend, progress=bar.update)
            else:
                report = manager.reflection.run(choice.backend, retry_all=args.retry, progress=bar.update)
        status = manager.reflection.status()
    found = {**report.as_dict(), "lag": status["lag"]["total"], "waiting": len(status["quarantined"])}
    emit(args, found, lambda: report_text(found, args.rebuild, args.agent))
    return 0


def entries(count: int) -> str:
    """``1 entry``, ``3 entries``."""
    return plural(count, "entry", "entries")


def retry_hint(agent: str) -> str:
    """How the user reads quarantined entries now rather than at their next try."""
    return f"tried again at their next try; `agentos reflect --agent {agent} --retry` tries them now"


def report_text(report: dict[str, Any], rebuilt: bool, agent: str) -> str:
    """What a pass did, in two or three lines."""
    reader = ("the offline backend's rules (the fallback: no model server; explicit statements only)"
              if report["fallback"] else report["reader"])
    head = "learned again from the files" if rebuilt else "reflected"
    lines = [f"{head}: {report['entries']} entries in {report['batches']} batches, read by {reader}",
             f"learned: {report['facts']} facts, {report['events']} events, {report['contradictions']} "
             "contradictions"
             + (f" ({report['agreed']} already saved explicitly)" if report["agreed"] else "")]
    if not report["fallback"]:
        lines.append(f"model calls: {report['calls']}, replies unusable: {report['failed']}, repaired: "
                     f"{report['repaired']}, batches split: {report['split']}, entries quarantined: "
                     f"{report['quarantined']}, values rejected (not in their entries): {report['rejected']}")
    if report["released"]:
        lines.append(f"quarantined entries read after all: {report['released']}")
    if report["stopped"]:
        lines.append(f"stopped early: {report['stopped']}")
    waiting = report.get("waiting", 0)
    lines.append(f"left to read: {report['lag']}" + (
        f"; quarantined: {entries(waiting)} ({retry_hint(agent)}; --status lists them)" if waiting else ""))
    return "\n".join(lines)


def status_text(agent: str, status: dict[str, Any]) -> str:
    """How far reflection is, for a person."""
    lag, learned = status["lag"], status["learned"]
    lines = [f"reflection of {agent}: enabled {status['enabled']}, backend {status['backend']}"
             + (", running" if status["running"] else ""),
             f"to read: {lag['log']} LOG.md entries (read up to #{status['log_mark']} of "
             f"#{status['last_seq']}), {lag['messages']} messages, {lag['notes']} notes",
             f"learned: {learned['facts']} facts, {learned['events']} events, "
             f"{learned['contradictions']} contradictions"]
    for model, counts in status["models"].items():
        lines.append(f"{model}: {counts['calls']} calls, {counts['failed']} unusable replies "
                     f"({counts['failure_rate']:.1%}), {counts['split']} splits, "
                     f"{counts['quarantined']} quarantined, {counts['rejected']} values rejected, "
                     f"{counts['entries']} entries read, last {counts['last_at']}")
    if status["last_error"]:
        lines.append(f"last error: {status['last_error']}")
    if status["quarantined"]:
        lines.append(f"quarantined: {entries(len(status['quarantined']))} whose replies could not be used, "
                     f"{retry_hint(agent)}:")
        lines += [
            f"  {q['item']}  {plural(q['attempts'], 'attempt')}, next try "
            f"{q['next_try'][:16].replace('T', ' ')}: "
            f"{q['reason'][:160]}"
            for q in status["quarantined"]
        ]
    return "\n".join(lines)
