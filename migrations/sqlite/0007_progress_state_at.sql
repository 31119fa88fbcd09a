-- For progress rows: when the state the row shows happened. Reports can arrive out of order (a
-- download worker's "downloaded" after the processing worker's "ready"), so a report older than
-- the state a row already shows, or has already shown, is dropped.
ALTER TABLE outbox ADD COLUMN state_at INTEGER;
