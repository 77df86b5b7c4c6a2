"""Upkeep of an agent's memory, on a small bundle of its tiers (``Tiers``): recovery at open, the
rebuild of every index from the files, forgetting, NOW.md's writes, the archives' listing, and the
scrub that takes a secret's (or a forgotten fact's) value out of every file and index.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.upkeep import forgetting, now, rebuild, recovery, scrub_tables
from core.memory.upkeep.archives import archive_first_seq
from core.memory.upkeep.rebuild import RebuildResult, rebuild_all
from core.memory.upkeep.scrub import ScrubReport, SecretScrubber
from core.memory.upkeep.tiers import FactChange, Tiers, open_tiers

__all__ = [
    "FactChange", "RebuildResult", "ScrubReport", "SecretScrubber", "Tiers", "archive_first_seq",
    "forgetting", "now", "open_tiers", "rebuild", "rebuild_all", "recovery", "scrub_tables",
]
