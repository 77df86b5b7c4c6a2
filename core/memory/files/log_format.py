"""The LOG.md line format: one entry a physical line, each with its own CRC.

    - <seq> <UTC ISO-8601 ms Z> <TYPE> <compact JSON object> crc32=<8 lowercase hex>

The CRC is ``zlib.crc32`` of the UTF-8 bytes before `` crc32=``. The JSON object
holds ``text`` (the content) and ``meta`` (when given). An optional first line
``<!-- ... -->`` is a header. A line may end in ``\r\n`` (an editor's): it reads the same.

Some entries are the system's own records, which the memory and the engine act on
(a compaction reservation, a run's end, a saved fact): their types (``SYSTEM_TYPES``)
and metadata keys (``SYSTEM_META_KEYS``) can only be written through the system's
path, never by a skill (:func:`check_writer`). A new system record is one more name
in ``ENTRY_TYPES`` and ``SYSTEM_TYPES``.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from core.durable import load_json
from core.errors import CorruptionError, ValidationError

ENTRY_TYPES = (
    "TOOL_USE",
    "THOUGHT",
    "USER_FEEDBACK",
    "ERROR",
    "SYSTEM",
    "RUN_START",
    "RUN_END",
    "STEP_START",
    "STEP_END",
    "NOW_UPDATE",
    "SUMMARY",
    "INTERRUPTED",
    "FACT",
    "FORGET",
    "PUBLISH",
)

SYSTEM_TYPES = frozenset({
    "RUN_START", "RUN_END", "INTERRUPTED", "STEP_START", "STEP_END", "NOW_UPDATE", "SUMMARY", "FACT",
    "FORGET",
    "PUBLISH",
})
"""Entry types only the system writes: run and step markers, NOW.md's updates, compaction
summaries, the record of every fact saved or deleted and of every forget, and a memory published to a
space (in the space's journal, :mod:`core.memory.spaces`)."""
SYSTEM_META_KEYS = frozenset({"compaction", "run_id", "turn_id", "call_id"})
"""Metadata keys only the system sets: a compaction's reservation, and the ids by which the
engine finds its own entries again after a restart (a forged one would skip a tool call)."""

_ARCHIVE_PATH = re.compile(r"archive/LOG-(\d+)-(\d+)\.md")

HEADER = "<!-- AgentOS LOG.md v1: one entry a line: - <seq> <utc-ts> <TYPE> <json> crc32=<hex> -->\n"
CRC_MARK = b" crc32="
MAX_METADATA_DEPTH = 32
MAX_SEQ = 2**63 - 1
"""The highest seq an entry may have: the largest integer SQLite stores."""


@dataclass(frozen=True)
class LogEntry:
    """One parsed LOG.md entry."""

    seq: int
    """Position in the agent's whole history; strictly increasing, never reused."""
    ts: str
    """UTC time of the append, ISO-8601 with milliseconds and ``Z``."""
    type: str
    """One of ``ENTRY_TYPES``."""
    content: str
    """The entry's text."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The entry's ``meta`` object (empty when none was given)."""

    def as_dict(self) -> dict[str, Any]:
        """The entry as a plain dict (seq, ts, type, content, metadata)."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "type": self.type,
            "content": self.content,
            "metadata": dict(self.metadata),
        }


def is_compaction_summary(entry: LogEntry) -> bool:
    """True for a SUMMARY a compaction wrote: it names its archive, the seqs it covers and the archive's
    sha256."""
    meta = entry.metadata
    covers = meta.get("covers")
    archive = meta.get("archive")
    return (
        entry.type == "SUMMARY"
        and isinstance(covers, list) and len(covers) == 2
        and all(isinstance(c, int) and not isinstance(c, bool) for c in covers)
        and isinstance(archive, str) and _ARCHIVE_PATH.fullmatch(archive) is not None
        and isinstance(meta.get("sha256"), str)
    )


def utc_timestamp(moment: datetime | None = None) -> str:
    """Format ``moment`` (default: now) as ``2026-01-31T12:00:00.123Z``."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    # The year is padded by hand: strftime writes year 5 as "5", which is neither ISO-8601 nor sortable.
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def check_text(value: object, what: str) -> str:
    """Return ``value`` as valid UTF-8 text without NUL bytes, else raise ValidationError."""
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{what} is not valid UTF-8: {exc}") from exc
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 text: {exc}") from exc
    if "\x00" in value:
        raise ValidationError(f"{what} contains a NUL byte")
    return value


def check_metadata(value: object, what: str = "LOG entry metadata", depth: int = 0) -> None:
    """Raise ValidationError if a string anywhere in ``value`` (keys included) is invalid text."""
    if depth > MAX_METADATA_DEPTH:
        raise ValidationError(f"{what} nests deeper than {MAX_METADATA_DEPTH} levels (or refers to itself)")
    if isinstance(value, (str, bytes, bytearray)):
        check_text(value, what)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                check_text(key, f"{what} key")
            check_metadata(item, what, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_metadata(item, what, depth + 1)


def check_depth(value: object, what: str, limit: int = MAX_METADATA_DEPTH) -> None:
    """Raise ValidationError if ``value``'s dicts and lists nest deeper than ``limit`` (or refer to
    themselves):
    checked before anything walks it recursively (redaction, JSON), which such a value would crash."""
    stack, seen = [(value, 0)], 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            seen += 1
            if depth >= limit or seen > MAX_NODES:
                raise ValidationError(f"{what} nests deeper than {limit} levels (or refers to itself, or "
                                      f"holds more than {MAX_NODES:,} objects and lists): flatten it")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


MAX_NODES = 100_000
"""The most dicts and lists one value may hold (a value that refers to itself would hold them without end)."""


def check_entry_type(entry_type: object) -> str:
    """Return ``entry_type`` if it is a known entry type, else raise ValidationError."""
    if entry_type not in ENTRY_TYPES:
        raise ValidationError(
            f"unknown LOG entry type {entry_type!r}; valid types: {', '.join(ENTRY_TYPES)}"
        )
    return entry_type  # type: ignore[return-value]


def check_writer(entry_type: str, metadata: dict[str, Any] | None) -> None:
    """Raise ValidationError, naming what is reserved, if a non-system writer uses a system type or key."""
    if entry_type in SYSTEM_TYPES:
        allowed = ", ".join(t for t in ENTRY_TYPES if t not in SYSTEM_TYPES)
        raise ValidationError(f"LOG entry type {entry_type} is written only by the system; use one of: "
                              f"{allowed}")
    reserved = sorted(SYSTEM_META_KEYS.intersection(metadata or {}))
    if reserved:
        raise ValidationError(f"LOG entry metadata key(s) {', '.join(reserved)} are set only by the system; "
                              "rename them (e.g. my_run_id)")


def encode_entry(
    seq: int, ts: str, entry_type: str, content: str, metadata: dict[str, Any] | None
) -> bytes:
    """Return the full line (with CRC and newline) of one entry."""
    payload: dict[str, Any] = {"text": content}
    if metadata:
        payload["meta"] = metadata
    try:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from exc
    # Keep one physical line for readers that also split on Unicode line separators.
    body = body.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    head = f"- {seq} {ts} {entry_type} {body}".encode("utf-8")
    return head + CRC_MARK + f"{zlib.crc32(head):08x}".encode("ascii") + b"\n"


def decode_line(line: bytes) -> LogEntry:
    """Parse one entry line (without its newline); raise CorruptionError if it is damaged."""
    if line.endswith(b"\r"):
        line = line[:-1]
    head, mark, crc = line.rpartition(CRC_MARK)
    if not mark or len(crc) != 8:
        raise CorruptionError("entry has no crc32 field")
    if f"{zlib.crc32(head):08x}".encode("ascii") != crc:
        raise CorruptionError("entry fails its crc32 check")
    try:
        dash, seq, ts, entry_type, body = head.decode("utf-8").split(" ", 4)
        payload = load_json(body)
        number = int(seq)
        datetime.fromisoformat(ts.replace("Z", "+00:00"))  # as every reader of the time takes it
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptionError(f"entry cannot be parsed: {exc}") from exc
    if dash != "-" or not isinstance(payload, dict) or not isinstance(payload.get("text"), str) \
            or not isinstance(payload.get("meta") or {}, dict) or not (seq.isascii() and seq.isdigit()) \
            or not 0 < number <= MAX_SEQ:
        raise CorruptionError("entry does not have the LOG.md shape")
    if "\\u" in body:  # only a JSON escape puts in what no entry is written with: a NUL, a lone surrogate
        try:
            check_text(payload["text"], "its text")
            check_metadata(payload.get("meta"), "its metadata")
        except ValidationError as exc:
            raise CorruptionError(f"entry cannot be read: {exc}") from exc
    return LogEntry(number, ts, entry_type, payload["text"], payload.get("meta") or {})


def is_header(line: bytes) -> bool:
    """True for the optional ``<!-- ... -->`` first line."""
    return line.startswith(b"<!--") and line.rstrip().endswith(b"-->")


def normalise_line_ends(data: bytes) -> bytes:
    """``data`` with CRLF line ends turned into LF and a newline after a whole last entry that lacks one.

    Only lines that then read as entries (or the header) change: anything else is left for the
    tail repair to judge.
    """
    lines = data.split(b"\n")
    last = lines.pop()  # after the final newline: b"" unless it was stripped (or torn)
    for number, raw in enumerate(lines):
        if raw.endswith(b"\r") and (parse_or_none(raw[:-1]) is not None or is_header(raw[:-1])):
            lines[number] = raw[:-1]
    text = b"\n".join(lines) + (b"\n" if lines else b"")
    bare = last[:-1] if last.endswith(b"\r") else last
    if last and (parse_or_none(bare) is not None or is_header(bare)):
        return text + bare + b"\n"  # a whole entry: its CRC proves nothing is missing but the newline
    return text + last


def parse_or_none(raw: bytes) -> LogEntry | None:
    """The entry on one line (without its newline; a CR before it is allowed), or None for a header,
    blank or damaged line."""
    if not raw or is_header(raw):
        return None
    try:
        return decode_line(raw)
    except CorruptionError:
        return None
