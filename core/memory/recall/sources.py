"""Turn each tier's records into recall docs: notes, facts, LOG.md entries, messages, summaries, store items.

Every builder gives a memory what it needs to be found: when it happened
(``occurred_at``), who said it (``speaker``), the session or conversation it
belongs to (``thread``: its neighbours share it) and a ``context`` of words
indexed beside its text (the speaker, the day written the ways people ask for
it, and relative dates such as "yesterday" resolved against the day it was
said). Secret values are redacted at this boundary too, and secret facts are
never turned into docs.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime
from typing import Any, Callable, Sequence

from core.errors import ValidationError, shown
from core.memory.storage.extracted import Provenance
from core.memory.storage.facts import redact
from core.memory.files.log_format import LogEntry, check_depth, check_text, utc_timestamp
from core.memory.recall.views.results import Refused
from core.memory.recall.docs import Doc
from core.memory.recall.when import day_words, parse_time, relative_dates

SPEAKER_KEYS = ("speaker", "role", "author", "user", "name")
"""Metadata keys that name who said a note (the first one present wins)."""
THREAD_KEYS = ("conversation", "conversation_id", "session", "session_id", "thread")
"""Metadata keys that name the conversation or session a note belongs to."""
DATE_KEYS = ("occurred_at", "date", "time", "timestamp", "datetime", "date_time")
"""Metadata keys that say when a note happened (ISO-8601 or written like "1:56 pm on 8 May, 2023")."""
UNINDEXED_TYPES = frozenset({"NOW_UPDATE", "STEP_START", "STEP_END", "INTERRUPTED", "SUMMARY", "FORGET",
                             "FACT"})
"""LOG.md entry types that are bookkeeping, not memories (a SUMMARY is indexed as its compaction's summary, a
FACT record as the fact itself, whose current value alone is recalled)."""
MESSAGE_ROLES = ("user", "assistant")

log = logging.getLogger(__name__)

NOTE_KINDS = ("note", "summary")
"""Kinds ``store_memory`` accepts; the other kinds come from their sources."""
NOTE_FIELDS = ("content", "metadata", "kind", "occurred_at", "expires_at")
"""The keys of one item of ``store_memories``."""
LISTED = 5
"""Refused items named in an error message, at most."""


def occurred_from(metadata: dict[str, Any], explicit: Any = None) -> str | None:
    """When a note happened: ``explicit`` (``occurred_at``), else a date in its metadata, else None.

    Raises:
        ValidationError: ``occurred_at`` (argument or metadata key) cannot be read as a time.
    """
    if explicit is not None:
        return utc_timestamp(parse_time(explicit, "occurred_at"))
    if metadata.get("occurred_at") is not None:
        return utc_timestamp(parse_time(metadata["occurred_at"], "metadata 'occurred_at'"))
    for key in DATE_KEYS[1:]:
        value = metadata.get(key)
        if isinstance(value, (str, datetime)) and str(value).strip():
            try:
                return utc_timestamp(parse_time(value, f"metadata {key!r}"))
            except ValidationError as exc:
                # A free-form "date" such as "tbd" is kept as metadata, not read as a time; said aloud,
                # because the memory is then dated when it was stored.
                log.warning("memory dated when stored: %s", exc)
                continue
    return None


def _first_text(metadata: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return ""


def thread_of(metadata: dict[str, Any]) -> str:
    """The session a note belongs to: its conversation/session keys, with the day it was said."""
    parts = [f"{k}={metadata[k]}" for k in THREAD_KEYS if isinstance(metadata.get(k), (str, int))
             and not isinstance(metadata.get(k), bool)]
    date = _first_text(metadata, ("date",))
    if parts or date:
        return " ".join(parts + ([f"date={date}"] if date else []))
    return ""


def context_words(speaker: str, occurred_at: str, text: str) -> str:
    """The words indexed beside a memory: its speaker, its day and the dates its relative words mean."""
    moment = datetime.fromisoformat(occurred_at.replace("Z", "+00:00"))
    words = [speaker, day_words(moment), *relative_dates(text, moment)]
    return " ; ".join(w for w in words if w)


def content_key(kind: str, text: str, metadata_json: str, occurred_at: str | None) -> str:
    """What makes two notes the same memory: kind, words (whitespace aside), metadata and time."""
    return hashlib.sha256("\0".join((kind, " ".join(text.split()), metadata_json,
                                     occurred_at or "")).encode()).hexdigest()


def subject_of(kind: str, metadata: dict[str, Any]) -> str:
    """What a note is a version of: ``note:<key>`` for a note with a metadata ``key`` (text or number), else
    ''."""
    key = metadata.get("key")
    if kind != "note" or isinstance(key, bool) or not isinstance(key, (str, int)) or not str(key).strip():
        return ""
    return f"note:{str(key).strip()}"


def note_doc(row: Any, secrets: list[str]) -> Doc:
    """The doc of a ``cold_notes`` row."""
    metadata = redact(json.loads(row["metadata"] or "{}"), secrets)
    text = redact(row["text"], secrets)
    occurred = row["occurred_at"] or row["created_at"]
    speaker = _first_text(metadata, SPEAKER_KEYS)
    return Doc(id=f"note:{row['id']}", kind=row["kind"], tier="cold", source=f"note:{row['id']}", text=text,
               occurred_at=occurred, created_at=row["updated_at"] or row["created_at"],
               context=context_words(speaker, occurred, text), metadata=metadata, speaker=speaker,
               thread=thread_of(metadata), expires_at=row["expires_at"],
               subject=subject_of(row["kind"], metadata))


def fact_doc(row: Any, learned: Provenance | None = None) -> Doc | None:
    """The doc of a ``user_facts`` row (``learned``: where reflection learned it); None for a secret."""
    if row["category"] == "secret":
        return None
    key = row["key"]
    text = f"{key}: {row['value']}"
    metadata = {"key": key, "category": row["category"], "updated_at": row["updated_at"]}
    if learned is not None:
        metadata["extracted"] = learned.as_dict()
    return Doc(id=f"fact:{key}", kind="fact", tier="cold", source=f"fact:{key}", text=text,
               occurred_at=row["updated_at"], created_at=row["updated_at"],
               context=context_words("", row["updated_at"], ""), speaker="", metadata=metadata,
               subject=f"fact:{key}")


def event_doc(row: Any, learned: Provenance | None, secrets: list[str]) -> Doc:
    """The doc of an event reflection learned (``extracted_events``): dated when it happened, not when it was
    said."""
    text = redact(row["what"], secrets)
    metadata: dict[str, Any] = {"date_basis": row["basis"]}
    if learned is not None:
        metadata["extracted"] = learned.as_dict()
    return Doc(id=f"event:{row['id']}", kind="event", tier="cold", source=f"event:{row['id']}", text=text,
               occurred_at=row["occurred_at"],
               created_at=learned.extracted_at if learned else row["occurred_at"],
               context=context_words("", row["occurred_at"], ""), metadata=metadata)


def fact_version_docs(fact: Any, versions: Sequence[Any], secrets: list[str]) -> list[Doc]:
    """The docs of a fact's earlier values (``fact_versions`` rows): each a ``fact`` the next value
    supersedes (same ``subject``); none while the fact is secret, none for a secret's earlier value."""
    if fact["category"] == "secret":
        return []
    key = fact["key"]
    return [Doc(id=f"fact_version:{v['id']}", kind="fact", tier="cold",
                source=f"fact:{key}#version={v['id']}",
                text=redact(f"{key}: {v['value']}", secrets), occurred_at=v["saved_at"],
                created_at=v["saved_at"],
                context=context_words("", v["saved_at"], ""),
                metadata={"key": key, "category": v["category"], "updated_at": v["saved_at"],
                          "replaced_at": v["replaced_at"]}, subject=f"fact:{key}")
            for v in versions if v["value"] is not None and v["category"] != "secret"]


def log_doc(entry: LogEntry, secrets: list[str], archive_id: str | None = None) -> Doc | None:
    """The doc of one LOG.md entry (in LOG.md, or in ``archive_id`` once compacted); None for bookkeeping."""
    if entry.type in UNINDEXED_TYPES or (entry.type == "SYSTEM" and "compaction" in entry.metadata):
        return None
    text = redact(entry.content, secrets)
    if not text.strip():
        return None
    speaker = entry.type.replace("_", " ").lower()
    if archive_id:
        kind, tier, source = "log_archive", "cold", f"archive/{archive_id}.md#seq={entry.seq}"
    else:
        kind, tier, source = "log", "warm", f"LOG.md#seq={entry.seq}"
    metadata: dict[str, Any] = {"seq": entry.seq, "type": entry.type}
    if archive_id:
        metadata["archive_id"] = archive_id
    if entry.metadata:
        metadata["meta"] = redact(entry.metadata, secrets)
    return Doc(id=f"log:{entry.seq}", kind=kind, tier=tier, source=source, text=text, occurred_at=entry.ts,
               created_at=entry.ts, context=context_words(speaker, entry.ts, text), metadata=metadata,
               speaker=speaker, thread="log")


def archive_summary_doc(archive_id: str, text: str, first_seq: int, last_seq: int, created_at: str,
                        secrets: list[str]) -> Doc:
    """The summary that replaced an archive's entries in LOG.md."""
    return Doc(id=f"summary:{archive_id}", kind="summary", tier="cold",
               source=f"archive/{archive_id}.md#seq={first_seq}-{last_seq}", text=redact(text, secrets),
               occurred_at=created_at, created_at=created_at, context=context_words("", created_at, ""),
               metadata={"archive_id": archive_id, "first_seq": first_seq, "last_seq": last_seq})


def message_doc(row: Any, secrets: list[str]) -> Doc | None:
    """The doc of a conversation message (user and assistant text); None for tool traffic."""
    if row["role"] not in MESSAGE_ROLES or not row["content"].strip():
        return None
    text = redact(row["content"], secrets)
    speaker = row["role"]
    return Doc(id=f"msg:{row['id']}", kind="message", tier="conversation",
               source=f"conversation:{row['session_id']}#message={row['id']}", text=text,
               occurred_at=row["created_at"], created_at=row["created_at"],
               context=context_words(speaker, row["created_at"], text), speaker=speaker,
               thread=f"conversation={row['session_id']}",
               metadata={"conversation": row["session_id"], "message_id": row["id"], "seq": row["seq"],
                         "role": row["role"]})


def conversation_summary_doc(row: Any, secrets: list[str]) -> Doc:
    """The doc of a conversation summary (LCM's leaf and condensed summaries)."""
    return Doc(id=f"sum:{row['id']}", kind="summary", tier="conversation",
               source=f"conversation:{row['session_id']}#summary={row['id']}",
               text=redact(row["content"], secrets),
               occurred_at=row["latest_at"], created_at=row["created_at"],
               context=context_words("", row["latest_at"], ""),
               metadata={"conversation": row["session_id"], "summary_id": row["id"], "depth": row["depth"],
                         "earliest_at": row["earliest_at"], "latest_at": row["latest_at"]})



def store_item_docs(row: Any, secrets: list[str]) -> list[Doc]:
    """The docs of a LangGraph store item: one a passage chosen by its index config (none if not indexed).

    A passage stands alone (no thread): the items of a namespace are not a conversation.
    """
    namespace = row["namespace"].split(".")
    source = f"store:{row['namespace']}/{row['key']}"
    docs = []
    for n, (path, passage) in enumerate(json.loads(row["texts"])):
        text = redact(passage, secrets)
        docs.append(Doc(id=f"item:{row['id']}:{n}", kind="item", tier="cold", source=source, text=text,
                        occurred_at=row["updated_at"], created_at=row["updated_at"],
                        context=context_words("", row["updated_at"], text),
                        metadata={"namespace": namespace, "key": row["key"], "path": path}))
    return docs


# -- notes ------------------------------------------------------------------------

def check_batch(items: Sequence[Any],
                check: Callable[[Any], dict[str, Any]]) -> tuple[dict[int, dict], list[Refused]]:
    """Each item's note by its position, and the items refused with their reasons.

    Raises:
        ValidationError: every item was refused (a batch of one: that item's own error).
    """
    good: dict[int, dict[str, Any]] = {}
    refused: list[Refused] = []
    errors: list[ValidationError] = []
    for index, item in enumerate(items):
        try:
            good[index] = check(item)
        except ValidationError as exc:
            refused.append(Refused(index, str(exc)))
            errors.append(exc)
    if items and not good:
        if len(errors) == 1:
            raise errors[0]
        listed = "; ".join(str(r) for r in refused[:LISTED]) + ("; ..." if len(refused) > LISTED else "")
        raise ValidationError(f"none of the {len(items)} memories was stored, each was refused: {listed}; "
                              "fix them and store the batch again") from errors[0]
    return good, refused


def check_note(item: Any, secrets: list[str], max_bytes: int) -> dict[str, Any]:
    """One item of ``store_memories`` as the row it becomes (secrets redacted); raise ValidationError.

    ``max_bytes`` (``cold.max_memory_bytes``) bounds the content: it is kept whole, and its vectors
    cover it in chunks whose computing grows with its length."""
    if isinstance(item, str):
        item = {"content": item}
    if not isinstance(item, dict):
        raise ValidationError(f"each memory must be text or a dict with 'content', got {type(item).__name__}")
    unknown = set(item) - set(NOTE_FIELDS)
    if unknown:
        raise ValidationError(f"unknown memory field(s) {sorted(unknown)}; use {', '.join(NOTE_FIELDS)}")
    text = check_text(item.get("content"), "memory content").strip()
    if not text:
        raise ValidationError("memory content must not be empty")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(f"memory content of {size} bytes exceeds the limit of {max_bytes} bytes "
                              "(cold.max_memory_bytes): store it as several memories")
    kind = item.get("kind") or "note"
    if kind not in NOTE_KINDS:
        raise ValidationError(f"store_memory kind must be one of {', '.join(NOTE_KINDS)}, got {shown(kind)}")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
    check_depth(metadata, "memory metadata")  # before redact() and JSON walk it
    metadata = redact(metadata or {}, secrets)
    try:
        meta_json = json.dumps(metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from exc
    occurred = occurred_from(metadata, item.get("occurred_at"))
    expires = item.get("expires_at")
    expires = utc_timestamp(parse_time(expires, "expires_at")) if expires is not None else None
    text = redact(text, secrets)
    key = content_key(kind, text, meta_json, occurred)
    return {"text": text, "kind": kind, "metadata": meta_json, "occurred_at": occurred,
            "expires_at": expires, "key": key}
