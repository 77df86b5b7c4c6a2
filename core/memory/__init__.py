"""The memory of an agent, every tier behind one face.

    from core.memory import MemoryManager
    with MemoryManager("finn") as memory:             # creates agents/finn/memory/ on first use
        memory.update_now("Analyzing portfolio data", next_steps=["Read the statements"])
        memory.save_fact("favourite_drink", "green tea", category="preference")
        hits = memory.recall_memory("what does the user drink?")
    with MemoryReader("finn") as memory:              # reads only: no repair, no lock, nothing written
        memory.read_now(), memory.recall_memory("what does the user drink?")

Hot NOW.md, warm LOG.md (compacted into immutable archives), cold LanceDB vectors and the facts of
memory.db, conversations kept by a provider, memory spaces shared between agents. The packages of
``core.memory`` are its layers, lowest first: files, secrets, storage, recall, compaction and spaces,
upkeep and provider, reflection; :class:`MemoryManager` stands on all of them. Code outside the memory
imports the names below from here; the packages' own faces serve the memory's parts and its extensions
(the providers of :mod:`core.plugins`, export and import).
"""

from core.memory.agent_folder import initialize_agent_memory
from core.memory.compaction import CompactionReport
from core.memory.files import LogEntry, NowState, ScanResult
from core.memory.manager import MemoryManager
from core.memory.reader import MemoryReader, open_reader
from core.memory.recall import Forgotten, Recalled, Refused, StoredMemories
from core.memory.reflection import PassReport, ProfileLine
from core.memory.secrets import Redactor
from core.memory.shared import close_shared, shared_manager, shared_reader
from core.memory.spaces import READ_ONLY, READ_WRITE, Space, list_spaces
from core.memory.storage import CATEGORIES, REDACTED, Fact
from core.memory.upkeep import ScrubReport

__all__ = [
    "CATEGORIES", "READ_ONLY", "READ_WRITE", "REDACTED", "CompactionReport", "Fact", "Forgotten", "LogEntry",
    "MemoryManager", "MemoryReader", "NowState", "PassReport", "ProfileLine", "Recalled", "Redactor", "Refused",
    "ScanResult", "ScrubReport", "Space", "StoredMemories", "close_shared", "initialize_agent_memory", "list_spaces",
    "open_reader", "shared_manager", "shared_reader",
]
