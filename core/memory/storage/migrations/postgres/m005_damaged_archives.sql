-- A damaged or missing archive is recorded instead of being retried forever (m005_damaged_archives.py in
-- PostgreSQL): set when the archive failed its sha256 (moved to memory/quarantine/) or is missing; its
-- summary is indexed, its entries are not, and indexing does not retry it.
ALTER TABLE compaction_history ADD COLUMN index_error TEXT;
