-- The action log and rounds of a match are a few kilobytes of JSON each, stored
-- compressed out of line (TOAST). lz4 compresses and decompresses several times faster
-- than the default pglz, which was the largest cost of recording a match and of
-- reading one back for the analytics export. Only new rows use it. A server built
-- without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE matches
        ALTER COLUMN actions SET COMPRESSION lz4,
        ALTER COLUMN rounds SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available: match logs stay compressed with pglz';
END
$$;
