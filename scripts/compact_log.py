"""Compact an agent's LOG.md now: archive its entries, keep one SUMMARY entry, index the archive.

The summary is written by the configured Ollama model; with no LLM reachable
the deterministic extractive summary is used, and the output says so.
Running it again after a crash finishes the interrupted compaction.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.errors import AgentOSError  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True, help="agent name, e.g. finn")
    parser.add_argument("--dry-run", action="store_true", help="show what would be archived; change nothing")
    parser.add_argument("--force", action="store_true", help="compact even below the size/entry thresholds")
    parser.add_argument("--summary", help="use this summary text instead of summarising")
    args = parser.parse_args(argv)
    try:
        with MemoryManager(args.agent) as manager:
            with tqdm(desc="indexing chunks", unit="chunk", leave=False) as bar:
                report = manager.cold.compact(args.summary, force=args.force, dry_run=args.dry_run,
                                              progress=bar.update)
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_report(report, args.dry_run)
    return 0


def print_report(report, dry_run: bool) -> None:
    for archive in report.recovered:
        print(f"finished an interrupted compaction: {archive}")
    if not report.done and not dry_run:
        print(f"nothing compacted: {report.reason}" + (" (use --force)" if "threshold" in report.reason else ""))
    elif dry_run:
        print(f"dry run: {report.reason or 'nothing to do'}")
        if report.archive_id:
            print(f"  entries: {report.entries} (seq {report.first_seq}-{report.last_seq})")
            print(f"  LOG.md size: {report.bytes_before} bytes; archive would be {report.archive_path}")
        return
    else:
        print(f"entries archived: {report.entries} (seq {report.first_seq}-{report.last_seq})"
              + (" [resumed an interrupted run]" if report.resumed else ""))
        print(f"LOG.md size: {report.bytes_before} -> {report.bytes_after} bytes")
        print(f"archive: {report.archive_path}")
        method = report.summary_method
        note = " (no LLM reachable: extractive summary of the source)" if method == "deterministic" else ""
        print(f"summary: {method}{note}")
    print(f"chunks indexed: {report.chunks_indexed}")
    if report.index_error:
        print(f"cold store not updated (retried at the next start): {report.index_error}")


if __name__ == "__main__":
    sys.exit(main())
