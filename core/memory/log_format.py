"""The LOG.md line format: one entry a physical line, each with its own CRC.

    - <seq> <UTC ISO-8601 ms Z> <TYPE> <compact JSON object> crc32=<8 lowercase hex>

The CRC is ``zlib.crc32`` of the UTF-8 bytes before `` crc32=``. The JSON object
holds ``text`` (the content) and ``meta`` (when given). An optional first line
``<!-- ... -->`` is a header.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

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
    "FORGET",
)

HEADER = "<!-- AgentOS LOG.md v1: one entry a line: - <seq> <utc-ts> <TYPE> <json> crc32=<hex> -->\n"
CRC_MARK = b" crc32="
MAX_METADATA_DEPTH = 32


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


def utc_timestamp(moment: datetime | None = None) -> str:
    """Format ``moment`` (default: now) as ``2026-01-31T12:00:00.123Z``."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


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


def check_entry_type(entry_type: object) -> str:
    """Return ``entry_type`` if it is a known entry type, else raise ValidationError."""
    if entry_type not in ENTRY_TYPES:
        raise ValidationError(
            f"unknown LOG entry type {entry_type!r}; valid types: {', '.join(ENTRY_TYPES)}"
        )
    return entry_type  # type: ignore[return-value]


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
    head, mark, crc = line.rpartition(CRC_MARK)
    if not mark or len(crc) != 8:
        raise CorruptionError("entry has no crc32 field")
    if f"{zlib.crc32(head):08x}".encode("ascii") != crc:
        raise CorruptionError("entry fails its crc32 check")
    try:
        dash, seq, ts, entry_type, body = head.decode("utf-8").split(" ", 4)
        payload = json.loads(body)
        number = int(seq)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptionError(f"entry cannot be parsed: {exc}") from exc
    if dash != "-" or not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        raise CorruptionError("entry does not have the LOG.md shape")
    return LogEntry(number, ts, entry_type, payload["text"], payload.get("meta") or {})


def is_header(line: bytes) -> bool:
    """True for the optional ``<!-- ... -->`` first line."""
    return line.startswith(b"<!--") and line.rstrip().endswith(b"-->")
