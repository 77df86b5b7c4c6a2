"""The memory inspector: a local, read-only web page of what each agent remembers.

``main(argv)`` is its command line (``python -m core.inspector``); the server is
:mod:`core.inspector.server`, every read of memory.db is in :mod:`core.memory.storage.read_only`,
and the page's HTML, CSS and JavaScript are package data in ``static/``.
"""

from core.inspector.cli import main

__all__ = ["main"]
