-- Reports of players (ReportPlayer, issue 48): who reported whom, why, in which match,
-- the reporter's comment and the target's display name at that moment; open until a
-- moderator resolves the target's reports (ResolveReports: dismiss, rename, ban). An
-- account's deletion takes the reports it filed and those about it.
CREATE TABLE player_reports (
    id            UUID PRIMARY KEY,
    at            TIMESTAMPTZ NOT NULL,
    reporter_id   UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    target_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- offensive_name, cheating, chat_abuse, other.
    reason        TEXT NOT NULL,
    match_id      TEXT COLLATE "C",
    comment       TEXT NOT NULL DEFAULT '',
    -- The target's display name when reported.
    display_name  TEXT NOT NULL,
    resolved_at   TIMESTAMPTZ,
    -- dismiss, rename, ban; NULL while open.
    resolution    TEXT
);
-- The per-reporter limit counts a reporter's recent filings.
CREATE INDEX player_reports_reporter ON player_reports (reporter_id, at);
-- Open reports by target: the moderators' list and the hidden names.
CREATE INDEX player_reports_open ON player_reports (target_id) WHERE resolved_at IS NULL;
CREATE INDEX player_reports_target ON player_reports (target_id, at);
