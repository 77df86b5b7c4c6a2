"""Recall: every memory as a doc in memory.db (words at once, vectors in the background), the
LanceDB store of vectors, and the one ranked search over all of it.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "COLUMNS": "lance_table",
    "ColdStore": "store",
    "DocIndex": "docs",
    "Filters": "docs",
    "KINDS": "docs",
    "TABLE": "store",
    "Tuning": "search",
    "check_recall": "query",
    "open_store": "cold",
})
