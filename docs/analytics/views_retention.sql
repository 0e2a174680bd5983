-- engine: postgres (psql, as a login role in basra_analyst, over the analyst views)
-- The same retention figures without an export: new players per UTC day, and D1 / D7 /
-- D30 retention by cohort (as new_players.sql and retention.sql compute them), straight
-- from analyst.players and analyst.match_players.

-- New players per day, by kind.
SELECT LEAST(signup_day, first_match_day) AS day,
       count(*) AS new_players,
       count(*) FILTER (WHERE kind = 'guest') AS guests,
       count(*) FILTER (WHERE kind IN ('username', 'provider')) AS registered,
       count(*) FILTER (WHERE deleted) AS deleted_since
FROM analyst.players
GROUP BY 1
ORDER BY 1;

-- D1 / D7 / D30 retention by cohort (NULL where the data does not reach day k yet).
WITH players AS (
    SELECT user_id, LEAST(signup_day, first_match_day) AS cohort FROM analyst.players
),
active AS (
    SELECT DISTINCT user_id, day FROM analyst.match_players WHERE user_id IS NOT NULL
),
last AS (SELECT max(day) AS day FROM active)
SELECT p.cohort,
       count(DISTINCT p.user_id) AS players,
       CASE WHEN p.cohort + 1 <= last.day THEN round(count(DISTINCT a.user_id) FILTER (WHERE a.day = p.cohort + 1)::NUMERIC / count(DISTINCT p.user_id), 3) END AS d1,
       CASE WHEN p.cohort + 7 <= last.day THEN round(count(DISTINCT a.user_id) FILTER (WHERE a.day = p.cohort + 7)::NUMERIC / count(DISTINCT p.user_id), 3) END AS d7,
       CASE WHEN p.cohort + 30 <= last.day THEN round(count(DISTINCT a.user_id) FILTER (WHERE a.day = p.cohort + 30)::NUMERIC / count(DISTINCT p.user_id), 3) END AS d30
FROM players p
CROSS JOIN last
LEFT JOIN active a ON a.user_id = p.user_id AND a.day IN (p.cohort + 1, p.cohort + 7, p.cohort + 30)
WHERE p.cohort IS NOT NULL
GROUP BY p.cohort, last.day
ORDER BY p.cohort;

-- Time to match by mode and UTC hour of the start (queue seats only).
SELECT m.mode,
       extract(hour FROM m.started_at AT TIME ZONE 'UTC')::INTEGER AS hour,
       count(*) AS queued_seats,
       round(avg(p.queue_wait_seconds)::NUMERIC, 1) AS mean_seconds,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY p.queue_wait_seconds)::NUMERIC, 1) AS median_seconds
FROM analyst.match_players p
JOIN analyst.matches m USING (match_id)
WHERE p.seat_fill = 'queue'
GROUP BY 1, 2
ORDER BY 1, 2;
