"""Reflection: memory that learns from what it keeps.

In the background, a model reads what an agent recorded since its last pass (LOG.md and its archives,
conversation messages, stored notes) and writes down what is worth keeping: facts as (subject,
attribute) slots with a value, events with the date they happened, statements that contradict a
known fact. Every learned memory names the entries it came from, the model and the prompt version
that extracted it, and when (:mod:`core.memory.storage.extracted`); a value whose words are not in
the entries it cites is rejected (:mod:`~core.memory.reflection.check`); a reply that cannot be used
is asked again, split, and at last quarantined, never lost (:mod:`~core.memory.reflection.extract`);
the marks move only with what was learned, in one transaction (:mod:`~core.memory.reflection.commit`).
What was learned is derived data: forgetting an entry forgets what came only from it, and a rebuild
learns it all again from the files. The package uses storage, recall, the files and a backend it is
handed; never the engine.

    reflection = manager.reflection
    reflection.wake(backend)          # soon, in the background (after a run, a compaction, on a timer)
    report = reflection.run()         # now, in this thread (``agentos reflect``)
    reflection.status()               # lag, quarantine, failure rate per model
    read_view(reader, last_seq)       # the same and the learned facts with their sources, read-only

Import the names below from here; the modules of this package import each other directly. The reply's
pydantic models (:mod:`~core.memory.reflection.reply`) are imported by the pass that reads a reply, not
here: pydantic's import would cost every process that opens a memory about 0.1 s.
"""

from core.memory.reflection.passes import PassReport
from core.memory.reflection.profile import ProfileLine, profile
from core.memory.reflection.rules import RuleReader
from core.memory.reflection.view import LearnedFact, ReflectionView, read_view
from core.memory.reflection.worker import Reflection

__all__ = [
    "LearnedFact", "PassReport", "ProfileLine", "Reflection", "ReflectionView", "RuleReader",
    "profile", "read_view",
]
