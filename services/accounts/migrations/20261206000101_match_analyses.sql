-- The analyses of players' plays (GetReplay with_analysis), computed once per match and
-- seat and kept: each play's verdict (basra_engine::analysis::PlayReview: the action's
-- index, the card played, the search's best card, the expected points lost; the mark is
-- made from the thresholds when read). `worlds`: the search's worlds per play it was
-- computed with (another setting computes it again). Expand only.
CREATE TABLE match_analyses (
    match_id     TEXT COLLATE "C" NOT NULL REFERENCES matches (match_id) ON DELETE CASCADE,
    seat         SMALLINT NOT NULL,
    worlds       INTEGER NOT NULL,
    reviews      JSONB NOT NULL,
    computed_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (match_id, seat)
);
