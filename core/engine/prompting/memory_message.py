"""The text of the memory message: the learned profile, the LOG.md entries, NOW.md and the facts, read before
every planner call.

It stands after the earlier turns of the prompt, before the newest ones and the turn's request, and stays
there as it was while it says nothing new (see :mod:`core.engine.prompting.anchor`): the run's own log entries
stay out of it (the prompt's conversation shows the run's tool calls and results), and :class:`MemoryView`
keeps what it says apart from what changes at every run (NOW's version and time). It says each thing once. The
user's requests are in the conversation: NOW's objective points to this turn's request, the log entries that
repeat a request the prompt shows point to the conversation, a RUN_START points to the USER_FEEDBACK entry
that logs the same request, and times show the time of day (the date once, in the title, unless a time is on
another day).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.llm import THIS_REQUEST, estimate_tokens
from core.memory import (
    ENTRY_PREVIEW_CHARS,
    LogEntry,
    MemoryManager,
    fit_lines,
    fit_newest,
    more_facts_note,
    render_fact,
    render_now,
)

PROFILE_TITLE = "## About the user (learned from the facts; [key] names each line's fact)"
PROFILE_SHARE = 0.15
"""Share of the memory budget the learned profile may take (its facts are not listed again under Facts)."""
TAIL_ENTRIES = 12
"""LOG.md entries always shown, besides those written since NOW."""
SINCE_ENTRIES = 60
"""Most entries shown from those written since NOW."""
MIN_REPEAT_CHARS = len(THIS_REQUEST)
"""Shorter texts are shown again: a pointer would be as long."""
REPEATED_IN = "(the request logged in #{seq})"
IN_CONVERSATION = "(that turn's request: the user's message in the conversation)"


@dataclass(frozen=True)
class MemoryView:
    """The memory message and what it says, for telling whether a later one says something else."""

    text: str
    """The memory message (secrets not yet redacted)."""
    now: tuple[str, ...]
    """NOW's lines without its version and time (what the engine's own bookkeeping changes every run)."""
    facts: dict[str, str]
    """Every fact's line by its key (also those the budget left out of :attr:`text`)."""
    profile: tuple[str, ...]
    """The learned profile's lines."""
    entries: tuple[LogEntry, ...]
    """The newest LOG.md entries read (the memory shows some of them)."""


def memory_context(manager: MemoryManager, max_tokens: int, request: str = "",
                   earlier: tuple[str, ...] = (), until: int = 0) -> str:
    """The text of :func:`memory_view`."""
    return memory_view(manager, max_tokens, request, earlier, until).text


def memory_view(manager: MemoryManager, max_tokens: int, request: str = "",
                earlier: tuple[str, ...] = (), until: int = 0) -> MemoryView:
    """The LOG.md entries (the tail, and those since NOW was written), NOW.md and the facts, within
    ``max_tokens`` (the caller redacts the secrets and forgotten values; the entries a FORGET named are left
    out here).

    ``request`` is this turn's request and ``earlier`` the requests the prompt's conversation shows (this
    turn's among them when the memory stays in the prompts of later turns: its entries then point to the
    conversation, NOW's objective to "this turn's request" whichever turn that is); ``until`` (when set) is
    the last entry shown: those written after it are the run's own steps, which the prompt's conversation
    shows.
    """
    now = manager.now_state()
    read = manager.visible_log(TAIL_ENTRIES + SINCE_ENTRIES)
    entries = [e for e in read if e.seq <= until] if until else read
    since = [e for e in entries if e.seq > now.log_seq][-SINCE_ENTRIES:]
    tail = [e for e in entries if e.seq <= now.log_seq][-TAIL_ENTRIES:]
    day = (entries[-1].ts if entries else now.updated_at or "")[:10]
    rendered = entry_lines([*tail, *since], request, earlier, day)
    shown = replace(now, updated_at=_stamp(now.updated_at, day)) if now.updated_at else now
    # The objective points to this turn's request however short it is: it then reads the same at every turn
    # that takes up a new request, and the memory message, sent again as it was, stays true.
    now_lines = [f"objective: {THIS_REQUEST}"
                 if line.startswith("objective: ") and repeats(now.objective, request, 1)
                 else line for line in render_now(shown)]
    title = f"# Memory (times UTC, on {day} unless dated)" if day else "# Memory"
    head = [title, "", "## NOW (NOW.md: current objective and plan)", *now_lines]
    budget = max_tokens - estimate_tokens("\n".join(head))
    learned = manager.reflection.profile()
    profile_lines = fit_lines([line.text for line in learned], max(0, int(budget * PROFILE_SHARE)))
    budget -= estimate_tokens("\n".join(profile_lines)) + (10 if profile_lines else 0)
    shown = {line.key for line in learned[:len(profile_lines)]}
    every_fact = {f.key: render_fact(f) for f in manager.facts.list()}
    facts = [line for key, line in every_fact.items() if key not in shown]
    fact_lines = fit_lines(facts, max(0, int(budget * 0.3)))
    budget -= estimate_tokens("\n".join(fact_lines)) + 30
    since_lines = fit_newest(rendered[len(tail):], int(budget * 0.75))
    budget -= estimate_tokens("\n".join(since_lines))
    tail_lines = fit_newest(rendered[:len(tail)], budget)
    # From what stays the same through a run to what a step may change, so that a step's prompt shares the
    # memory with the previous step's up to that change: the learned profile (reflection refreshes it
    # between runs), the log (the run's own entries stay out), NOW (update_status), the facts (save_fact).
    parts = [title, ""]
    if profile_lines:
        parts += [PROFILE_TITLE, *profile_lines, ""]
    parts += ["## Earlier activity (LOG.md tail)", *(tail_lines or ["(none)"])]
    parts += ["", f"## Log since NOW was written (LOG.md after #{now.log_seq})",
              *(since_lines or ["(nothing since)"])]
    parts += ["", *head[2:]]
    parts += ["", "## Facts (secrets hidden: call get_fact)", *(fact_lines or ["(none saved)"])]
    if len(fact_lines) < len(facts):
        parts.append(more_facts_note(len(facts) - len(fact_lines)))
    bookkept = [line.split(" (version ")[0] if line.startswith("status: ") else line for line in now_lines]
    return MemoryView("\n".join(parts), tuple(bookkept), every_fact, tuple(line.text for line in learned),
                      tuple(read))


def entry_lines(entries: list[LogEntry], request: str, earlier: tuple[str, ...], day: str) -> list[str]:
    """The entries as prompt lines, oldest first; one that repeats this turn's request (unless it is among
    the ``earlier`` ones), the request the next entry logs, or an ``earlier`` request, points to it
    instead."""
    lines = []
    for n, entry in enumerate(entries):
        following = entries[n + 1] if n + 1 < len(entries) else None
        if repeats(entry.content, request) and request not in earlier:
            entry = replace(entry, content=THIS_REQUEST)
        elif following is not None and repeats(entry.content, following.content):
            entry = replace(entry, content=REPEATED_IN.format(seq=following.seq))
        elif any(repeats(entry.content, text) for text in earlier):
            entry = replace(entry, content=IN_CONVERSATION)
        lines.append(entry_line(entry, day))
    return lines


def entry_line(entry: LogEntry, day: str) -> str:
    """One entry as a prompt line: its time of day (with the date when not ``day``), its text shortened."""
    text = " ".join(entry.content.split())
    if len(text) > ENTRY_PREVIEW_CHARS:
        text = text[: ENTRY_PREVIEW_CHARS - 1] + "…"
    return f"- #{entry.seq} {_stamp(entry.ts, day)} {entry.type}: {text}"


def _stamp(ts: str, day: str) -> str:
    """An ISO time as its time of day when it falls on ``day``, else as it is."""
    return ts[11:19] if ts[:10] == day and len(ts) >= 19 else ts


def repeats(text: str, original: str, min_chars: int = MIN_REPEAT_CHARS) -> bool:
    """True when ``text`` is ``original``, or a shortened preview of it (whitespace aside), at least
    ``min_chars`` long (by default: long enough for a pointer to save room)."""
    short = " ".join(text.split()).rstrip("…").rstrip()
    return len(short) >= min_chars and " ".join(original.split()).startswith(short)
