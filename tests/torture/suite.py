"""Every torture campaign by name, with the trials the test run gives it."""

from __future__ import annotations

from typing import Callable

from tests.torture.campaigns import CAMPAIGNS as KILLS
from tests.torture.fault_campaigns import CAMPAIGNS as FAULTS
from tests.torture.harness import Result
from tests.torture.space_campaigns import CAMPAIGNS as SPACES

CAMPAIGNS: dict[str, Callable[..., Result]] = {**KILLS, **FAULTS, **SPACES}

TRIALS = {"appends": 40, "facts": 40, "compaction": 30, "notes": 12, "lcm": 30, "indexing": 8,
          "concurrent": 3, "fork": 5, "disk-full": 10, "read-only": 20, "damaged": 22, "summarizers": 14,
          "spaces": 20}
"""Trials of each campaign in the test run (SIGKILLs for the kill campaigns): about three minutes on two
cores."""
