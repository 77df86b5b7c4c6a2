"""The promises each torture trial checks, read with the independent format readers of the tests.

After a kill (or a fault) the agent is opened as a restart would open it; then:

- only LOG.md's last line may have been torn, and opening repairs it;
- every seq appears exactly once across LOG.md and the archives, and the index has each;
- every acknowledged append is there with its text, and no refused write left anything;
- NOW.md is whole, its version is the newest NOW_UPDATE's and no version was used twice;
- the facts in memory.db are exactly what LOG.md's FACT entries say, acknowledged saves included;
- no temp file is left and no acknowledged entry was moved to quarantine.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from core.memory_manager import MemoryManager
from memory_format_checks import parse_log_file, parse_log_line, parse_now_file
from tests.torture.harness import Result


def memory_dir(home: Path) -> Path:
    return home / "finn" / "memory"


def all_entries(folder: Path) -> list[dict]:
    """Every entry of the archives (oldest first) and of LOG.md, parsed strictly, plus the readable entries
    of archives set aside in quarantine as damaged.

    An archive whose entries LOG.md still holds belongs to a compaction killed before its swap: the
    next compaction reuses it, and until then it is not part of the history.
    """
    log = parse_log_file(folder / "LOG.md")
    start = log[0]["seq"] if log else float("inf")
    archives = [p for p in folder.glob("archive/LOG-*.md") if int(p.stem.split("-")[2]) < start]
    entries = []
    for path in sorted(archives, key=lambda p: int(p.stem.split("-")[1])):
        entries += parse_log_file(path)
    for path in folder.glob("quarantine/LOG-*-damaged-*.md"):
        for line in path.read_bytes().split(b"\n"):
            try:
                entries.append(parse_log_line(line))
            except AssertionError:
                pass  # the damaged line itself
    return entries + log


def only_tail_damaged(home: Path, result: Result) -> None:
    """Before any repair: every line of LOG.md but the last is a whole, valid entry (or the header)."""
    path = memory_dir(home) / "LOG.md"
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")[:-1]  # the piece after the last newline is the tail
    for line in lines[1:] if lines and lines[0].startswith(b"<!--") else lines:
        try:
            parse_log_line(line)
        except AssertionError as exc:
            result.fail(f"a line before LOG.md's tail is damaged: {exc}")


def open_agent(home: Path, result: Result) -> MemoryManager | None:
    """Open the agent as a restart would; a raised exception is a failure."""
    try:
        return MemoryManager("finn", home=home)
    except Exception as exc:  # noqa: BLE001 - any exception here is the finding
        result.fail(f"opening the agent raised {type(exc).__name__}: {exc}")
        return None


def check_agent(home: Path, acks: list[list], result: Result, manager: MemoryManager | None = None) -> None:
    """Check every promise on the agent in ``home`` against the acknowledged writes ``acks``."""
    own = manager is None
    manager = manager or open_agent(home, result)
    if manager is None:
        return
    try:
        folder = memory_dir(home)
        try:
            entries = all_entries(folder)
        except AssertionError as exc:
            result.fail(f"LOG.md or an archive is not whole after opening: {exc}")
            return
        # The damaged line of an archive set aside in quarantine is the damage itself, not a loss.
        # Entries of an archive set aside as damaged are out of the history (kept in quarantine, readable
        # by hand); the damaged line itself is the damage, not a loss.
        present = {e["seq"] for e in entries}
        set_aside = {seq for d in manager.cold.indexer.damaged()
                     for seq in range(d["first_seq"], d["last_seq"] + 1)}
        excused = set_aside - present
        acks = [r for r in acks if not (r[0] in ("append",
                                                 "now") and r[1 if r[0] == "append" else 2] in excused)]
        _check_seqs(manager, entries, result, set_aside)
        _check_acks(entries, acks, result)
        _check_now(folder, entries, acks, result)
        _check_facts(manager, entries, acks, result, bool(set_aside))
        leftovers = [p.name for p in folder.glob(".*.tmp")] + [p.name for p in folder.glob("archive/.*.tmp")]
        if leftovers:
            result.fail(f"temp files left after opening: {leftovers}")
        _check_quarantine(folder, acks, result)
    finally:
        if own:
            manager.close()


def _check_seqs(manager: MemoryManager, entries: list[dict], result: Result, excused: set[int]) -> None:
    """Each seq once across the files, and the index holds exactly the files' seqs (``excused`` aside)."""
    counts = Counter(e["seq"] for e in entries)
    doubled = sorted(s for s, n in counts.items() if n > 1)
    if doubled:
        result.fail(f"seqs doubled across LOG.md and the archives: {doubled[:10]}")
    indexed = {row[0] for row in manager.db.conn.execute("SELECT id FROM log_metadata")} - excused
    if indexed != set(counts) - excused:
        result.fail(f"log_metadata differs from the files: missing {sorted(set(counts) - indexed)[:10]}, "
                    f"extra {sorted(indexed - set(counts))[:10]}")


def _check_acks(entries: list[dict], acks: list[list], result: Result) -> None:
    by_seq = {e["seq"]: e for e in entries}
    texts = "\n".join(e["text"] + " " + str(e.get("meta")) for e in entries)
    for record in acks:
        if record[0] == "append":
            seq, marker = record[1], record[2]
            entry = by_seq.get(seq)
            if entry is None or marker not in entry["text"] + str(entry.get("meta")):
                result.fail(f"acknowledged append {seq} ({marker}) is lost")
        elif record[0] == "refused" and record[1] != "open" and "memory.db applies it" not in record[-1]:
            op, marker = record[1], record[2]
            probe = {"append": f"full {marker} ", "now": f"objective {marker}'",
                     "save": f"value {marker} "}[op]
            if probe in texts:
                result.fail(f"a refused write ({op} {marker}: {record[3]}) left something in LOG.md")


def _check_now(folder: Path, entries: list[dict], acks: list[list], result: Result) -> None:
    try:
        front, _ = parse_now_file(folder / "NOW.md")
    except (AssertionError, OSError, ValueError) as exc:
        result.fail(f"NOW.md is not whole after opening: {exc}")
        return
    updates = [e for e in entries if e["type"] == "NOW_UPDATE"]
    versions = Counter(e["meta"]["version"] for e in updates)
    reused = sorted(v for v, n in versions.items() if n > 1)
    if reused:
        result.fail(f"NOW versions used twice: {reused[:10]}")
    if updates and front["version"] != max(versions):
        result.fail(f"NOW.md is at version {front['version']} but LOG.md has NOW_UPDATE version "
                    f"{max(versions)}")
    by_seq = {e["seq"]: e for e in updates}
    for record in acks:
        if record[0] == "now":
            version, seq, marker = record[1], record[2], record[3]
            entry = by_seq.get(seq)
            if version > front["version"] or entry is None or entry["meta"]["version"] != version \
                    or marker not in entry["meta"]["objective"]:
                result.fail(f"acknowledged NOW update version {version} ({marker}) is lost")


def _check_facts(manager: MemoryManager, entries: list[dict], acks: list[list], result: Result,
                 damaged: bool = False) -> None:
    journal: dict[str, str | None] = {}
    for entry in sorted((e for e in entries if e["type"] == "FACT"), key=lambda e: e["seq"]):
        record = entry["meta"]["fact"]
        journal[record["key"]] = None if record.get("deleted") else record.get("value")
    stored = {f["key"]: f["value"] for f in manager.list_facts()}
    expected = {k: v for k, v in journal.items() if v is not None}
    if stored != expected and not damaged:  # a FACT entry on a damaged line cannot be replayed
        differ = sorted(k for k in set(stored) | set(expected) if stored.get(k) != expected.get(k))
        result.fail(f"memory.db's facts differ from LOG.md's FACT entries for {differ[:10]}")
    logged = {(e["meta"]["fact"]["key"],
               e["meta"]["fact"].get("value")) for e in entries if e["type"] == "FACT"}
    for record in acks:
        if record[0] == "save" and (record[1], record[2]) not in logged and not damaged:
            result.fail(f"acknowledged fact {record[1]} = {record[2][:40]} is not recorded in LOG.md")


def _check_quarantine(folder: Path, acks: list[list], result: Result) -> None:
    quarantined = "".join(p.read_text(errors="replace") for p in folder.glob("quarantine/LOG-tail-*"))
    if not quarantined:
        return
    for record in acks:
        if record[0] == "append" and f" {record[2]} " in quarantined.replace('"', " "):
            result.fail(f"acknowledged append {record[1]} ({record[2]}) was moved to quarantine")
