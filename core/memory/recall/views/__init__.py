"""Views of recall besides the ranked list: why each result ranked and what was left out (``explain``),
versions of a memory (``supersession``), a time window listed newest first (``browse``), the records of one
thing shown once (``folding``), and what a forget by query takes (``matching``)."""
