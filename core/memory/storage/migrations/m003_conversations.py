"""The provider tables of seeds 000/001: conversations, messages, the summary DAG, profiles, changelog, snapshots, FTS5."""

_TABLES = """
CREATE TABLE ctx_conversations (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    archived INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    last_active TEXT NOT NULL
);

CREATE TABLE ctx_messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,                 -- 1, 2, ... within the conversation
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL,
    tool_calls TEXT,                      -- JSON [{"name", "arguments"}] or NULL
    tool_name TEXT NOT NULL DEFAULT '',
    token_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (conversation_id, seq)
);

-- Nodes of the summary DAG; never empty.
CREATE TABLE ctx_summaries (
    id TEXT PRIMARY KEY,                  -- sum_<16 hex>
    conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth INTEGER NOT NULL CHECK (depth >= 0),
    content TEXT NOT NULL CHECK (length(trim(content)) > 0),
    token_count INTEGER NOT NULL,         -- tokens of the summary as rendered in context
    source_token_count INTEGER NOT NULL,  -- tokens of what it summarises
    descendant_count INTEGER NOT NULL,    -- original messages covered
    earliest_at TEXT NOT NULL,
    latest_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX ctx_summaries_conversation ON ctx_summaries (conversation_id);

-- The context window in order: each item is a message or a summary. Positions are
-- sparse: a compacted run is replaced by one item at the run's first position.
CREATE TABLE ctx_items (
    conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    message_id INTEGER REFERENCES ctx_messages (id),
    summary_id TEXT REFERENCES ctx_summaries (id),
    token_count INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, position),
    CHECK ((message_id IS NULL) <> (summary_id IS NULL))
);

-- Leaf summary -> its source messages, in order.
CREATE TABLE ctx_summary_messages (
    summary_id TEXT NOT NULL REFERENCES ctx_summaries (id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES ctx_messages (id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, ordinal)
);
CREATE UNIQUE INDEX ctx_summary_messages_message ON ctx_summary_messages (message_id);

-- Condensed summary (parent) -> the summaries it was built from (children), in order.
CREATE TABLE ctx_summary_parents (
    parent_id TEXT NOT NULL REFERENCES ctx_summaries (id) ON DELETE CASCADE,
    child_id TEXT NOT NULL REFERENCES ctx_summaries (id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (parent_id, ordinal)
);
CREATE UNIQUE INDEX ctx_summary_parents_child ON ctx_summary_parents (child_id);

-- Profile, soul and constraints per (user, agent), sharing one version counter.
CREATE TABLE ctx_agent_memory (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    profile TEXT NOT NULL DEFAULT '',
    soul TEXT NOT NULL DEFAULT '',
    constraints TEXT NOT NULL DEFAULT '[]',  -- JSON [{"id", "text", "created_at"}]
    version INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);

-- Every write of ctx_agent_memory, in the same transaction; id increases with time.
CREATE TABLE ctx_changelog (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL,
    action TEXT NOT NULL,
    source TEXT NOT NULL,
    version_before INTEGER,
    version_after INTEGER,
    before_text TEXT NOT NULL DEFAULT '',
    after_text TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX ctx_changelog_owner ON ctx_changelog (user_id, agent_id, scope, created_at, id);

CREATE TABLE ctx_session_snapshots (
    session_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);
"""

# External-content FTS5 indexes kept in step by triggers (messages and summaries are immutable).
_SEARCH = """
CREATE VIRTUAL TABLE ctx_messages_fts USING fts5 (content, content = 'ctx_messages', content_rowid = 'id');
CREATE TRIGGER ctx_messages_fts_insert AFTER INSERT ON ctx_messages BEGIN
    INSERT INTO ctx_messages_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER ctx_messages_fts_delete AFTER DELETE ON ctx_messages BEGIN
    INSERT INTO ctx_messages_fts (ctx_messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER ctx_messages_fts_update AFTER UPDATE OF content ON ctx_messages BEGIN
    INSERT INTO ctx_messages_fts (ctx_messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO ctx_messages_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE VIRTUAL TABLE ctx_summaries_fts USING fts5 (content, content = 'ctx_summaries', content_rowid = 'rowid');
CREATE TRIGGER ctx_summaries_fts_insert AFTER INSERT ON ctx_summaries BEGIN
    INSERT INTO ctx_summaries_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER ctx_summaries_fts_delete AFTER DELETE ON ctx_summaries BEGIN
    INSERT INTO ctx_summaries_fts (ctx_summaries_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
"""


SQLITE = _TABLES + _SEARCH
"""SQLite's form."""

POSTGRES = """
-- Full-text search by tsvector and GIN where SQLite has FTS5.

CREATE TABLE ctx_conversations (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL DEFAULT '',
    user_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    archived INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    last_active TEXT NOT NULL
);

CREATE TABLE ctx_messages (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    conversation_id BIGINT NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,                 -- 1, 2, ... within the conversation
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content TEXT NOT NULL,
    tool_calls TEXT,                      -- JSON [{"name", "arguments"}] or NULL
    tool_name TEXT NOT NULL DEFAULT '',
    token_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (conversation_id, seq)
);

-- Nodes of the summary DAG; never empty.
CREATE TABLE ctx_summaries (
    id TEXT PRIMARY KEY,                  -- sum_<16 hex>
    conversation_id BIGINT NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth INTEGER NOT NULL CHECK (depth >= 0),
    content TEXT NOT NULL CHECK (length(trim(content)) > 0),
    token_count INTEGER NOT NULL,
    source_token_count INTEGER NOT NULL,
    descendant_count INTEGER NOT NULL,
    earliest_at TEXT NOT NULL,
    latest_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX ctx_summaries_conversation ON ctx_summaries (conversation_id);

-- The context window in order; positions are sparse (a compacted run becomes one item).
CREATE TABLE ctx_items (
    conversation_id BIGINT NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    message_id BIGINT REFERENCES ctx_messages (id),
    summary_id TEXT REFERENCES ctx_summaries (id),
    token_count INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, position),
    CHECK ((message_id IS NULL) <> (summary_id IS NULL))
);

CREATE TABLE ctx_summary_messages (
    summary_id TEXT NOT NULL REFERENCES ctx_summaries (id) ON DELETE CASCADE,
    message_id BIGINT NOT NULL REFERENCES ctx_messages (id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (summary_id, ordinal)
);
CREATE UNIQUE INDEX ctx_summary_messages_message ON ctx_summary_messages (message_id);

CREATE TABLE ctx_summary_parents (
    parent_id TEXT NOT NULL REFERENCES ctx_summaries (id) ON DELETE CASCADE,
    child_id TEXT NOT NULL REFERENCES ctx_summaries (id),
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (parent_id, ordinal)
);
CREATE UNIQUE INDEX ctx_summary_parents_child ON ctx_summary_parents (child_id);

CREATE TABLE ctx_agent_memory (
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    profile TEXT NOT NULL DEFAULT '',
    soul TEXT NOT NULL DEFAULT '',
    constraints TEXT NOT NULL DEFAULT '[]',
    version INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);

CREATE TABLE ctx_changelog (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    session_id TEXT NOT NULL DEFAULT '',
    scope TEXT NOT NULL,
    action TEXT NOT NULL,
    source TEXT NOT NULL,
    version_before INTEGER,
    version_after INTEGER,
    before_text TEXT NOT NULL DEFAULT '',
    after_text TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX ctx_changelog_owner ON ctx_changelog (user_id, agent_id, scope, created_at, id);

CREATE TABLE ctx_session_snapshots (
    session_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
);

-- Full-text search: expression indexes the dialect's queries use as they are. A tsvector holds at most
-- 1 MB, so a message is indexed by its first 200,000 characters (stored whole all the same).
CREATE INDEX ctx_messages_fts ON ctx_messages USING gin (to_tsvector('simple', left(content, 200000)));
CREATE INDEX ctx_summaries_fts ON ctx_summaries USING gin (to_tsvector('simple', left(content, 200000)));
"""
"""PostgreSQL's form."""
