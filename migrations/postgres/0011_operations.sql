-- Operations chosen by a caption, /mode or the bot's default: every operation's name is allowed,
-- and a job keeps the operation's arguments beside its name. The SQLite migration of the same
-- number rebuilds its table to the same shape.
ALTER TABLE jobs DROP CONSTRAINT jobs_operation_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_operation_check
    CHECK (operation IN ('optimize', 'shrink', 'split', 'pages', 'text', 'info', 'rotate', 'decrypt', 'ocr', 'topdf'));

-- The operation's arguments as written (`180 2,4`), never a password; '' when none.
ALTER TABLE jobs ADD COLUMN arguments TEXT NOT NULL DEFAULT '';
-- A decrypt's password, only while the job is unfinished: every statement that ends a job
-- (ready, failed, cancelled, expired, forgotten) sets it NULL in the same UPDATE.
ALTER TABLE jobs ADD COLUMN secret TEXT;
-- The sender's Telegram language_code (`en`, `ru`), for OCR's default language.
ALTER TABLE jobs ADD COLUMN language_code TEXT;

-- The one-job-per-chat-and-file rule becomes a named unique index, as on SQLite, with the same
-- meaning as the table constraint it replaces.
ALTER TABLE jobs DROP CONSTRAINT jobs_chat_id_file_unique_id_key;
CREATE UNIQUE INDEX jobs_file ON jobs (chat_id, file_unique_id);

-- A chat's own default operation (`/mode`): what a document sent without a caption gets.
CREATE TABLE chat_modes (
    chat_id    BIGINT PRIMARY KEY,
    operation  TEXT   NOT NULL CHECK (operation IN ('optimize', 'shrink', 'split', 'text', 'info', 'ocr')),
    updated_at BIGINT NOT NULL
);
