"""Recreate an agent's indexes from its files (log_metadata, the compaction history, the cold store).

The same as ``agentos rebuild-index``: ``python scripts/rebuild_index.py --help`` lists its options.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.commands import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["rebuild-index", *sys.argv[1:]]))
