"""Recall: every memory as a doc in memory.db (words at once, vectors in the background), the
LanceDB store of vectors, and the one ranked search over all of it.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.recall.cold import ColdMemory, open_store
from core.memory.recall.docs import KINDS, Doc, DocIndex, Filters
from core.memory.recall.query import RecallRequest, check_recall
from core.memory.recall.search import Candidate, Tuning
from core.memory.recall.lance_table import COLUMNS, TABLE
from core.memory.recall.store import ColdStore
from core.memory.recall.views.results import Forgotten, Recalled, Refused, StoredMemories

from core.memory.recall.query import MAX_RECENCY_DAYS, MAX_RESULTS

__all__ = [
    "COLUMNS", "KINDS", "MAX_RECENCY_DAYS", "MAX_RESULTS", "TABLE", "Candidate", "ColdMemory", "ColdStore",
    "Doc", "DocIndex", "Filters", "Forgotten", "RecallRequest", "Recalled", "Refused", "StoredMemories",
    "Tuning", "check_recall", "open_store",
]
