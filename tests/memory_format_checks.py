"""Independent readers of the public LOG.md and NOW.md formats, for tests.

They share no code with ``core``: if core's writer drifts from the documented
format, these readers fail.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import yaml

LOG_LINE = re.compile(
    rb"^- (?P<seq>[1-9][0-9]*) (?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)"
    rb" (?P<type>[A-Z_]+) (?P<json>\{.*\}) crc32=(?P<crc>[0-9a-f]{8})$"
)
NOW_FIELDS = ["schema", "agent", "version", "updated_at", "run_id", "status", "objective",
              "current_step", "log_seq"]
UTC_MS = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$")


def parse_log_line(raw: bytes) -> dict:
    """Parse one LOG.md entry line (no newline) strictly; AssertionError if it breaks the format."""
    match = LOG_LINE.match(raw)
    assert match, f"line does not match the LOG.md format: {raw[:200]!r}"
    head = raw[: raw.rindex(b" crc32=")]
    assert f"{zlib.crc32(head):08x}" == match["crc"].decode(), f"bad crc32: {raw[:200]!r}"
    payload = json.loads(match["json"].decode("utf-8"))
    assert isinstance(payload, dict) and isinstance(payload["text"], str), raw[:200]
    return {
        "seq": int(match["seq"]),
        "ts": match["ts"].decode(),
        "type": match["type"].decode(),
        "text": payload["text"],
        "meta": payload.get("meta"),
    }


def parse_log_file(path: Path) -> list[dict]:
    """Every entry of a LOG.md, which must be whole: optional header, then valid lines only."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "LOG.md does not end with a newline"
    lines = data.split(b"\n")[:-1]
    if lines and lines[0].startswith(b"<!--"):
        assert lines[0].endswith(b"-->"), lines[0]
        lines = lines[1:]
    return [parse_log_line(line) for line in lines]


def parse_now_file(path: Path) -> tuple[dict, str]:
    """NOW.md's front matter (keys checked against the documented list, in order) and its body."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), "NOW.md must start with YAML front matter"
    front_text, body = text[4:].split("\n---\n", 1)
    front = yaml.safe_load(front_text)
    assert list(front) == NOW_FIELDS, list(front)
    return front, body
