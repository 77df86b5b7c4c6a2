"""Versions of one memory: a later version ranks above the earlier ones, which stay recallable as history.

The rule is explicit, so it never mistakes two different memories for versions of one: notes stored
with the same metadata ``key`` are versions of the same memory (``subject`` ``note:<key>`` in
``recall_docs``), ordered by when they happened, then by when they were stored. Each earlier version is
superseded by the next: it is kept, recalled with ``superseded_by`` (the next version's id and time),
its score is multiplied by :data:`SUPERSEDED_FACTOR` and it ranks below every later version that the
same recall found. Similar wording alone is not taken as a restatement: "my sister moved to Lyon"
does not supersede "I moved to Lyon", and a rule that tells them apart from words and vectors would
silently hide true memories when it errs. A fact's earlier values (``fact_version:<id>``, see
:mod:`core.memory.storage.facts`) are versions of it the same way: ``subject`` ``fact:<key>``.

Versions are read from ``recall_docs`` at each recall, so forgetting the latest version makes the one
before it current again, and a rebuilt index gives the same answer.
"""

from __future__ import annotations

from typing import Any, Iterable

from core.memory.files.log_format import utc_timestamp
from core.memory.recall.docs import Doc
from core.memory.recall.search import Candidate

SUPERSEDED_FACTOR = 0.5
"""What a superseded memory's score is multiplied by (it also stays below its later versions)."""


def successors(conn: Any, docs: Iterable[Doc]) -> dict[str, tuple[str, str]]:
    """For each of ``docs`` that a later version supersedes: ``(the next version's id, its occurred_at)``."""
    later: dict[str, tuple[str, str]] = {}
    now = utc_timestamp()
    for subject in sorted({d.subject for d in docs if d.subject}):
        rows = conn.execute(
            "SELECT id, occurred_at FROM recall_docs WHERE subject = ? AND (expires_at IS NULL OR expires_at "
            "> ?) ORDER BY occurred_at, rowid", (subject, now)).fetchall()
        for (older, _), (newer, at) in zip(rows, rows[1:]):
            later[older] = (newer, at)
    return later


def demote(conn: Any, cands: list[Candidate]) -> list[Candidate]:
    """``cands`` with every superseded version marked and scored below its later versions, best first."""
    later = successors(conn, (c.doc for c in cands))
    if not later:
        return cands
    by_subject: dict[str, list[Candidate]] = {}
    for cand in cands:
        if cand.doc.id in later:
            cand.superseded_by = later[cand.doc.id]
            cand.factors["superseded"] = SUPERSEDED_FACTOR
            cand.score *= SUPERSEDED_FACTOR
        if cand.doc.subject:
            by_subject.setdefault(cand.doc.subject, []).append(cand)
    for versions in by_subject.values():
        versions.sort(key=lambda c: (c.doc.occurred_at, c.doc.rowid), reverse=True)
        ceiling = versions[0].score
        for cand in versions[1:]:  # newest to oldest: each strictly below the one after it in time
            cand.score = min(cand.score, ceiling * 0.999)
            ceiling = cand.score
    return sorted(cands, key=lambda c: c.score, reverse=True)


def marked(hit: dict[str, Any], superseded_by: tuple[str, str] | None) -> dict[str, Any]:
    """``hit`` with ``superseded_by: {id, occurred_at}`` when a later version supersedes it."""
    if superseded_by is not None:
        hit["superseded_by"] = {"id": superseded_by[0], "occurred_at": superseded_by[1]}
    return hit
