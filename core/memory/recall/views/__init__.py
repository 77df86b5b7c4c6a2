"""Views of recall besides the ranked list: why each result ranked and what was left out (``explain``),
versions of a memory (``supersession``), and a time window listed newest first (``browse``)."""
