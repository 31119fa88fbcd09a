-- PostgreSQL's 0009 adds notifications that wake the workers of other hosts. SQLite serves one
-- process (docket run holds a lock on the database), whose workers wake each other in memory:
-- nothing to add. The migration exists so both backends keep the same numbering.
SELECT 1;
