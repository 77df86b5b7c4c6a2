"""Embedding many texts at a cost that follows their tokens, never the longest one.

A transformer runs a batch padded to its longest row: one long note in a batch of
short ones made every row cost 256 tokens (56 short texts and one long one took
6.5 s where each alone took 0.2 s). Here texts are tokenized first, cut into
windows of at most the model's length, sorted by length and run in batches whose
padded size stays within a token budget, so a batch costs about what its tokens
cost and no batch runs long (which also bounds how long a process waits at exit
for the batch in progress).

A text longer than one window is embedded window by window (up to
``max_windows``) and its vector is the mean of its windows' vectors weighted by
their tokens, normalised: recall keeps one vector a memory, and that vector then
speaks for the whole text instead of its first 256 tokens. A text of one window
gets exactly the model's own vector.

When a call makes more than one batch, its rows are dealt, shortest first, to up
to ``MAX_WORKERS`` threads (never more than the machine has cores), each running
its share in batches: ONNX Runtime and torch leave the GIL while they compute,
and a session may be run from several threads, so a bulk load keeps every core
busy until its end (the shares hold about as many tokens) while each run keeps
one thread. A single text (a recall's query) runs in the caller's thread.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, Sequence

from core.durable import foreground

if TYPE_CHECKING:
    import numpy as np

BATCH_TOKENS = 2048
"""Padded tokens a batch may hold (rows × longest row): about 0.4 s of one core for all-MiniLM-L6-v2."""
BATCH_ROWS = 64
"""Rows a batch may hold, however short."""
MAX_WINDOWS = 2
"""Windows of a long text that are embedded (its first 510 tokens, about 2,000 characters); words past them
are still found by the word search."""
MAX_WORKERS = 2
"""Batches of one call run at once, at most (and at most one a core): two threads of one core each
embed about twice as fast as one, and more would take the cores an agent's own work needs."""


class TokenModel(Protocol):
    """A sentence model that takes token ids: what :func:`embed_texts` drives."""

    window: int
    """Most tokens one row may have, special tokens included (256 for all-MiniLM-L6-v2)."""
    rows_per_run: int
    """Most rows one run may hold: 1 for a model whose vector of a row depends on the other rows of its run
    (int8 inputs quantized over the whole run), else ``BATCH_ROWS``."""

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, with the model's special tokens, neither truncated nor padded."""

    def run(self, rows: Sequence[Sequence[int]]) -> "np.ndarray":
        """Unit vectors of ``rows`` (each at most ``window`` ids), padded to the longest."""


def windows(ids: Sequence[int], size: int, max_windows: int) -> list[list[int]]:
    """``ids`` (``[CLS] ... [SEP]``) as rows of at most ``size`` ids, each with the first and last id around
    a consecutive part of the text; at most ``max_windows`` of them."""
    if len(ids) <= size:
        return [list(ids)]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    step = size - 2
    return [[first, *body[start:start + step], last] for start in range(0, len(body), step)][:max_windows]


def batches(lengths: Sequence[int], budget: int = BATCH_TOKENS,
            max_rows: int = BATCH_ROWS) -> list[list[int]]:
    """Indexes of ``lengths`` grouped shortest first so that rows × longest row stays within ``budget``
    (a single row longer than the budget is a batch of its own)."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if current and ((len(current) + 1) * lengths[index] > budget or len(current) == max_rows):
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups


def embed_texts(model: TokenModel, texts: Sequence[str], *, budget: int = BATCH_TOKENS,
                max_windows: int = MAX_WINDOWS) -> "np.ndarray":
    """One unit vector a text (float32, one row a text), computed in token-bounded batches."""
    import numpy as np

    rows: list[list[int]] = []
    owner: list[int] = []
    for number, ids in enumerate(model.tokenize(texts)):
        for row in windows(ids, model.window, max_windows):
            rows.append(row)
            owner.append(number)
    if not rows:
        return np.empty((0, 0), dtype=np.float32)
    groups = shared_batches([len(r) for r in rows], budget, model.rows_per_run)
    parts = _run_all(model, [[[rows[i] for i in group] for group in share] for share in groups])
    vectors = np.empty((len(rows), parts[0][0].shape[1]), dtype=np.float32)
    for share, share_parts in zip(groups, parts):
        for group, part in zip(share, share_parts):
            vectors[group] = part
    if len(rows) == len(texts):
        return vectors
    weights = np.array([len(r) - 2 for r in rows], dtype=np.float32)
    combined = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
    np.add.at(combined, np.array(owner), vectors * weights[:, None])
    return combined / np.linalg.norm(combined, axis=1, keepdims=True)


def workers(batch_count: int) -> int:
    """How many threads run ``batch_count`` batches: one a batch, a core and at most ``MAX_WORKERS``."""
    return max(1, min(batch_count, MAX_WORKERS, os.cpu_count() or 1))


def shared_batches(lengths: Sequence[int], budget: int = BATCH_TOKENS,
                   max_rows: int = BATCH_ROWS) -> list[list[list[int]]]:
    """The batches of :func:`batches`, in one share a worker thread: rows dealt in turn, shortest first,
    so that the shares hold about as many tokens (one share when the rows fill a single batch)."""
    count = workers(len(batches(lengths, budget, max_rows)))
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    shares = [order[n::count] for n in range(count)]
    return [[[share[i] for i in group] for group in batches([lengths[i] for i in share], budget, max_rows)]
            for share in shares]


def _run_all(model: TokenModel, shares: list[list[list[list[int]]]]) -> "list[list[np.ndarray]]":
    """``model.run`` of each batch of rows of each share, in order; one thread a share.

    For background work nobody waits for, every share runs in a worker at a lower CPU priority
    (:func:`core.durable.foreground.lower_priority`): the agent's own writes, woken from a flush, then get
    a core at once instead of after the model's time slice.
    """
    run_share = lambda share: [model.run(group) for group in share]
    behind = foreground.behind()
    if len(shares) == 1 and not behind:
        return [run_share(shares[0])]
    # The pool is joined before this returns: no model call outlives the embed call that made it.
    with ThreadPoolExecutor(len(shares), thread_name_prefix="embed",
                            initializer=_work_behind if behind
                            else foreground.leave_ctrl_c_to_the_main_thread) as pool:
        return list(pool.map(run_share, shares))


def _work_behind() -> None:
    """A worker of background work: Ctrl-C left to the main thread, a lower CPU priority."""
    foreground.leave_ctrl_c_to_the_main_thread()
    foreground.lower_priority()
