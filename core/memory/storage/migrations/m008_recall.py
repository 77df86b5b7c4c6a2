"""Recall over every tier: one row a memory in ``recall_docs``, a full-text index, the forget list.

``recall_docs`` is an index, rebuildable from the sources: notes (``cold_notes``),
facts, LOG.md and its archives, conversation messages and summaries, LangGraph
store items (``store_items``, one doc a passage). Each row
is searchable by words at once (FTS5, kept in step by triggers) and gets its
vector in LanceDB in the background (``vector_state`` 0 until then).
Conversation messages and summaries are queued in ``cold_pending`` by triggers,
like facts and store items (``m004_store_items``). Every source is queued once
here, so an agent's existing memories become docs at its first open; the
vectors of earlier versions (archive chunks) are replaced as the docs are
embedded.
"""

from core.memory.storage.migrations.m002_cold import _NOW, _QUEUE


SQLITE = f"""
        ALTER TABLE cold_notes ADD COLUMN occurred_at TEXT;
        ALTER TABLE cold_notes ADD COLUMN expires_at TEXT;
        ALTER TABLE cold_notes ADD COLUMN content_key TEXT;
        ALTER TABLE cold_notes ADD COLUMN updated_at TEXT;
        CREATE INDEX cold_notes_content_key ON cold_notes (content_key);

        CREATE TABLE recall_docs (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,          -- note:<hex>, fact:<key>, log:<seq>, summary:<archive>, msg:<id>, sum:<id>, item:<id>:<n>
            kind TEXT NOT NULL,               -- note, summary, fact, log, log_archive, message, item
            tier TEXT NOT NULL,               -- warm (LOG.md), cold (archives, notes, facts), conversation
            source TEXT NOT NULL,             -- where the original is
            text TEXT NOT NULL,               -- the memory as stored (secrets redacted)
            context TEXT NOT NULL DEFAULT '', -- speaker, dates and resolved relative dates, indexed beside text
            metadata TEXT NOT NULL DEFAULT '{{}}',
            speaker TEXT NOT NULL DEFAULT '',
            thread TEXT NOT NULL DEFAULT '',  -- the session or conversation it belongs to ('' none)
            occurred_at TEXT NOT NULL,        -- when it happened (UTC ISO-8601)
            created_at TEXT NOT NULL,         -- when it was stored
            expires_at TEXT,
            vector_state INTEGER NOT NULL DEFAULT 0  -- 0: vector to compute, 1: in LanceDB
        );
        CREATE INDEX recall_docs_thread ON recall_docs (thread, rowid);
        CREATE INDEX recall_docs_pending ON recall_docs (rowid) WHERE vector_state = 0;
        CREATE INDEX recall_docs_occurred ON recall_docs (occurred_at);

        CREATE VIRTUAL TABLE recall_fts USING fts5 (
            text, context, content = 'recall_docs', content_rowid = 'rowid', tokenize = 'porter unicode61'
        );
        CREATE VIRTUAL TABLE recall_terms USING fts5vocab (recall_fts, 'row');
        CREATE TRIGGER recall_docs_fts_insert AFTER INSERT ON recall_docs BEGIN
            INSERT INTO recall_fts (rowid, text, context) VALUES (new.rowid, new.text, new.context);
        END;
        CREATE TRIGGER recall_docs_fts_delete AFTER DELETE ON recall_docs BEGIN
            INSERT INTO recall_fts (recall_fts, rowid, text, context) VALUES ('delete', old.rowid, old.text, old.context);
        END;
        CREATE TRIGGER recall_docs_fts_update AFTER UPDATE OF text, context ON recall_docs BEGIN
            INSERT INTO recall_fts (recall_fts, rowid, text, context) VALUES ('delete', old.rowid, old.text, old.context);
            INSERT INTO recall_fts (rowid, text, context) VALUES (new.rowid, new.text, new.context);
        END;

        -- Ids removed by forget_memory(ies); derived from LOG.md's FORGET entries, which rebuild reads.
        CREATE TABLE recall_forgotten (
            id TEXT PRIMARY KEY,
            forgotten_at TEXT NOT NULL
        );

        -- Ids of forgotten or deleted docs whose vectors are still to be deleted from LanceDB.
        CREATE TABLE recall_purge (
            id TEXT PRIMARY KEY
        );

        -- Progress of the LOG.md indexer: the last seq turned into recall_docs.
        CREATE TABLE recall_state (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        CREATE TRIGGER ctx_messages_recall_insert AFTER INSERT ON ctx_messages BEGIN
            {_QUEUE.format(item="'msg:' || NEW.id", now=_NOW)}
        END;
        CREATE TRIGGER ctx_messages_recall_delete AFTER DELETE ON ctx_messages BEGIN
            {_QUEUE.format(item="'msg:' || OLD.id", now=_NOW)}
        END;
        CREATE TRIGGER ctx_summaries_recall_insert AFTER INSERT ON ctx_summaries BEGIN
            {_QUEUE.format(item="'sum:' || NEW.id", now=_NOW)}
        END;
        CREATE TRIGGER ctx_summaries_recall_delete AFTER DELETE ON ctx_summaries BEGIN
            {_QUEUE.format(item="'sum:' || OLD.id", now=_NOW)}
        END;

        -- Memories stored before recall indexed them.
        INSERT OR IGNORE INTO cold_pending (item, queued_at) SELECT 'msg:' || id, {_NOW} FROM ctx_messages;
        INSERT OR IGNORE INTO cold_pending (item, queued_at) SELECT 'sum:' || id, {_NOW} FROM ctx_summaries;
        INSERT OR IGNORE INTO cold_pending (item, queued_at) SELECT 'note:' || id, {_NOW} FROM cold_notes;
        INSERT OR IGNORE INTO cold_pending (item, queued_at) SELECT 'fact:' || key, {_NOW} FROM user_facts;
        INSERT OR IGNORE INTO cold_pending (item, queued_at) SELECT 'item:' || id, {_NOW} FROM store_items;
        UPDATE compaction_history SET indexed_at = NULL;
        """
"""SQLite's form."""

POSTGRES = """
-- SQLite's FTS5 table becomes a stored tsvector column with a GIN index: the memory's own words
-- weighted A, its context (speaker, dates) weighted B, stemmed by the 'english' configuration
-- (Snowball's English stemmer, stop words left out; a tsvector holds at most 1 MB, so the first
-- 200,000 characters of each are indexed). ``tokens`` counts the words of both, as FTS5 counts a
-- row's length for BM25. core/memory/storage/words.py reads both.

ALTER TABLE cold_notes ADD COLUMN occurred_at TEXT;
ALTER TABLE cold_notes ADD COLUMN expires_at TEXT;
ALTER TABLE cold_notes ADD COLUMN content_key TEXT;
ALTER TABLE cold_notes ADD COLUMN updated_at TEXT;
CREATE INDEX cold_notes_content_key ON cold_notes (content_key);

CREATE TABLE recall_docs (
    rowid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,          -- note:<hex>, fact:<key>, log:<seq>, summary:<archive>, msg:<id>, sum:<id>, item:<id>:<n>
    kind TEXT NOT NULL,               -- note, summary, fact, log, log_archive, message, item
    tier TEXT NOT NULL,               -- warm (LOG.md), cold (archives, notes, facts), conversation
    source TEXT NOT NULL,             -- where the original is
    text TEXT NOT NULL,               -- the memory as stored (secrets redacted)
    context TEXT NOT NULL DEFAULT '', -- speaker, dates and resolved relative dates, indexed beside text
    metadata TEXT NOT NULL DEFAULT '{}',
    speaker TEXT NOT NULL DEFAULT '',
    thread TEXT NOT NULL DEFAULT '',  -- the session or conversation it belongs to ('' none)
    occurred_at TEXT NOT NULL,        -- when it happened (UTC ISO-8601)
    created_at TEXT NOT NULL,         -- when it was stored
    expires_at TEXT,
    vector_state INTEGER NOT NULL DEFAULT 0,  -- 0: vector to compute, 1: in LanceDB
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', left(text, 200000)), 'A')
        || setweight(to_tsvector('english', left(context, 200000)), 'B')) STORED,
    tokens INTEGER GENERATED ALWAYS AS (cardinality(regexp_split_to_array(
        btrim(regexp_replace(left(text, 200000) || ' ' || left(context, 200000), '[^[:alnum:]]+', ' ', 'g')),
        ' '))) STORED
);
CREATE INDEX recall_docs_thread ON recall_docs (thread, rowid);
CREATE INDEX recall_docs_pending ON recall_docs (rowid) WHERE vector_state = 0;
CREATE INDEX recall_docs_occurred ON recall_docs (occurred_at);
CREATE INDEX recall_docs_search ON recall_docs USING gin (search);

-- Ids removed by forget_memory(ies); derived from LOG.md's FORGET entries, which rebuild reads.
CREATE TABLE recall_forgotten (
    id TEXT PRIMARY KEY,
    forgotten_at TEXT NOT NULL
);

-- Ids of forgotten or deleted docs whose vectors are still to be deleted from LanceDB.
CREATE TABLE recall_purge (
    id TEXT PRIMARY KEY
);

-- Progress of the LOG.md indexer: the last seq turned into recall_docs.
CREATE TABLE recall_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Messages and summaries are queued as msg:<id> and sum:<id> (the trigger's argument is the prefix).
CREATE FUNCTION recall_queue_row() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM agentos_queue(TG_ARGV[0] || (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END));
    RETURN NULL;
END $$;
CREATE TRIGGER ctx_messages_recall AFTER INSERT OR DELETE ON ctx_messages
    FOR EACH ROW EXECUTE FUNCTION recall_queue_row('msg:');
CREATE TRIGGER ctx_summaries_recall AFTER INSERT OR DELETE ON ctx_summaries
    FOR EACH ROW EXECUTE FUNCTION recall_queue_row('sum:');

-- Memories stored before recall indexed them.
INSERT INTO cold_pending (item, queued_at) SELECT 'msg:' || id, agentos_now() FROM ctx_messages ON CONFLICT DO NOTHING;
INSERT INTO cold_pending (item, queued_at) SELECT 'sum:' || id, agentos_now() FROM ctx_summaries ON CONFLICT DO NOTHING;
INSERT INTO cold_pending (item, queued_at) SELECT 'note:' || id, agentos_now() FROM cold_notes ON CONFLICT DO NOTHING;
INSERT INTO cold_pending (item, queued_at) SELECT 'fact:' || key, agentos_now() FROM user_facts ON CONFLICT DO NOTHING;
INSERT INTO cold_pending (item, queued_at) SELECT 'item:' || id, agentos_now() FROM store_items ON CONFLICT DO NOTHING;
UPDATE compaction_history SET indexed_at = NULL;
"""
"""PostgreSQL's form."""
