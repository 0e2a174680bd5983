-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- Matches per active player per UTC day: mean, median, 90th percentile and most.
SET TimeZone = 'UTC';

WITH per_player AS (
    SELECT date AS day, user_id, count(*) AS matches
    FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true)
    WHERE user_id IS NOT NULL
    GROUP BY date, user_id
)
SELECT day,
       count(*) AS active_players,
       round(avg(matches), 2) AS mean,
       median(matches) AS median,
       quantile_disc(matches, 0.9) AS p90,
       max(matches) AS most
FROM per_player
GROUP BY day
ORDER BY day;
