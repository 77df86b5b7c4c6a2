"""The torture suite: every campaign, short but real, with its figures printed at the end of the run.

``python scripts/torture.py`` runs the same campaigns longer (see ``--help``).
"""

from __future__ import annotations

import pytest

from tests.torture.harness import RESULTS
from tests.torture.suite import CAMPAIGNS, TRIALS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", list(TRIALS))
def test_every_promise_holds_through_the_campaign(name: str, campaign_folder) -> None:
    """After every trial no acknowledged write is lost or doubled, no refused write left a trace, the files
    are whole and the agent opens: zero failures."""
    result = CAMPAIGNS[name](campaign_folder, TRIALS[name])
    RESULTS.append(result)
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.trials == TRIALS[name]
    assert not result.failures, "\n".join(result.failures)
