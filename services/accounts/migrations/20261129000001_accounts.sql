-- Accounts: users, sign-in identities, refresh tokens, ratings and match records.
--
-- Times are TIMESTAMPTZ (microseconds); the service truncates its own clock to
-- microseconds so that the in-memory store and this one order rows the same way.
-- Ids that clients see as opaque strings and that are compared in keyset
-- pagination use COLLATE "C" so PostgreSQL orders them byte-wise, like Rust.

CREATE TABLE users (
    id            UUID PRIMARY KEY,
    -- The login name as typed at Register; NULL for a guest.
    username      TEXT,
    -- Lower-case username: the unique, case-insensitive key. NULL for a guest.
    username_key  TEXT COLLATE "C" UNIQUE,
    display_name  TEXT NOT NULL,
    is_guest      BOOLEAN NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    -- When a guest became a registered account.
    upgraded_at   TIMESTAMPTZ,
    CONSTRAINT users_guest_has_no_username CHECK ((username IS NULL) = is_guest),
    CONSTRAINT users_username_key_with_username CHECK ((username IS NULL) = (username_key IS NULL))
);

-- A guest's device. Kept after an upgrade so the device gets a clear answer
-- ("use Login") instead of a fresh guest.
CREATE TABLE device_identities (
    device_id   TEXT COLLATE "C" PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX device_identities_user ON device_identities (user_id);

-- argon2id PHC strings.
CREATE TABLE password_credentials (
    user_id        UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    password_hash  TEXT NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);

-- Refresh tokens, stored as SHA-256 of the random token. Every token of one
-- sign-in shares a family: rotation adds a token to the family and marks the
-- old one used; presenting a used token revokes the whole family.
CREATE TABLE refresh_tokens (
    token_hash  BYTEA PRIMARY KEY CHECK (length(token_hash) = 32),
    family_id   UUID NOT NULL,
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    issued_at   TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ,
    revoked_at  TIMESTAMPTZ
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id);

-- Glicko-2 state of every user (created with the user).
CREATE TABLE ratings (
    user_id         UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    rating          DOUBLE PRECISION NOT NULL,
    deviation       DOUBLE PRECISION NOT NULL,
    volatility      DOUBLE PRECISION NOT NULL,
    ranked_matches  INTEGER NOT NULL DEFAULT 0 CHECK (ranked_matches >= 0),
    updated_at      TIMESTAMPTZ NOT NULL
);
-- The leaderboard order: rating, then ranked matches (both descending), then user id.
CREATE INDEX ratings_leaderboard ON ratings (rating DESC, ranked_matches DESC, user_id);

-- Finished matches, one row per match id (the idempotency key of RecordMatch).
CREATE TABLE matches (
    match_id      TEXT COLLATE "C" PRIMARY KEY,
    room_id       TEXT NOT NULL,
    ranked        BOOLEAN NOT NULL,
    -- basra_engine::Settings, every field set.
    settings      JSONB NOT NULL,
    -- [{seat, side, user_id, is_bot, display_name}] indexed by seat.
    seats         JSONB NOT NULL,
    seed          BYTEA NOT NULL CHECK (length(seed) = 32),
    -- [{seat, play: {card, capture}} | {seat, resign}, automatic, at}] in order.
    actions       JSONB NOT NULL,
    -- [{round, dealer, sides: [..]}] in order.
    rounds        JSONB NOT NULL,
    final_totals  JSONB NOT NULL,
    basra_counts  JSONB NOT NULL,
    winner_side   SMALLINT,
    end_reason    TEXT NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ NOT NULL,
    recorded_at   TIMESTAMPTZ NOT NULL
);

-- The human seats of a match, with their result and rating change: the source
-- of a player's history and statistics.
CREATE TABLE match_players (
    match_id         TEXT COLLATE "C" NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    seat             SMALLINT NOT NULL,
    side             SMALLINT NOT NULL,
    user_id          UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    won              BOOLEAN NOT NULL,
    lost             BOOLEAN NOT NULL,
    -- Basras of the player's side over the match.
    basras           INTEGER NOT NULL,
    jack_basras      INTEGER NOT NULL,
    komi_basras      INTEGER NOT NULL,
    -- Set only when the match changed the player's rating.
    rating_before    DOUBLE PRECISION,
    rating_after     DOUBLE PRECISION,
    deviation_after  DOUBLE PRECISION,
    ended_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (match_id, seat),
    UNIQUE (match_id, user_id)
);
CREATE INDEX match_players_history ON match_players (user_id, ended_at DESC, match_id DESC);
