-- Rating seasons (src/seasons.rs). Expand only: the previous release neither reads nor
-- writes the new columns (its writes leave a rating in its season, which the next
-- release's first rated match of the player moves on).
--
-- Each rating belongs to a season ('' before the first); the rated matches in it are
-- counted apart from all of them. Ratings recorded before seasons existed are in ''.
ALTER TABLE ratings ADD COLUMN season_id TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE ratings ADD COLUMN season_matches INTEGER NOT NULL DEFAULT 0
    CHECK (season_matches >= 0);
UPDATE ratings SET season_matches = ranked_matches;
-- The current season's leaderboard order.
CREATE INDEX ratings_season_leaderboard
    ON ratings (season_id, rating DESC, season_matches DESC, user_id);

-- A player's last rating in each finished season they played rated matches in:
-- archived when their rating moves to a later season, or when the season is closed.
CREATE TABLE season_ratings (
    season_id       TEXT COLLATE "C" NOT NULL,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    rating          DOUBLE PRECISION NOT NULL,
    deviation       DOUBLE PRECISION NOT NULL,
    volatility      DOUBLE PRECISION NOT NULL,
    season_matches  INTEGER NOT NULL CHECK (season_matches >= 0),
    PRIMARY KEY (season_id, user_id)
);
CREATE INDEX season_ratings_leaderboard
    ON season_ratings (season_id, rating DESC, season_matches DESC, user_id);
CREATE INDEX season_ratings_user ON season_ratings (user_id);

-- Each finished season, closed once (by whichever replica first claims its row):
-- every rating still in it archived in the same transaction.
CREATE TABLE season_closings (
    season_id  TEXT COLLATE "C" PRIMARY KEY,
    closed_at  TIMESTAMPTZ NOT NULL,
    -- Ratings archived by the closing (those archived earlier not counted).
    archived   INTEGER NOT NULL
);
