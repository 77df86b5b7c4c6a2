"""What an embedder is and gives: the contract every embedder meets, and the check of its vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ContextManager, Protocol, Sequence

from core.errors import BackendError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "Progress", "checked_vectors"]

Progress = Callable[[str], ContextManager[object]]
"""``progress(label)`` is open while a long operation runs: a command line shows a spinner with the label."""


class Embedder(Protocol):
    """Something that embeds text; the store records ``name`` and ``dimension()``."""

    name: str
    """Identifies the model; a store built by one embedder refuses another."""

    def dimension(self) -> int:
        """Length of every vector this embedder returns."""

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Return one unit vector a text, as a float32 array of shape ``(len(texts), dimension)``.

        Raises:
            BackendError: the model failed or returned an unusable vector.
        """


def checked_vectors(raw: object, count: int, dimension: int | None, name: str) -> "np.ndarray":
    """Return ``raw`` as normalised float32 rows, or raise BackendError if any row is unusable."""
    import numpy as np

    vectors = np.asarray(raw, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != count:
        raise BackendError(f"embedder {name} returned {vectors.shape} for {count} texts")
    if dimension is not None and vectors.shape[1] != dimension:
        raise BackendError(f"embedder {name} returned {vectors.shape[1]}-d vectors, expected {dimension}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(vectors)) or np.any(norms < 1e-6):
        raise BackendError(f"embedder {name} returned a zero or non-finite vector")
    return vectors / norms
