-- The client app of each seat of a match record: `match_players` gains the platform and
-- version of the player's latest sign-in at or before the match's end (the
-- `sign_in_clients` row accounts noted from the `basra-client` metadata), written when
-- accounts records the match. NULL when no sign-in up to then sent one; bots and the
-- placeholder seats of deleted accounts have no `match_players` row, so the view shows
-- NULL for them too. Rows recorded before this migration stay NULL (not backfilled: a
-- rewrite of every row at start-up is not worth it).
--
-- analyst.match_players gains the two columns at its end (the view's columns are a
-- contract: only ever added last); analyst.match_records gains `seat_clients`, which the
-- Parquet export reads.
--
-- Column meanings are documented in libs/analytics/README.md ("SQL views").

ALTER TABLE match_players
    ADD COLUMN client_platform TEXT,
    ADD COLUMN client_app_version TEXT;

CREATE OR REPLACE VIEW analyst.match_players AS
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
    (m.ended_at AT TIME ZONE 'UTC')::DATE AS day,
    st ->> 'fill' AS seat_fill,
    (st ->> 'queue_wait_ms')::DOUBLE PRECISION / 1000 AS queue_wait_seconds,
    -- The seat's client app (web, android, cli, …) and its version.
    p.client_platform,
    p.client_app_version
FROM matches m
CROSS JOIN LATERAL jsonb_array_elements(m.seats) AS st
LEFT JOIN match_players p
       ON p.match_id = m.match_id AND p.seat = (st ->> 'seat')::SMALLINT;

CREATE OR REPLACE VIEW analyst.match_records AS
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
    (SELECT jsonb_agg(jsonb_build_object('seat', p.seat, 'rating_before', p.rating_before,
                                         'rating_after', p.rating_after,
                                         'deviation_after', p.deviation_after)
                      ORDER BY p.seat)
       FROM match_players p
      WHERE p.match_id = m.match_id AND p.rating_after IS NOT NULL) AS rating_changes,
    m.action_log,
    -- [{seat, platform, app_version}] of the seats whose client app is known; NULL when
    -- none is.
    (SELECT jsonb_agg(jsonb_build_object('seat', p.seat, 'platform', p.client_platform,
                                         'app_version', p.client_app_version)
                      ORDER BY p.seat)
       FROM match_players p
      WHERE p.match_id = m.match_id AND p.client_platform IS NOT NULL) AS seat_clients
FROM matches m;
