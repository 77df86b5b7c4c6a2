"""Recreate an agent's indexes from the files: log_metadata from LOG.md and the archives, the
compaction history from the SUMMARY entries, and the LanceDB cold store from the archives,
facts and notes, embedded with the configured embedder (use it after changing cold.embedder).
It ends by optimizing the table, which builds the approximate vector index once the table
holds cold.ann_min_rows chunks (below that, vector search is exact).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm import tqdm  # noqa: E402

from core.errors import AgentOSError  # noqa: E402
from core.memory.rebuild import rebuild_all  # noqa: E402
from core.memory_manager import MemoryManager  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True, help="agent name, e.g. finn")
    args = parser.parse_args(argv)
    try:
        with MemoryManager(args.agent) as manager:
            with tqdm(desc="indexing chunks", unit="chunk") as bar:
                result = rebuild_all(manager, progress=bar.update)
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"log_metadata rows: {result.log_rows}")
    print(f"compactions recorded: {result.compactions}")
    print(f"chunks indexed: {result.chunks} (embedder {result.embedder})")
    index, min_rows = result.vector_index, manager.config.cold.ann_min_rows
    if index is not None:
        print(f"vector index: {index['type']} over {index['indexed_rows']} chunks")
    elif min_rows and result.chunks >= min_rows:
        print("vector index: none, its build failed (see the log): vector search is exact")
    else:
        print(f"vector index: none, vector search is exact (cold.ann_min_rows = {min_rows})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
