-- Every action an operator takes on a player (AccountsAdminService): who, what, when,
-- why. Kept after the player is deleted (the operators' accountability); the target is
-- then an id that names no account.
CREATE TABLE admin_audit (
    id           BIGSERIAL PRIMARY KEY,
    at           TIMESTAMPTZ NOT NULL,
    -- The operator (the `sub` of their token).
    operator_id  UUID NOT NULL,
    -- ban, unban, rename, delete.
    action       TEXT NOT NULL,
    target_id    UUID NOT NULL,
    reason       TEXT NOT NULL,
    -- What the action set (the ban's end, the new name), as text.
    detail       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX admin_audit_target ON admin_audit (target_id, at);
