"""``python -m core.engine``: the engine's command line."""

import sys

from core.engine.cli import main

sys.exit(main())
