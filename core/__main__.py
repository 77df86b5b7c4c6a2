"""``python -m core``: the ``agentos`` command."""

import sys

from core.commands import main

sys.exit(main())
