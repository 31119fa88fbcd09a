-- Whether no caption named the run's operation: it came from the chat's `/mode`, the bot's
-- `[processing] default_operation`, or (for a file declared as an image) `topdf`. Such a choice
-- rests on the declared name and MIME type, which may lie; once the content's real format is
-- known, processing may switch the run to the operation that fits it (a "photo.png" that is a
-- PDF gets the chat's default; a "report.pdf" that is a PNG becomes a PDF). Runs from before
-- this column are taken as chosen on purpose, as they were.
ALTER TABLE jobs ADD COLUMN chosen_by_default INTEGER NOT NULL DEFAULT 0 CHECK (chosen_by_default IN (0, 1));
