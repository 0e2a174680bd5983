-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- The share of seats a bot filled, by UTC day and mode, and how the other seats were
-- filled (queue, code, lobby, invite, rematch, host; NULL for records made before
-- seats carried it).
SET TimeZone = 'UTC';

SELECT p.date AS day,
       m.mode,
       count(*) AS seats,
       round(avg(p.is_bot::INTEGER), 3) AS bot_share,
       count(*) FILTER (WHERE p.seat_fill = 'queue') AS queue,
       count(*) FILTER (WHERE p.seat_fill IN ('code', 'lobby', 'invite', 'host')) AS private_room,
       count(*) FILTER (WHERE p.seat_fill = 'rematch') AS rematch
FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true) p
JOIN read_parquet('/tmp/basra-export/matches/*/*.parquet', hive_partitioning = true) m
    USING (date, match_id)
GROUP BY p.date, m.mode
ORDER BY day, m.mode;
