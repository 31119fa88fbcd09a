-- Tickets of several files: a Telegram album (one media_group_id), or the files sent between
-- `/merge` and `/done`, are one ticket whose sources, in order, become one PDF (`merge`). The
-- SQLite migration of the same number says how, and rebuilds its tables to the same shape.
ALTER TABLE jobs DROP CONSTRAINT jobs_operation_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_operation_check
    CHECK (operation IN ('optimize', 'shrink', 'split', 'pages', 'text', 'info', 'rotate', 'decrypt', 'ocr', 'topdf',
                         'merge'));

-- While a ticket of several files is still taking them: 'album' (Telegram's media group,
-- sealed once no part came for `[limits] album_quiet_window`) or 'merge' (opened by `/merge`,
-- sealed by `/done`, or once no file came for `[limits] merge_idle`); NULL: sealed, or a
-- single file.
ALTER TABLE jobs ADD COLUMN gathering TEXT CHECK (gathering IN ('album', 'merge'));
-- The album's Telegram media_group_id, for the first run of an album's ticket.
ALTER TABLE jobs ADD COLUMN media_group_id TEXT;
-- One ticket per chat and album.
CREATE UNIQUE INDEX jobs_album ON jobs (chat_id, media_group_id) WHERE media_group_id IS NOT NULL AND ticket_id IS NULL;
-- One open `/merge` per chat.
CREATE UNIQUE INDEX jobs_merging ON jobs (chat_id) WHERE gathering = 'merge';

-- Each source of a run of several files, from 1 in album order (Telegram's message order).
CREATE TABLE job_sources (
    job_id          BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    position        BIGINT NOT NULL,
    message_id      BIGINT NOT NULL,
    file_id         TEXT   NOT NULL,
    file_unique_id  TEXT   NOT NULL,
    declared_name   TEXT,
    declared_mime   TEXT,
    declared_size   BIGINT,
    PRIMARY KEY (job_id, position),
    -- The same file twice in one album is one source.
    UNIQUE (job_id, file_unique_id)
);
