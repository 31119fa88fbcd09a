-- The hosts running `docket run` on this database, each under its `[node] name`, with the
-- heartbeat that tells a live host from a dead one (`[node] dead_after`), the bot-wide roles it
-- holds, and its budgets, for `docket nodes`. One row per name: a host that starts again takes
-- its row back; a name a live process holds is refused.
CREATE TABLE nodes (
    name           TEXT PRIMARY KEY,
    -- `<host>:<pid>:`, the prefix of every lease the process holds.
    process        TEXT NOT NULL,
    started_at     BIGINT NOT NULL,
    last_seen      BIGINT NOT NULL,
    -- Set by a clean stop; NULL while the process runs (or died without stopping).
    stopped_at     BIGINT,
    -- The roles held at the last heartbeat, comma-separated (`poller`).
    roles          TEXT NOT NULL DEFAULT '',
    bytes_reserved BIGINT NOT NULL DEFAULT 0,
    bytes_budget   BIGINT NOT NULL DEFAULT 0,
    memory_reserved BIGINT NOT NULL DEFAULT 0,
    memory_budget  BIGINT NOT NULL DEFAULT 0,
    -- Set by `docket drain`: the node stops in order at its next heartbeat.
    drain_requested_at BIGINT
);
