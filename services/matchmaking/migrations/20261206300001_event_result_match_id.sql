-- Events: the id of the match played in a result's room, as accounts records it (so a
-- finished event's bracket, rebuilt from its results, offers the match's replay:
-- Pairing.match_id). NULL for a match not played to its end (a forfeit, neither joined)
-- and for a result recorded by a release before it.
ALTER TABLE event_results ADD COLUMN match_id TEXT;
