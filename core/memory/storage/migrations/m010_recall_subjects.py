"""Versions of one memory: ``recall_docs.subject`` names what a memory is a version of.

A note stored with a metadata ``key`` is the version of that key current from its time on: every
note with the same key and an earlier time is superseded by the next one (see
:mod:`core.memory.recall.views.supersession`). The column is derived from the note's metadata like the
rest of ``recall_docs``, so a rebuild of the index recomputes it; the notes stored before this
migration are queued once to get it.
"""

SQL = """
ALTER TABLE recall_docs ADD COLUMN subject TEXT NOT NULL DEFAULT '';  -- 'note:<key>' for a keyed note, else ''
CREATE INDEX recall_docs_subject ON recall_docs (subject, occurred_at) WHERE subject != '';
"""
"""Both databases' form."""

SQLITE = """
INSERT OR IGNORE INTO cold_pending (item, queued_at)
    SELECT 'note:' || id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM cold_notes;
"""
"""SQLite's form."""

POSTGRES = """
INSERT INTO cold_pending (item, queued_at) SELECT 'note:' || id, agentos_now() FROM cold_notes ON CONFLICT DO NOTHING;
"""
"""PostgreSQL's form."""
