-- engine: duckdb (over a `basra analytics export` in /tmp/basra-export)
-- Daily new players: each player on the UTC day it was first seen — its sign-up, or its
-- first match when a record is older (`simulate --fast` backdates the matches of the
-- guests it signs up now) —, by kind. Deleted accounts count on the day of their first
-- match (their sign-up went with the account).
SET TimeZone = 'UTC';

SELECT CAST(least(signed_up_at, first_match_at) AS DATE) AS day,
       count(*) AS new_players,
       count(*) FILTER (WHERE kind = 'guest') AS guests,
       count(*) FILTER (WHERE kind IN ('username', 'provider')) AS registered,
       count(*) FILTER (WHERE deleted) AS deleted_since,
       count(*) FILTER (WHERE matches_played = 0) AS never_played
FROM read_parquet('/tmp/basra-export/players/*.parquet')
GROUP BY day
ORDER BY day;
