-- The action log in a compact binary form (src/action_log.rs describes it).
--
-- As JSONB the log (about 19 KB of text for a two-seat match) cost PostgreSQL a
-- full JSON parse on every recording and a full rendering on every export read:
-- those were the largest costs of both. New rows store the log as `action_log`
-- (about 1.3 KB, no parsing) and leave `actions` NULL; rows recorded before
-- keep their JSONB `actions` and no `action_log`. A row holds exactly one.
--
-- The analyst views counted plays from the JSON log: the counts are now
-- columns, filled here for the rows recorded before.

ALTER TABLE matches
    ADD COLUMN action_log      BYTEA,
    ADD COLUMN plays           INTEGER,
    ADD COLUMN automatic_plays INTEGER,
    ALTER COLUMN actions DROP NOT NULL;

UPDATE matches m
SET (plays, automatic_plays) = (
    SELECT count(*) FILTER (WHERE jsonb_typeof(action -> 'action') = 'object')::INTEGER,
           count(*) FILTER (WHERE jsonb_typeof(action -> 'action') = 'object'
                              AND (action ->> 'automatic')::BOOLEAN)::INTEGER
    FROM jsonb_array_elements(m.actions) AS action
);

ALTER TABLE matches
    ALTER COLUMN plays SET NOT NULL,
    ALTER COLUMN automatic_plays SET NOT NULL,
    ADD CONSTRAINT matches_one_action_log CHECK ((actions IS NULL) <> (action_log IS NULL));

-- The same columns as before, from the stored counts.
CREATE OR REPLACE VIEW analyst.matches AS
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
    m.plays,
    m.automatic_plays,
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
) s;

-- For exports: `actions` (JSONB) for rows recorded before the binary log,
-- `action_log` (binary) for the rest; exactly one is set.
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
    m.action_log
FROM matches m;
