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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    import numpy as np

BATCH_TOKENS = 2048
"""Padded tokens a batch may hold (rows × longest row): about 0.4 s of one core for all-MiniLM-L6-v2."""
BATCH_ROWS = 64
"""Rows a batch may hold, however short."""
MAX_WINDOWS = 2
"""Windows of a long text that are embedded (its first 510 tokens, about 2,000 characters); words past them
are still found by the word search."""


class TokenModel(Protocol):
    """A sentence model that takes token ids: what :func:`embed_texts` drives."""

    window: int
    """Most tokens one row may have, special tokens included (256 for all-MiniLM-L6-v2)."""

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


def batches(lengths: Sequence[int], budget: int = BATCH_TOKENS, max_rows: int = BATCH_ROWS) -> list[list[int]]:
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
    vectors = np.empty((len(rows), 0), dtype=np.float32)
    for group in batches([len(r) for r in rows], budget):
        part = model.run([rows[i] for i in group])
        if vectors.shape[1] == 0:
            vectors = np.empty((len(rows), part.shape[1]), dtype=np.float32)
        vectors[group] = part
    if len(rows) == len(texts):
        return vectors
    weights = np.array([len(r) - 2 for r in rows], dtype=np.float32)
    combined = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
    np.add.at(combined, np.array(owner), vectors * weights[:, None])
    return combined / np.linalg.norm(combined, axis=1, keepdims=True)
