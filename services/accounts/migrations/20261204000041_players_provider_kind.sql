-- analyst.players tells the accounts made (or linked) by a provider sign-in: kind
-- 'provider' for a registered account without a username (Sign in with Apple or Google,
-- 20261204000030_provider_identities.sql); 'username' stays a password account, linked
-- to a provider or not. Nothing else changes: the same columns in the same order.
--
-- Column meanings are documented in libs/analytics/README.md ("SQL views").

CREATE OR REPLACE VIEW analyst.players AS
SELECT
    u.id AS user_id,
    u.created_at AS signed_up_at,
    (u.created_at AT TIME ZONE 'UTC')::DATE AS signup_day,
    CASE
        WHEN u.is_guest THEN 'guest'
        WHEN u.username IS NULL THEN 'provider'
        ELSE 'username'
    END AS kind,
    u.upgraded_at,
    m.first_match_at,
    m.last_match_at,
    (m.first_match_at AT TIME ZONE 'UTC')::DATE AS first_match_day,
    (m.last_match_at AT TIME ZONE 'UTC')::DATE AS last_match_day,
    COALESCE(m.matches, 0)::INTEGER AS matches_played,
    r.rating,
    r.deviation AS rating_deviation,
    r.ranked_matches,
    f.platform AS signup_platform,
    f.app_version AS signup_app_version,
    l.platform AS last_platform,
    l.app_version AS last_app_version,
    FALSE AS deleted
FROM users u
LEFT JOIN ratings r ON r.user_id = u.id
LEFT JOIN LATERAL (
    SELECT min(p.ended_at) AS first_match_at, max(p.ended_at) AS last_match_at,
           count(*) AS matches
    FROM match_players p
    WHERE p.user_id = u.id
) m ON TRUE
LEFT JOIN LATERAL (
    SELECT c.platform, c.app_version FROM sign_in_clients c
    WHERE c.user_id = u.id ORDER BY c.signed_in_at, c.id LIMIT 1
) f ON TRUE
LEFT JOIN LATERAL (
    SELECT c.platform, c.app_version FROM sign_in_clients c
    WHERE c.user_id = u.id ORDER BY c.signed_in_at DESC, c.id DESC LIMIT 1
) l ON TRUE
UNION ALL
SELECT
    p.user_id,
    NULL::TIMESTAMPTZ,
    NULL::DATE,
    NULL::TEXT,
    NULL::TIMESTAMPTZ,
    min(p.ended_at),
    max(p.ended_at),
    (min(p.ended_at) AT TIME ZONE 'UTC')::DATE,
    (max(p.ended_at) AT TIME ZONE 'UTC')::DATE,
    count(*)::INTEGER,
    NULL::DOUBLE PRECISION,
    NULL::DOUBLE PRECISION,
    NULL::INTEGER,
    NULL::TEXT,
    NULL::TEXT,
    NULL::TEXT,
    NULL::TEXT,
    TRUE
FROM match_players p
WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p.user_id)
GROUP BY p.user_id;
