"""Compact an agent's LOG.md now: archive its entries, keep one SUMMARY entry, index the archive.

The same as ``agentos compact-log``: ``python scripts/compact_log.py --help`` lists its options.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.commands import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["compact-log", *sys.argv[1:]]))
