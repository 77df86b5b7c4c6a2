"""Subcommands that read an agent's memory (now, log, facts, recall) and forget from it (forget)."""

from __future__ import annotations

import argparse
import sys

from core.commands import recall_text
from core.commands.base import AGENT, JSON, arg, command, emit, open_memory, read_memory, whole_number
from core.errors import NotFoundError, ValidationError
from core.memory.storage import CATEGORIES
from core.memory.recall import KINDS, MAX_RECENCY_DAYS, MAX_RESULTS
from core.memory.upkeep import forgetting
from core.terminal import progress, prompt_shown, visible


@command("now", AGENT, JSON)
def now(args: argparse.Namespace) -> int:
    """Print NOW.md: what the agent is doing and its plan (--json: the parsed fields)."""
    with read_memory(args.agent) as memory:
        emit(args, memory.read_now(), lambda: memory.paths.now_file.read_text(encoding="utf-8").rstrip())
    return 0


@command("log", AGENT,
         arg("-n", "--last", type=whole_number(0), default=20, metavar="N",
             help="how many entries (default 20)"),
         JSON)
def log(args: argparse.Namespace) -> int:
    """Print the last LOG.md entries, oldest first."""
    with read_memory(args.agent) as memory:
        entries = memory.read_log(args.last)
    emit(args, entries,
         lambda: "\n".join(f"#{e['seq']} {e['ts']} {e['type']}: {e['content']}" for e in entries)
         or "(no entries)")
    return 0


@command("facts", AGENT, arg("--category", choices=CATEGORIES, help="only this category"),
         arg("--history", metavar="KEY", help="the values this fact has held, newest first"), JSON)
def facts(args: argparse.Namespace) -> int:
    """List the agent's facts, or with --history one fact's values, newest first (a secret's value is shown as
    [REDACTED], and so are the earlier values of a fact while it is secret)."""
    if args.history is not None:
        if args.category is not None:
            raise ValidationError("--history lists one fact's values: leave out --category")
        return _fact_history(args)
    with read_memory(args.agent) as memory:
        found = memory.list_facts(args.category)
    emit(args, found,
         lambda: "\n".join(f"{f['key']} ({f['category']}): {f['value']}" for f in found) or "(no facts)")
    return 0


def _fact_history(args: argparse.Namespace) -> int:
    with read_memory(args.agent) as memory:
        hide = memory.facts.redactor()
        found = [hide(v.as_dict()) for v in memory.facts.history(args.history)]
    if not found:
        raise NotFoundError(f"no fact is stored under {args.history!r}: agentos facts --agent {args.agent} "
                            "lists them")
    emit(args, found, lambda: "\n".join(
        f"{v['saved_at']}  {v['value']} ({v['category']})" + ("  current" if v["replaced_at"] is None else "")
        for v in found))
    return 0


def _score(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _days(text: str) -> float:
    value = float(text)
    if not 0 < value <= MAX_RECENCY_DAYS:  # NaN and infinity too
        raise argparse.ArgumentTypeError(f"must be a number of days above 0 and at most {MAX_RECENCY_DAYS}, "
                                         f"got {text}")
    return value


@command("recall", AGENT,
         arg("query", nargs="?", help="what to look for, in plain words (none: list what happened between "
                                      "--since and --until, newest first)"),
         arg("-n", "--results", type=whole_number(1, MAX_RESULTS), metavar="N",
             help="how many results at most (default 5; when listing a time window, 20)"),
         arg("--kind", choices=KINDS, action="append", help="only this kind of memory (repeat for several)"),
         arg("--min-score", type=_score, metavar="X", help="leave out results below this relevance, 0-1 "
                                                           "(default: cold.min_score)"),
         arg("--since", metavar="DATE",
             help="only what happened from this date on, e.g. 2023-05-08, '8 May 2023' or 'last week' (from "
                  "its start)"),
         arg("--until", metavar="DATE", help="only what happened up to this date ('last week': to its end)"),
         arg("--recency-days", type=_days, metavar="DAYS", help="favour recent memories: a score halves for "
                                                                "every DAYS of age"),
         arg("--space", action="append", metavar="NAME",
             help="search this memory space too (repeat for several; default: every space of the agent)"),
         arg("--no-spaces", action="store_true", help="search the agent's own memory only"),
         arg("--explain", action="store_true", help="say why each result ranked and what was left out"),
         JSON)
def recall(args: argparse.Namespace) -> int:
    """Search everything the agent remembers (LOG.md, archives, notes, facts, conversations, store items).

    Results are best first, each with a score from 0 to 1 (the chance it is relevant), its
    kind and tier, and where the original is. A query about nothing returns nothing. With no
    query, lists what happened between --since and --until, newest first. --explain shows each
    result's evidence (words matched, vector similarity, features, kind, recency, supersession)
    and what was left out (below --min-score, duplicates, superseded, forgotten, expired).
    """
    with read_memory(args.agent, recall=True) as memory, progress("searching memory"):
        if args.query is not None:
            memory.warm_up()  # the model loads while the query's words are searched
        default = 5 if args.query is not None else 20
        found = memory.recall_memory(args.query, n_results=default if args.results is None else args.results,
                                      kind=args.kind, since=args.since, until=args.until,
                                      min_score=args.min_score,
                                      recency_days=args.recency_days,
                                      spaces=[] if args.no_spaces else args.space,
                                      explain=args.explain)
    if args.query is None:
        emit(args, found, lambda: recall_text.window_text(found))
    else:
        emit(args, found,
             lambda: recall_text.explained_text(found) if args.explain else recall_text.hits_text(found))
    warning = found.get("warning") if isinstance(found, dict) else found.warning
    if warning:  # on stderr, so that --json output stays one JSON document
        print(f"warning: {warning}", file=sys.stderr)
    return 0


@command("forget",
         arg("--agent", metavar="NAME", help="the agent, e.g. finn (for a space's memory: its author)"),
         arg("--admin", action="store_true",
             help="forget space memories (space:NAME:SEQ) whoever published them"),
         arg("--space", metavar="NAME",
             help="with --purge: the space whose forgotten memories' text to purge"),
         arg("ids", nargs="*", metavar="ID", help="memory ids as recall shows them, e.g. note:3f2a..."),
         arg("--query", metavar="TEXT",
             help="forget the memories that say every word of TEXT (stop words aside)"),
         arg("--meaning-above", type=_score, metavar="X",
             help="with --query: forget instead the memories closer in meaning to TEXT than X (cosine, e.g. "
                  "0.6)"),
         arg("--before", metavar="DATE",
             help="forget what happened before this date, e.g. 2023-05-08 or '30 days ago'"),
         arg("--kind", choices=KINDS, action="append", help="only this kind of memory (repeat for several)"),
         arg("--limit", type=whole_number(1, forgetting.MAX_LIMIT), default=100, metavar="N",
             help="forget at most N memories (default 100)"),
         arg("--purge", action="store_true",
             help="also take forgotten facts' values out of LOG.md, the archives and the indexes (a space's: "
                  "its forgotten memories' text out of its journal and index)"),
         arg("--dry-run", action="store_true",
             help="list what would be forgotten, and why, and forget nothing"),
         arg("-y", "--yes", action="store_true",
             help="do not ask for confirmation (what is forgotten is listed)"),
         JSON)
def forget(args: argparse.Namespace) -> int:
    """Forget memories by id, or those that say every word of --query (or are closer in meaning to it than
    --meaning-above) and/or happened before --before.

    Lists each memory with why it was taken (the words it says, or its similarity) and asks first (unless
    --yes; --dry-run only lists). The records of one thing (a request kept in LOG.md and in the conversation)
    are listed together and forgotten together. Forgotten memories leave recall and memory.db; LOG.md gets a
    FORGET entry naming their ids, never their text, and rebuild-index does not bring them back. Summaries,
    NOW.md, prompts and recall no longer show a forgotten fact's value; LOG.md and the archives keep it as the
    record, unless --purge rewrites them without it (alone, --purge does that for earlier forgets). A space's
    memories (space:NAME:SEQ) are forgotten by their author or --admin; --space NAME --purge takes the text of
    its forgotten memories out of its journal and index.
    """
    if args.ids and (args.query or args.before):
        raise ValidationError("give memory ids, or --query and/or --before, not both")
    if args.meaning_above is not None and not args.query:
        raise ValidationError("--meaning-above goes with --query TEXT: the memories closer in meaning to "
                              "TEXT")
    if args.admin or args.space or any(i.startswith("space:") for i in args.ids):
        if args.dry_run:  # never ignored: a space's forget would go ahead
            raise ValidationError("--dry-run lists what a forget of an agent's own memories takes; a space's "
                                  "memories (space:NAME:SEQ) are forgotten by id, without it")
        from core.commands.spaces import forget_shared

        return forget_shared(args)
    if not args.agent:
        raise ValidationError("say whose memory: --agent NAME (--admin only forgets space memories)")
    if not (args.ids or args.query or args.before):
        if not args.purge:
            raise ValidationError("say what to forget: memory ids, --query TEXT or --before DATE "
                                  "(or --purge)")
        with open_memory(args.agent) as manager:
            report = manager.purge_forgotten()
        emit(args, {"forgotten": [], "count": 0, "purged": _purged(report)}, _purged_text(report))
        return 0
    with open_memory(args.agent) as manager:
        chosen = manager.forget_memories(query=args.query, before=args.before, ids=args.ids or None,
                                         kind=args.kind,
                                         meaning_above=args.meaning_above, limit=args.limit, dry_run=True)
        unknown = [i for i in args.ids if i not in chosen]
        if unknown and not chosen:
            raise NotFoundError(f"no memory with id {', '.join(unknown)}: agentos recall shows the ids")
        if unknown:
            print(f"no memory with id {', '.join(unknown)}: left out", file=sys.stderr)
        listed = {"forgotten": [], "count": 0, "matched": chosen.matched, "more": chosen.more}
        if args.dry_run or not chosen:
            emit(args, {**listed, **({"dry_run": True} if args.dry_run else {})},
                 lambda: recall_text.forgotten_text(chosen, "dry run" if chosen else "none"))
            return 0
        answer = True if args.yes else _confirmed(chosen)
        if not answer:  # declining is an answer, not an error
            emit(args, {**listed, "confirmed": False}, "nothing forgotten" + (
                "" if answer is False
                else " (no answer: standard input is closed; add --yes to forget without asking)"))
            return 0
        forgotten = manager.forget_memories(ids=list(chosen))
        forgotten.matched, forgotten.more = chosen.matched, chosen.more
        report = manager.purge_forgotten() if args.purge else None
    result = forgotten.as_dict()
    text = recall_text.forgotten_text(forgotten, "forgot" if args.yes else "confirmed")
    if report is not None:
        result["purged"] = _purged(report)
        text += "\n" + _purged_text(report)
    emit(args, result, text)
    return 0


def _purged(report) -> dict:
    """What a purge rewrote (names and counts, never a value)."""
    return {"keys": report.keys, "log_lines": report.log_lines, "archives": sorted(report.archives),
            "now": report.now_rewritten, "files": report.files, "rows": sum(report.rows.values()),
            "cold_rows": report.cold_rows, "deferred": report.deferred}


def _purged_text(report) -> str:
    done = (f"purged the values of {len(report.keys)} forgotten fact(s): {report.log_lines} LOG.md lines, "
            f"{len(report.archives)} archives, {sum(report.rows.values())} memory.db rows, "
            f"{report.cold_rows} cold store rows rewritten")
    if report.deferred:
        done += f" (not finished: {report.deferred}; it resumes at the next open)"
    return done


def _confirmed(chosen) -> bool | None:
    """Show the memories about to be forgotten, and why, and ask: True for a yes, False for another answer,
    None when no answer can come (standard input is closed)."""
    print(visible(recall_text.forgotten_text(chosen, "asking")), file=sys.stderr)
    with prompt_shown():
        print("Forget them? [y/N] ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
    return None if not line else line.strip().lower() in ("y", "yes")
