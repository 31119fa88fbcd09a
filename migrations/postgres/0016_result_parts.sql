-- Results sent in parts (`split 45MB`): a stored ZIP whose entries each go out as a document
-- of their own. `jobs.result_parts` says how many there are (NULL: the result is one file), so
-- a `/get` can queue every part without reading the archive; `outbox.part` is the part a
-- result message sends, from 1 (NULL: the whole result).
ALTER TABLE jobs ADD COLUMN result_parts BIGINT;
ALTER TABLE outbox ADD COLUMN part BIGINT;
