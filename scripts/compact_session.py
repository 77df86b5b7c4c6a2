"""Compact an agent's conversation session now (what /compact does in the interactive mode).

The same as ``agentos compact-session``: ``python scripts/compact_session.py --help`` lists its options.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.commands import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["compact-session", *sys.argv[1:]]))
