"""``python -m core.inspector``: serve the memory inspector."""

from core.inspector.cli import main

raise SystemExit(main())
