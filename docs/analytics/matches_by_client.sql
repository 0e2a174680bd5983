-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- Seats, matches and players by client app per UTC week: the platform and version each
-- human seat's player last signed in from at or before the match's end (NULL: no
-- sign-in named a client, or the match was recorded before seats kept it). Bots are
-- left out.
SET TimeZone = 'UTC';

SELECT date_trunc('week', p.date)::DATE AS week,
       p.client_platform AS platform,
       p.client_app_version AS app_version,
       count(*) AS seats,
       count(DISTINCT p.match_id) AS matches,
       count(DISTINCT p.user_id) AS players
FROM read_parquet('/tmp/basra-export/match_players/*/*.parquet', hive_partitioning = true) p
WHERE NOT p.is_bot
GROUP BY ALL
ORDER BY week, seats DESC, platform NULLS LAST, app_version NULLS LAST;
