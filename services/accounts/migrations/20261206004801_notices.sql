-- The inbox (src/inbox.rs holds the rules): each player's notices worth keeping while
-- they are away, each with its kind, body (an encoded basra.accounts.v1.Notice holding
-- only its body) and read state. Bounded per player and dropped at expires_at by the
-- service; gone with the account (ON DELETE CASCADE).
CREATE TABLE notices (
    -- Rising in the order notices are kept (one player's are kept one at a time).
    id          BIGSERIAL PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    payload     BYTEA NOT NULL,
    -- The sender's key: a notice with the same key for the player is not kept twice.
    dedupe_key  TEXT,
    -- The player the notice names (who asked, accepted, invited): it goes with them.
    about       UUID REFERENCES users (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    read        BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT notices_dedupe UNIQUE (user_id, dedupe_key)
);
-- A player's notices newest first; the sweep of expired ones.
CREATE INDEX notices_user ON notices (user_id, id DESC);
CREATE INDEX notices_expiry ON notices (expires_at);
