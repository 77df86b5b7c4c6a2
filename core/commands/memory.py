"""Subcommands that read an agent's memory: now, log, facts, recall."""

from __future__ import annotations

import argparse

from core.commands.base import AGENT, JSON, arg, command, emit, open_memory
from core.memory.cold_store import KINDS
from core.memory.facts import CATEGORIES
from core.spinner import progress


@command("now", AGENT, JSON)
def now(args: argparse.Namespace) -> int:
    """Print NOW.md: what the agent is doing and its plan (--json: the parsed fields)."""
    with open_memory(args.agent) as manager:
        emit(args, manager.read_now(), lambda: manager.paths.now_file.read_text(encoding="utf-8").rstrip())
    return 0


@command("log", AGENT, arg("-n", "--last", type=int, default=20, metavar="N", help="how many entries (default 20)"),
         JSON)
def log(args: argparse.Namespace) -> int:
    """Print the last LOG.md entries, oldest first."""
    with open_memory(args.agent) as manager:
        entries = manager.read_log(args.last)
    emit(args, entries, lambda: "\n".join(f"#{e['seq']} {e['ts']} {e['type']}: {e['content']}" for e in entries)
         or "(no entries)")
    return 0


@command("facts", AGENT, arg("--category", choices=CATEGORIES, help="only this category"), JSON)
def facts(args: argparse.Namespace) -> int:
    """List the agent's facts (a secret's value is shown as [REDACTED])."""
    with open_memory(args.agent) as manager:
        found = manager.list_facts(args.category)
    emit(args, found, lambda: "\n".join(f"{f['key']} ({f['category']}): {f['value']}" for f in found) or "(no facts)")
    return 0


@command("recall", AGENT, arg("query", help="what to look for, in plain words"),
         arg("-n", "--results", type=int, default=5, metavar="N", help="how many results (default 5)"),
         arg("--kind", choices=KINDS, help="only this kind of memory"), JSON)
def recall(args: argparse.Namespace) -> int:
    """Search the agent's long-term memory (archived log, facts, notes) by meaning and words; best first."""
    with open_memory(args.agent) as manager, progress("searching memory"):
        found = manager.recall_memory(args.query, n_results=args.results, kind=args.kind)
    emit(args, found, lambda: "\n".join(
        f"{hit['score']:.4f} {hit['kind']} {hit['source']}\n  {hit['content']}" for hit in found) or "(nothing found)")
    return 0
