-- Events: whether an upcoming event's registered players were told it starts soon (the
-- clock sets it once, by compare-and-set, after telling them: EventRecord.starting_told).
-- A row written by a release before it reads false: told when its notice time comes.
-- Entry statuses gain 'finished' (played to the end of a finished event; the column is
-- TEXT, nothing to change).
ALTER TABLE event_events ADD COLUMN starting_told BOOLEAN NOT NULL DEFAULT false;
