"""A damaged or missing archive is recorded instead of being retried forever."""

SQL = """
-- Set when the archive failed its sha256 (moved to memory/quarantine/) or is missing:
-- its summary is indexed, its entries are not, and indexing does not retry it.
ALTER TABLE compaction_history ADD COLUMN index_error TEXT;
"""
"""Both databases' form."""
