-- Who besides its players may replay a match (GetReplay): anyone, when its room allowed
-- spectators or it was an event (tournament) match. Both come with the record
-- (MatchRecord.allow_spectators, .event_id). A match recorded before, or by a release
-- that does not send them (a rolling upgrade), reads as not allowed and no event: its
-- players alone replay it. Expand only: the previous release's INSERT, which names
-- neither column, takes the defaults.
ALTER TABLE matches
    ADD COLUMN allow_spectators BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN event_id TEXT;
