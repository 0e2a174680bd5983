-- Events (issue 47): definitions, entries and results. Matchmaking's own tables, all
-- named event_*, so the database may be shared with another service's (their
-- migration versions differ; each service ignores the other's).
CREATE TABLE event_events (
    id            TEXT PRIMARY KEY,
    series_id     TEXT,
    request_id    TEXT UNIQUE,
    -- The definition (EventSpec) as JSON.
    spec          TEXT NOT NULL,
    starts_at_ms  BIGINT NOT NULL,
    -- upcoming, running, finished, cancelled
    phase         TEXT NOT NULL,
    cancel_reason TEXT NOT NULL DEFAULT '',
    champion      TEXT,
    current_round INTEGER NOT NULL DEFAULT 0,
    rounds_total  INTEGER NOT NULL DEFAULT 0,
    ended_at_ms   BIGINT NOT NULL DEFAULT 0,
    version       BIGINT NOT NULL DEFAULT 0,
    registered    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX event_events_by_phase ON event_events (phase, starts_at_ms);

CREATE TABLE event_entries (
    event_id         TEXT NOT NULL REFERENCES event_events (id),
    user_id          TEXT NOT NULL,
    rating           INTEGER NOT NULL,
    -- registered, checked_in, playing, eliminated, withdrawn, paused, not_checked_in
    status           TEXT NOT NULL,
    registered_at_ms BIGINT NOT NULL,
    rank             INTEGER NOT NULL DEFAULT 0,
    points           INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, user_id)
);
CREATE INDEX event_entries_by_user ON event_entries (user_id);

CREATE TABLE event_results (
    event_id       TEXT NOT NULL REFERENCES event_events (id),
    -- r<round>t<table>, or a<match> in an arena: one result per match, ever.
    match_key      TEXT NOT NULL,
    seq            BIGSERIAL,
    room_id        TEXT NOT NULL,
    player_a       TEXT NOT NULL,
    player_b       TEXT NOT NULL,
    winner         TEXT,
    -- won, forfeit, both_absent
    outcome        TEXT NOT NULL,
    recorded_at_ms BIGINT NOT NULL,
    PRIMARY KEY (event_id, match_key)
);
