-- The analyst schema: views over the match records that an analyst can query
-- without knowing the JSON layout of `matches`, and a read-only role that sees
-- these views and nothing else (no users, tokens, password hashes or devices).
--
-- The views read `matches` and `match_players` as their owner, so the role
-- needs no privilege on the tables themselves. The tables are unchanged; one
-- index is added so an incremental export finds new records by recorded_at.
--
-- Column meanings are documented in libs/analytics/README.md ("SQL views").

CREATE SCHEMA IF NOT EXISTS analyst;

CREATE INDEX IF NOT EXISTS matches_recorded ON matches (recorded_at, match_id);

-- Per match: format, result and shape, one row per recorded match.
CREATE VIEW analyst.matches AS
SELECT
    m.match_id,
    m.room_id,
    CASE
        WHEN m.ranked THEN 'ranked'
        WHEN s.bots > 0 THEN 'with_bots'
        ELSE 'casual'
    END AS mode,
    m.ranked,
    (m.settings ->> 'seats')::SMALLINT AS seats,
    -- A queue preset ("2p-101": seats and target, every other rule the
    -- default) or 'custom' (a private room with its own rules).
    CASE
        WHEN (m.settings - 'seats' - 'target_score') = (
            '{"clean_start_table": true, "allow_partial_capture": false,
              "komi_basra": "any_value", "basra_points": 10, "jack_basra_points": 30,
              "komi_basra_points": 30, "last_card_basra": true, "majority_points": 30,
              "majority_tie": "nobody", "card_points": false}'::JSONB)
        THEN (m.settings ->> 'seats') || 'p-' || (m.settings ->> 'target_score')
        ELSE 'custom'
    END AS settings_preset,
    (m.settings ->> 'target_score')::INTEGER AS target_score,
    m.settings,
    m.started_at,
    m.ended_at,
    (m.ended_at AT TIME ZONE 'UTC')::DATE AS day,
    EXTRACT(EPOCH FROM (m.ended_at - m.started_at))::DOUBLE PRECISION AS duration_seconds,
    jsonb_array_length(m.rounds) AS rounds,
    a.plays,
    a.automatic_plays,
    m.winner_side,
    m.end_reason,
    (m.final_totals ->> 0)::INTEGER AS side0_total,
    (m.final_totals ->> 1)::INTEGER AS side1_total,
    s.bots,
    s.humans,
    s.bots > 0 AS bots_involved,
    m.recorded_at
FROM matches m
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE (seat ->> 'is_bot')::BOOLEAN)::INTEGER AS bots,
           count(*) FILTER (WHERE NOT (seat ->> 'is_bot')::BOOLEAN)::INTEGER AS humans
    FROM jsonb_array_elements(m.seats) AS seat
) s
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE jsonb_typeof(action -> 'action') = 'object')::INTEGER AS plays,
           count(*) FILTER (WHERE jsonb_typeof(action -> 'action') = 'object'
                              AND (action ->> 'automatic')::BOOLEAN)::INTEGER AS automatic_plays
    FROM jsonb_array_elements(m.actions) AS action
) a;

-- Per seat per match, bots included (user_id NULL): result, the side's
-- Basras and, for rated humans, the rating change.
CREATE VIEW analyst.match_players AS
SELECT
    m.match_id,
    (st ->> 'seat')::SMALLINT AS seat,
    (st ->> 'side')::SMALLINT AS side,
    (st ->> 'user_id')::UUID AS user_id,
    (st ->> 'is_bot')::BOOLEAN AS is_bot,
    m.winner_side IS NOT NULL AND m.winner_side = (st ->> 'side')::SMALLINT AS won,
    m.winner_side IS NOT NULL AND m.winner_side <> (st ->> 'side')::SMALLINT AS lost,
    (m.final_totals ->> ((st ->> 'side')::INTEGER))::INTEGER AS side_total,
    (m.basra_counts -> ((st ->> 'side')::INTEGER) ->> 'basra')::INTEGER AS basras,
    (m.basra_counts -> ((st ->> 'side')::INTEGER) ->> 'jack')::INTEGER AS jack_basras,
    (m.basra_counts -> ((st ->> 'side')::INTEGER) ->> 'komi')::INTEGER AS komi_basras,
    p.rating_before,
    p.rating_after,
    p.rating_after - p.rating_before AS rating_change,
    p.deviation_after,
    m.ranked,
    m.ended_at,
    (m.ended_at AT TIME ZONE 'UTC')::DATE AS day
FROM matches m
CROSS JOIN LATERAL jsonb_array_elements(m.seats) AS st
LEFT JOIN match_players p
       ON p.match_id = m.match_id AND p.seat = (st ->> 'seat')::SMALLINT;

-- Per round per side: points by source, Basras by kind, the majority.
CREATE VIEW analyst.rounds AS
SELECT
    m.match_id,
    (r ->> 'round')::INTEGER AS round,
    (r ->> 'dealer')::SMALLINT AS dealer,
    (sd ->> 'side')::SMALLINT AS side,
    (sd ->> 'pile_size')::INTEGER AS pile_size,
    (sd -> 'basras' ->> 'basra')::INTEGER AS basras,
    (sd -> 'basras' ->> 'jack')::INTEGER AS jack_basras,
    (sd -> 'basras' ->> 'komi')::INTEGER AS komi_basras,
    (sd ->> 'basra_points')::INTEGER AS basra_points,
    (sd ->> 'majority_points')::INTEGER AS majority_points,
    (sd ->> 'majority_points')::INTEGER > 0 AS majority,
    (sd ->> 'card_points')::INTEGER AS card_points,
    (sd ->> 'round_points')::INTEGER AS round_points,
    (sd ->> 'total')::INTEGER AS total,
    m.ended_at,
    (m.ended_at AT TIME ZONE 'UTC')::DATE AS day
FROM matches m
CROSS JOIN LATERAL jsonb_array_elements(m.rounds) AS r
CROSS JOIN LATERAL jsonb_array_elements(r -> 'sides') AS sd;

-- Per day (UTC, by the end of the match): matches, players and plays.
CREATE VIEW analyst.daily_activity AS
SELECT
    m.day,
    count(*)::INTEGER AS matches,
    count(*) FILTER (WHERE m.ranked)::INTEGER AS ranked_matches,
    count(*) FILTER (WHERE m.bots_involved)::INTEGER AS matches_with_bots,
    count(*) FILTER (WHERE m.seats = 4)::INTEGER AS four_seat_matches,
    (SELECT count(DISTINCT p.user_id)::INTEGER
       FROM analyst.match_players p
      WHERE p.day = m.day AND p.user_id IS NOT NULL) AS active_players,
    sum(m.rounds)::INTEGER AS rounds,
    sum(m.plays)::INTEGER AS plays,
    sum(m.automatic_plays)::INTEGER AS automatic_plays,
    avg(m.duration_seconds) AS avg_duration_seconds
FROM analyst.matches m
GROUP BY m.day;

-- Each rated match of each player, in the order the ratings changed (the
-- order accounts recorded the matches), with the mean rating of the other
-- side's rated players before the match (NULL when none).
CREATE VIEW analyst.rating_history AS
SELECT
    p.user_id,
    p.match_id,
    p.seat,
    p.side,
    p.ended_at,
    (p.ended_at AT TIME ZONE 'UTC')::DATE AS day,
    m.recorded_at,
    p.won,
    p.rating_before,
    p.rating_after,
    p.rating_after - p.rating_before AS rating_change,
    p.deviation_after,
    (SELECT avg(o.rating_before)
       FROM match_players o
      WHERE o.match_id = p.match_id AND o.side <> p.side AND o.rating_before IS NOT NULL)
        AS opponent_rating_before,
    row_number() OVER (PARTITION BY p.user_id ORDER BY m.recorded_at, p.match_id)::INTEGER
        AS rated_match_number
FROM match_players p
JOIN matches m ON m.match_id = p.match_id
WHERE p.rating_after IS NOT NULL;

-- The raw record for exports (seed and action log, for replay); seats
-- without display names.
CREATE VIEW analyst.match_records AS
SELECT
    m.match_id,
    m.room_id,
    m.ranked,
    m.settings,
    (SELECT jsonb_agg(seat - 'display_name' ORDER BY (seat ->> 'seat')::INTEGER)
       FROM jsonb_array_elements(m.seats) AS seat) AS seats,
    m.seed,
    m.actions,
    m.rounds,
    m.final_totals,
    m.basra_counts,
    m.winner_side,
    m.end_reason,
    m.started_at,
    m.ended_at,
    m.recorded_at,
    -- [{seat, rating_before, rating_after, deviation_after}] of the rated
    -- seats; NULL when the match changed no rating.
    (SELECT jsonb_agg(jsonb_build_object('seat', p.seat, 'rating_before', p.rating_before,
                                         'rating_after', p.rating_after,
                                         'deviation_after', p.deviation_after)
                      ORDER BY p.seat)
       FROM match_players p
      WHERE p.match_id = m.match_id AND p.rating_after IS NOT NULL) AS rating_changes
FROM matches m;

-- The read-only role. Roles are cluster-wide, so many databases of one
-- cluster (one per test) may run this concurrently: whoever comes second
-- finds it there, or loses the race on the catalog's unique index.
DO $$
BEGIN
    CREATE ROLE basra_analyst NOLOGIN;
EXCEPTION
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

GRANT USAGE ON SCHEMA analyst TO basra_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA analyst TO basra_analyst;
