-- Friends (src/friends.rs holds the rules; this holds their state).

-- A player's friend code (Crockford base 32, 8 characters, stored without the
-- dash), given the first time the player sees it: NULL until then.
ALTER TABLE users ADD COLUMN friend_code TEXT COLLATE "C" UNIQUE;

-- At most one link each way between two players: a waiting friend request,
-- one half of a friendship (a friendship is always both halves), or a block
-- of `to_id` by `from_id`.
CREATE TABLE friend_links (
    from_id  UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    to_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    link     TEXT NOT NULL CHECK (link IN ('request', 'friend', 'block')),
    since    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (from_id, to_id),
    CHECK (from_id <> to_id)
);
-- Requests others sent a player; who blocks a player.
CREATE INDEX friend_links_to ON friend_links (to_id, link);

-- Friend requests each player sent per UTC day (the daily limit; withdrawn
-- requests stay counted).
CREATE TABLE friend_request_days (
    user_id  UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    day      DATE NOT NULL,
    sent     INTEGER NOT NULL CHECK (sent > 0),
    PRIMARY KEY (user_id, day)
);
