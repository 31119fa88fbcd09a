-- Tickets of several files: a Telegram album (one media_group_id), or the files sent between
-- `/merge` and `/done`, are one ticket whose sources, in order, become one PDF (`merge`).
--
-- `job_sources` holds each source of such a ticket, keyed by its first run: what Telegram said of
-- it, for getFile and for what people read. A ticket of one file keeps its source in `jobs` as
-- before and has no rows here. Once a run of several files is downloaded, its own `local_path` is
-- the folder that holds every source's file (`<position>`), its `real_size` their total and its
-- `sha256` the sha256 of their sha256s in order, so every statement about a run's source
-- (fetched, verified, lost, handed back, deleted) holds for it unchanged.
--
-- The new operation's name changes the CHECK on `jobs.operation`, which SQLite cannot change in
-- place: `jobs` is rebuilt, and `outbox`, which refers to it, with it (the procedure of
-- migration 0011, which says why). Each AUTOINCREMENT counter is carried over.

CREATE TABLE jobs_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    update_id         INTEGER NOT NULL,
    chat_id           INTEGER NOT NULL,
    user_id           INTEGER,
    message_id        INTEGER NOT NULL,
    file_id           TEXT    NOT NULL,
    file_unique_id    TEXT    NOT NULL,
    declared_name     TEXT,
    declared_mime     TEXT,
    declared_size     INTEGER,
    operation         TEXT    NOT NULL CHECK (operation IN ('optimize', 'shrink', 'split', 'pages', 'text', 'info',
                                                            'rotate', 'decrypt', 'ocr', 'topdf', 'merge')),
    status            TEXT    NOT NULL CHECK (status IN ('accepted', 'fetched', 'processing', 'ready', 'failed', 'expired')),
    local_path        TEXT,
    real_size         INTEGER,
    sha256            TEXT,
    detected_format   TEXT,
    lease_owner       TEXT,
    lease_token       INTEGER NOT NULL DEFAULT 0,
    lease_until       INTEGER,
    attempts          INTEGER NOT NULL DEFAULT 0,
    not_before        INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    error_detail      TEXT,
    result_path       TEXT,
    result_size       INTEGER,
    result_file_id    TEXT,
    result_expires_at INTEGER,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    source_losses     INTEGER NOT NULL DEFAULT 0,
    arguments         TEXT    NOT NULL DEFAULT '',
    secret            TEXT,
    language_code     TEXT,
    ticket_id         INTEGER REFERENCES jobs_new (id),
    node              TEXT,
    chosen_by_default INTEGER NOT NULL DEFAULT 0 CHECK (chosen_by_default IN (0, 1)),
    result_parts      INTEGER,
    -- While a ticket of several files is still taking them: 'album' (Telegram's media group,
    -- sealed once no part came for `[limits] album_quiet_window`) or 'merge' (opened by
    -- `/merge`, sealed by `/done`, or once no file came for `[limits] merge_idle`); NULL:
    -- sealed, or a single file.
    gathering         TEXT    CHECK (gathering IN ('album', 'merge')),
    -- The album's Telegram media_group_id, for the first run of an album's ticket.
    media_group_id    TEXT
);
INSERT INTO jobs_new (id, update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name, declared_mime, declared_size, operation, status, local_path, real_size, sha256, detected_format, lease_owner, lease_token, lease_until, attempts, not_before, error, error_detail, result_path, result_size, result_file_id, result_expires_at, created_at, updated_at, source_losses, arguments, secret, language_code, ticket_id, node, chosen_by_default, result_parts)
SELECT id, update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name, declared_mime, declared_size, operation, status, local_path, real_size, sha256, detected_format, lease_owner, lease_token, lease_until, attempts, not_before, error, error_detail, result_path, result_size, result_file_id, result_expires_at, created_at, updated_at, source_losses, arguments, secret, language_code, ticket_id, node, chosen_by_default, result_parts
FROM jobs;

CREATE TABLE outbox_new (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key     TEXT    NOT NULL UNIQUE,
    job_id              INTEGER REFERENCES jobs_new (id),
    chat_id             INTEGER NOT NULL,
    kind                TEXT    NOT NULL CHECK (kind IN ('ticket_reply', 'reply', 'result', 'failure', 'progress')),
    priority            INTEGER NOT NULL,
    body                TEXT    NOT NULL,
    reply_to_message_id INTEGER,
    status              TEXT    NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'unknown', 'dead', 'failed')),
    attempts            INTEGER NOT NULL DEFAULT 0,
    not_before          INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_token         INTEGER NOT NULL DEFAULT 0,
    lease_until         INTEGER,
    telegram_message_id INTEGER,
    telegram_file_id    TEXT,
    error               TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    state_at            INTEGER,
    button_label        TEXT,
    button_data         TEXT,
    part                INTEGER
);
INSERT INTO outbox_new (id, idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id, status, attempts, not_before, lease_owner, lease_token, lease_until, telegram_message_id, telegram_file_id, error, created_at, updated_at, state_at, button_label, button_data, part)
SELECT id, idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id, status, attempts, not_before, lease_owner, lease_token, lease_until, telegram_message_id, telegram_file_id, error, created_at, updated_at, state_at, button_label, button_data, part
FROM outbox;

DELETE FROM sqlite_sequence WHERE name IN ('jobs_new', 'outbox_new');
INSERT INTO sqlite_sequence (name, seq) SELECT name || '_new', seq FROM sqlite_sequence WHERE name IN ('jobs', 'outbox');

DROP TABLE outbox;
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
ALTER TABLE outbox_new RENAME TO outbox;

CREATE UNIQUE INDEX jobs_file ON jobs (chat_id, file_unique_id) WHERE ticket_id IS NULL;
CREATE UNIQUE INDEX jobs_run ON jobs (COALESCE(ticket_id, id), operation, arguments);
CREATE INDEX jobs_ticket ON jobs (ticket_id) WHERE ticket_id IS NOT NULL;
CREATE INDEX jobs_claim ON jobs (status, not_before, id);
CREATE INDEX jobs_chat ON jobs (chat_id, id);
CREATE INDEX jobs_expiry ON jobs (result_expires_at) WHERE status = 'ready';
CREATE INDEX jobs_held ON jobs (chat_id) WHERE lease_owner IS NOT NULL OR status IN ('fetched', 'processing');
CREATE INDEX jobs_user ON jobs (user_id);
CREATE INDEX jobs_ended ON jobs (updated_at) WHERE status IN ('failed', 'expired');
CREATE INDEX jobs_node ON jobs (node) WHERE node IS NOT NULL;
-- One ticket per chat and album.
CREATE UNIQUE INDEX jobs_album ON jobs (chat_id, media_group_id) WHERE media_group_id IS NOT NULL AND ticket_id IS NULL;
-- One open `/merge` per chat.
CREATE UNIQUE INDEX jobs_merging ON jobs (chat_id) WHERE gathering = 'merge';
CREATE INDEX outbox_open ON outbox (status, priority, id, not_before);
CREATE INDEX outbox_chat ON outbox (chat_id, id);
CREATE INDEX outbox_job ON outbox (job_id);
CREATE INDEX outbox_open_chat ON outbox (chat_id, id) WHERE status IN ('pending', 'sending');

-- Each source of a run of several files, from 1 in album order (Telegram's message order).
CREATE TABLE job_sources (
    job_id          INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    message_id      INTEGER NOT NULL,
    file_id         TEXT    NOT NULL,
    file_unique_id  TEXT    NOT NULL,
    declared_name   TEXT,
    declared_mime   TEXT,
    declared_size   INTEGER,
    PRIMARY KEY (job_id, position),
    -- The same file twice in one album is one source.
    UNIQUE (job_id, file_unique_id)
);
