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
upkeep and provider, reflection; :class:`MemoryManager` stands on all of them, and :class:`MemoryReader`
reads what it writes without writing. Code outside the memory imports the names below from here; the
packages' own faces serve the memory's parts and its extensions (the providers of :mod:`core.plugins`,
export and import). An application that runs an agent on the memory (the engine) finds here too what it
keeps beside the tiers: a session's handoff summary (:class:`SessionHandoff`), the engine's lease, its
LangGraph checkpointer and a handle on the memory tables for its provider (:func:`hold_lease`,
:func:`open_checkpointer`, :func:`open_database`), and the pieces of the prompt's memory text
(:func:`render_now`, :func:`render_fact`, :func:`fit_lines`, :func:`fit_newest`).
"""

from core.memory.agent_folder import initialize_agent_memory
from core.memory.compaction import CompactionReport
from core.memory.context import (
    ENTRY_PREVIEW_CHARS,
    fit_lines,
    fit_newest,
    more_facts_note,
    render_fact,
    render_now,
)
from core.memory.files import LogEntry, NowState, ScanResult, check_text
from core.memory.handoffs import Handoff, SessionHandoff
from core.memory.manager import MemoryManager
from core.memory.reader import MemoryReader, open_for_reading
from core.memory.recall import Forgotten, Recalled, Refused, StoredMemories
from core.memory.reflection import PassReport, ProfileLine
from core.memory.secrets import Redactor
from core.memory.shared import close_shared, shared_manager, shared_reader
from core.memory.spaces import READ_ONLY, READ_WRITE, Space, list_spaces
from core.memory.storage import CATEGORIES, REDACTED, Fact, hold_lease, open_checkpointer, open_database
from core.memory.upkeep import ScrubReport

__all__ = [
    "CATEGORIES", "ENTRY_PREVIEW_CHARS", "READ_ONLY", "READ_WRITE", "REDACTED", "CompactionReport", "Fact",
    "Forgotten", "Handoff", "LogEntry", "MemoryManager", "MemoryReader", "NowState", "PassReport",
    "ProfileLine", "Recalled", "Redactor", "Refused", "ScanResult", "ScrubReport", "SessionHandoff", "Space",
    "StoredMemories", "check_text", "close_shared", "fit_lines", "fit_newest", "hold_lease",
    "initialize_agent_memory", "list_spaces", "more_facts_note", "open_checkpointer", "open_database",
    "open_for_reading", "render_fact", "render_now", "shared_manager", "shared_reader",
]
