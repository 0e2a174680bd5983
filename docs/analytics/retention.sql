-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- D1 / D7 / D30 retention by sign-up cohort: of the players first seen on a UTC day
-- (new_players.sql), the share who played a match 1, 7 and 30 days later. "Played" is
-- the activity the export holds (a seat in match_players); a cohort too recent for day
-- k of the data shows NULL there, not 0. Each player's three (player, day) pairs are
-- looked up among the seats by a semi join, as the seats stream by: no DISTINCT over
-- every seat (about twice as fast over 5,000,000 matches: libs/analytics/README.md).
SET TimeZone = 'UTC';

WITH players AS (
    SELECT user_id, CAST(least(signed_up_at, first_match_at) AS DATE) AS cohort
    FROM read_parquet('/tmp/basra-export/players/*.parquet')
),
seats AS (
    SELECT user_id, date AS day
    FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true)
    WHERE user_id IS NOT NULL
),
wanted AS (
    SELECT p.user_id, p.cohort, k.k, p.cohort + k.k AS day
    FROM players p CROSS JOIN (VALUES (1), (7), (30)) k(k)
),
back AS (
    SELECT cohort,
           count(*) FILTER (WHERE k = 1) AS d1,
           count(*) FILTER (WHERE k = 7) AS d7,
           count(*) FILTER (WHERE k = 30) AS d30
    FROM wanted w
    SEMI JOIN seats s ON s.user_id = w.user_id AND s.day = w.day
    GROUP BY cohort
),
cohorts AS (
    SELECT cohort, count(*) AS players FROM players GROUP BY cohort
),
last AS (SELECT max(day) AS day FROM seats)
SELECT c.cohort,
       c.players,
       CASE WHEN c.cohort + 1 <= last.day THEN round(coalesce(b.d1, 0) / c.players, 3) END AS d1,
       CASE WHEN c.cohort + 7 <= last.day THEN round(coalesce(b.d7, 0) / c.players, 3) END AS d7,
       CASE WHEN c.cohort + 30 <= last.day THEN round(coalesce(b.d30, 0) / c.players, 3) END AS d30
FROM cohorts c
CROSS JOIN last
LEFT JOIN back b USING (cohort)
ORDER BY c.cohort;
