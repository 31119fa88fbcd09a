-- Indexes that keep the claims and the janitor independent of history (measured in BENCHMARKS.md,
-- "Query latency at 1,000,000 rows"). Partial indexes: each holds only the few rows a claim asks
-- about, so a chat with 20,000 old jobs or messages costs the same as a new one.

-- The download claim's per-chat bound counts a chat's jobs that hold a lease or a source on disk.
-- Without this index the count walked every job the chat ever had (21 s for one claim during a
-- 1,000-job flood of one chat).
CREATE INDEX jobs_held ON jobs (chat_id) WHERE lease_owner IS NOT NULL OR status IN ('fetched', 'processing');

-- The message claim's per-chat order check looks for an earlier open message of the same chat.
-- Without this index it walked the chat's whole sent history for every pending row.
CREATE INDEX outbox_open_chat ON outbox (chat_id, id) WHERE status IN ('pending', 'sending');
