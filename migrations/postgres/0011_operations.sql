-- Operations chosen by a caption, /mode, a button or the bot's default: every operation's name is
-- allowed, and a job keeps the operation's arguments beside its name; one document (a ticket) may
-- have several runs, one per operation and arguments (the SQLite migration of the same number
-- says how, and rebuilds its table to the same shape).
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

-- The ticket (its first run) this run belongs to; NULL: this row is the ticket's first run.
ALTER TABLE jobs ADD COLUMN ticket_id BIGINT REFERENCES jobs (id);

-- One ticket per chat and document (its first runs), one run per ticket, operation and arguments.
ALTER TABLE jobs DROP CONSTRAINT jobs_chat_id_file_unique_id_key;
CREATE UNIQUE INDEX jobs_file ON jobs (chat_id, file_unique_id) WHERE ticket_id IS NULL;
CREATE UNIQUE INDEX jobs_run ON jobs ((COALESCE(ticket_id, id)), operation, arguments);
CREATE INDEX jobs_ticket ON jobs (ticket_id) WHERE ticket_id IS NOT NULL;

-- A chat's own default operation (`/mode`): what a document sent without a caption gets.
CREATE TABLE chat_modes (
    chat_id    BIGINT PRIMARY KEY,
    operation  TEXT   NOT NULL CHECK (operation IN ('optimize', 'shrink', 'split', 'text', 'info', 'ocr')),
    updated_at BIGINT NOT NULL
);
