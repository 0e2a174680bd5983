-- Display name changes (SetDisplayName): when each player changed their name, for the
-- rolling limit (src/names.rs). Rows older than the window are deleted by the next
-- change of the same player; the name itself stays in users.display_name.
CREATE TABLE display_name_changes (
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    changed_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX display_name_changes_user ON display_name_changes (user_id, changed_at);
