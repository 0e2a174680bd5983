-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- Daily active players (people with a seat in a match that ended that UTC day), split
-- into the day's new players and returning ones.
SET TimeZone = 'UTC';

WITH players AS (
    SELECT user_id, CAST(least(signed_up_at, first_match_at) AS DATE) AS cohort
    FROM read_parquet('/tmp/basra-export/players/*.parquet')
),
active AS (
    SELECT DISTINCT user_id, date AS day
    FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true)
    WHERE user_id IS NOT NULL
)
SELECT a.day,
       count(*) AS active_players,
       count(*) FILTER (WHERE p.cohort = a.day) AS new_players,
       count(*) FILTER (WHERE p.cohort < a.day) AS returning_players
FROM active a
LEFT JOIN players p USING (user_id)
GROUP BY a.day
ORDER BY a.day;
