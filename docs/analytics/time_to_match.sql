-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- Time to match: how long queued players searched before the queue matched them, by
-- mode and UTC hour of the match's start (queue seats only: `seat_fill = 'queue'`).
SET TimeZone = 'UTC';

SELECT m.mode,
       hour(m.started_at) AS hour,
       count(*) AS queued_seats,
       round(avg(p.queue_wait_seconds), 1) AS mean_seconds,
       round(median(p.queue_wait_seconds), 1) AS median_seconds,
       round(quantile_cont(p.queue_wait_seconds, 0.9), 1) AS p90_seconds
FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true) p
JOIN read_parquet('/tmp/basra-export/matches/*/*.parquet', hive_partitioning = true) m
    USING (date, match_id)
WHERE p.seat_fill = 'queue' AND p.queue_wait_seconds IS NOT NULL
GROUP BY m.mode, hour
ORDER BY m.mode, hour;
