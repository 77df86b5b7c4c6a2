"""A deterministic embedder without a model: hashed words, for tests and trials that need some embedder.

``cold.embedder: fake`` selects it. Each word of a text, and each three-letter piece of a word, adds a
signed weight to one of 384 dimensions chosen by a stable hash (BLAKE2b, the same in every process and
on every machine), and the sum is normalised. Texts that share words are near, texts that share none
are nearly orthogonal, and the same text gives the same vector everywhere. It knows no meaning:
"car" and "automobile" are strangers, so recall quality is measured with all-MiniLM-L6-v2.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Sequence

from core.llm.embedding.vectors import checked_vectors

if TYPE_CHECKING:
    import numpy as np

HASHED_NAME = "fake:hashed-words"
HASHED_DIMENSION = 384
WORD = re.compile(r"\w+")
WORD_WEIGHT, PIECE_WEIGHT = 5, 3
"""A word's weight and its three-letter pieces' (whole numbers, so sums are exact): "report" stays near
"reports"."""


def _slot(token: str) -> tuple[int, int]:
    """The dimension and sign a token adds to, from a hash that no process or seed changes."""
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % HASHED_DIMENSION, (1 if value >> 63 else -1)


def _features(text: str) -> list[tuple[str, int]]:
    words = WORD.findall(text.lower())
    if not words:  # punctuation only: the text itself, so no vector is zero
        return [("text:" + text, WORD_WEIGHT)]
    features = [("w:" + word, WORD_WEIGHT) for word in words]
    for word in words:
        padded = f"<{word}>"
        features += [("p:" + padded[i:i + 3], PIECE_WEIGHT) for i in range(len(padded) - 2)]
    return features


class HashedWordsEmbedder:
    """Unit vectors of hashed words and word pieces, 384-d like all-MiniLM-L6-v2; no model, no network."""

    name = HASHED_NAME

    def dimension(self) -> int:
        return HASHED_DIMENSION

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        vectors = np.zeros((len(texts), HASHED_DIMENSION), dtype=np.int64)
        for row, text in enumerate(texts):
            for token, weight in _features(text):
                slot, sign = _slot(token)
                vectors[row, slot] += sign * weight
            if not np.any(vectors[row]):  # the signed weights cancelled out: one more, fixed dimension
                vectors[row, _slot("text:" + text)[0]] = WORD_WEIGHT
        return checked_vectors(vectors, len(texts), HASHED_DIMENSION, self.name)

    def __repr__(self) -> str:
        return "HashedWordsEmbedder()"
