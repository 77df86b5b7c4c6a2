"""Subcommands that maintain an agent's memory: compact-log, compact-session, rebuild-index, and the copies
between SQLite and PostgreSQL (copy-to-postgres, copy-to-sqlite)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from core.commands.base import AGENT, arg, command, open_memory
from core.memory.compaction import CompactionReport
from core.memory.upkeep import rebuild_all
from core.paths import existing_agent
from core.terminal import Spinner, seconds, tqdm


@command("compact-log", AGENT,
         arg("--dry-run", action="store_true", help="show what would be archived; change nothing"),
         arg("--force", action="store_true", help="compact even below the size/entry thresholds"),
         arg("--summary", metavar="TEXT", help="use this summary text instead of summarising"))
def compact_log(args: argparse.Namespace) -> int:
    """Compact LOG.md now: archive its entries, keep one SUMMARY entry, index the archive.

    The summary is written by the configured Ollama model; with no LLM reachable the
    deterministic extractive summary is used, and the output says so. Running it again
    after a crash finishes the interrupted compaction.
    """
    # A dry run indexes nothing, so it shows no bar; a bar is only drawn on a terminal (disable=None).
    with open_memory(args.agent) as manager, tqdm(desc="indexing", unit=" memories", leave=False,
                                                  disable=True if args.dry_run else None) as bar:
        report = manager.compaction.compact(args.summary, force=args.force, dry_run=args.dry_run,
                                            progress=bar.update)
    print(compaction_text(report, args.dry_run))
    return 0


def compaction_text(report: CompactionReport, dry_run: bool) -> str:
    """What a LOG.md compaction did (or, in a dry run, would do)."""
    lines = [f"finished an interrupted compaction: {archive}" for archive in report.recovered]
    if dry_run:
        lines.append(f"dry run: {report.reason or 'nothing to do'}")
        if report.archive_id:
            lines.append(f"  entries: {report.entries} (seq {report.first_seq}-{report.last_seq})")
            lines.append(f"  LOG.md size: {report.bytes_before} bytes; archive would be "
                         f"{report.archive_path}")
        return "\n".join(lines)
    if not report.done:
        lines.append(f"nothing compacted: {report.reason}"
                     + (" (use --force)" if "threshold" in report.reason else ""))
    else:
        lines.append(f"entries archived: {report.entries} (seq {report.first_seq}-{report.last_seq})"
                     + (" [resumed an interrupted run]" if report.resumed else ""))
        lines.append(f"LOG.md size: {report.bytes_before} -> {report.bytes_after} bytes")
        lines.append(f"archive: {report.archive_path}")
        note = (
            " (extractive summary of the source: no model, or memory.compact_summarizer: deterministic)"
            if report.summary_method == "deterministic"
            else ""
        )
        lines.append(f"summary: {report.summary_method}{note}")
    lines.append(f"memories indexed for recall: {report.docs_indexed} (vectors follow in the background)")
    if report.index_error:
        lines.append(f"cold store not updated (retried at the next start): {report.index_error}")
    return "\n".join(lines)


@command("compact-session", AGENT, arg("--session", default="main", help="session name (default: main)"),
         arg("--backend", choices=("auto", "ollama", "openai", "offline"),
             help="model server API, as for agentos run (default: llm.backend)"),
         arg("--model", help="the model for the summary (default: llm.model)"),
         arg("--host", help="the model server's address (default: llm.host)"),
         arg("--offline", action="store_true", help="summarise with the offline backend"))
def compact_session(args: argparse.Namespace) -> int:
    """Compact a conversation session now (what /compact does in the interactive mode).

    With the LCM provider the provider's full compaction runs; with Simple the model
    writes a handoff summary (Goal, Progress, Key Decisions, Files Changed, Current
    State, Blockers / Gotchas, Next Steps) that replaces all but the last
    compaction.keep_tail messages. On failure the session is left untouched.
    """
    existing_agent(args.agent)
    from core.engine import Engine  # the engine's imports are only paid by the commands that need it

    with Engine(args.agent, session=args.session, offline=args.offline, model=args.model, host=args.host,
                backend_name=args.backend, new_session=False) as engine:
        print(engine.notice, file=sys.stderr)
        try:
            with Spinner("compacting"):
                report = engine.compact()
        finally:
            engine.manager.close()
    print(f"Compacted session {args.agent}:{args.session} ({report.method}): "
          f"{report.tokens_before} -> {report.tokens_after} tokens")
    for extra in (report.details, report.summary):
        if extra:
            print(extra)
    return 0


@command("rebuild-index", AGENT)
def rebuild_index(args: argparse.Namespace) -> int:
    """Recreate an agent's indexes from its files (use it after changing cold.embedder).

    log_metadata comes from LOG.md and the archives, the compaction history from the
    SUMMARY entries, and recall's index and the LanceDB vectors from LOG.md, the
    archives, facts, notes, conversations and store items, embedded with the configured
    embedder (forgotten memories stay forgotten). It ends by optimizing the table, which
    builds the approximate vector index once it holds cold.ann_min_rows memories.
    """
    with open_memory(args.agent) as manager, tqdm(desc="embedding", unit=" memories", disable=None) as bar:
        started = time.monotonic()  # the bar's own clock does not run when there is no terminal to draw on
        result = rebuild_all(manager.tiers, progress=bar.update, total=lambda count: _set_total(bar, count))
        elapsed = time.monotonic() - started
    print(f"log_metadata rows: {result.log_rows}")
    print(f"compactions recorded: {result.compactions}")
    print(f"memories embedded: {result.memories} in {seconds(elapsed)} "
          f"({result.memories / max(elapsed, 1e-3):.0f} memories/s, embedder {result.embedder})")
    index, min_rows = result.vector_index, manager.config.cold.ann_min_rows
    if index is not None:
        print(f"vector index: {index['type']} over {index['indexed_rows']} memories")
    elif min_rows and result.memories >= min_rows:
        print("vector index: none, its build failed (see the log): vector search is exact")
    else:
        print(f"vector index: none, vector search is exact (cold.ann_min_rows = {min_rows})")
    return 0


def _set_total(bar: Any, count: int) -> None:
    bar.total = count
    bar.refresh()


@command("copy-to-postgres", AGENT)
def copy_to_postgres(args: argparse.Namespace) -> int:
    """Copy an agent's memory.db into its PostgreSQL schema, to move an existing agent to a server.

    Set $AGENTOS_DSN (or storage.backend postgres) first, and stop the agent's engine. Every
    table is copied in one transaction into the agent's schema, which must be empty (or hold
    an older copy made before a copy-to-sqlite); memory.db is left as it was, and from then
    on the agent opens on PostgreSQL only. Stopped midway, it is run again to finish.
    NOW.md, LOG.md and the cold store stay in the agent's folder.
    """
    from core.config import load_config
    from core.memory.storage import to_postgres

    paths = existing_agent(args.agent)
    counts, db = to_postgres(paths, load_config(paths).storage)
    for table, rows in counts.items():
        print(f"{table}: {rows} rows")
    print(f"copied {paths.db_file} into schema {db.schema} of {db!r}; the agent's memory lives there now")
    return 0


@command("copy-to-sqlite", AGENT)
def copy_to_sqlite(args: argparse.Namespace) -> int:
    """Copy an agent's PostgreSQL schema back into its memory.db, to keep it in SQLite again.

    Run it with $AGENTOS_DSN (or storage.backend postgres) still set, and with the agent's
    engines stopped. A new memory.db is built beside the old one from one snapshot of the
    schema and then takes its place (an older memory.db, left by copy-to-postgres, is
    replaced); the schema is left as it was. Then unset $AGENTOS_DSN: the agent opens on
    SQLite only. Stopped midway, it is run again to finish.
    """
    from core.config import load_config
    from core.memory.storage import to_sqlite

    paths = existing_agent(args.agent)
    counts, db = to_sqlite(paths, load_config(paths).storage)
    for table, rows in counts.items():
        print(f"{table}: {rows} rows")
    print(f"copied schema {db.schema} of {db!r} into {paths.db_file}; the agent's memory lives there now: "
          "unset $AGENTOS_DSN (and storage.backend) to run it")
    return 0
