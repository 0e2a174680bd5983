-- Matchmaking quality in the analyst views: how each seat was filled and how
-- long its player waited in the queue. Both live in the seat's entry of
-- `matches.seats` (`fill`, `queue_wait_ms`; absent in rows recorded before
-- seats carried them, which read as NULL); the columns go at the end of
-- analyst.match_players, so its existing columns are unchanged.
--
-- Column meanings are documented in libs/analytics/README.md ("SQL views").

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
    -- queue, code, lobby, invite, rematch, bot, host; NULL: not known.
    st ->> 'fill' AS seat_fill,
    -- Seconds in the queue, for a queue seat.
    (st ->> 'queue_wait_ms')::DOUBLE PRECISION / 1000 AS queue_wait_seconds
FROM matches m
CROSS JOIN LATERAL jsonb_array_elements(m.seats) AS st
LEFT JOIN match_players p
       ON p.match_id = m.match_id AND p.seat = (st ->> 'seat')::SMALLINT;
