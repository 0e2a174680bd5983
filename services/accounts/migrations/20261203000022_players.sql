-- The player dimension for analysts: one row per account, with no personal
-- data (no username, display name, friend code or device), and the client app
-- each sign-in came from.
--
-- `sign_in_clients` keeps the `basra-client` metadata (`web/1.2.0`) of each
-- sign-in (a session: GuestLogin, Register, Login) that sent one. The analyst
-- role reads it only through analyst.players. Whether an account was deleted
-- is not derivable here yet (account deletion is another change's); a
-- `deleted` column is for the migration that adds it.
--
-- Column meanings are documented in libs/analytics/README.md ("SQL views").

CREATE TABLE sign_in_clients (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id       UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    platform      TEXT NOT NULL,
    app_version   TEXT NOT NULL,
    signed_in_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX sign_in_clients_user ON sign_in_clients (user_id, signed_in_at, id);

CREATE VIEW analyst.players AS
SELECT
    -- The same random id analyst.match_players.user_id shows: a key, not a name.
    u.id AS user_id,
    u.created_at AS signed_up_at,
    (u.created_at AT TIME ZONE 'UTC')::DATE AS signup_day,
    -- guest, or username (a password account, signed up as one or upgraded).
    CASE WHEN u.is_guest THEN 'guest' ELSE 'username' END AS kind,
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
    l.app_version AS last_app_version
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
) l ON TRUE;

GRANT SELECT ON analyst.players TO basra_analyst;
