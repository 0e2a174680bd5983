-- Push notifications (issue 48): the devices that registered a push token, and the
-- outbox of pushes waiting to be sent to them by the accounts replicas' workers.

-- One row per push token: a token belongs to one account at a time (registering it
-- again from another account moves it). Deleting the account deletes its devices.
CREATE TABLE push_devices (
    token               TEXT COLLATE "C" PRIMARY KEY CHECK (length(token) BETWEEN 1 AND 4096),
    user_id             UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    platform            TEXT NOT NULL CHECK (platform IN ('fcm', 'apns')),
    app_id              TEXT NOT NULL,
    locale              TEXT NOT NULL,
    app_version         TEXT NOT NULL,
    utc_offset_minutes  INT NOT NULL,
    registered_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX push_devices_user ON push_devices (user_id, registered_at);

-- One row per push (a notice × a device of its player), deleted once the provider
-- answered for good. A worker claims due rows (claimed_by, claimed_until: a lease) with
-- FOR UPDATE SKIP LOCKED; a row whose lease ran out (its replica died) is due again.
-- A device's removal, or its token moving to another account, deletes its pushes.
CREATE TABLE push_outbox (
    id             UUID PRIMARY KEY,
    user_id        UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token          TEXT COLLATE "C" NOT NULL REFERENCES push_devices (token) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    -- The name the text shows (who asked or invited, the event).
    param          TEXT NOT NULL,
    -- What the app reads besides `kind` (ids), a JSON object of strings.
    data           JSONB NOT NULL,
    collapse_id    TEXT NOT NULL,
    noticed_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    due_at         TIMESTAMPTZ NOT NULL,
    attempts       INT NOT NULL DEFAULT 0,
    claimed_by     UUID,
    claimed_until  TIMESTAMPTZ
);
CREATE INDEX push_outbox_due ON push_outbox (due_at);
CREATE INDEX push_outbox_token ON push_outbox (token);
CREATE INDEX push_outbox_user ON push_outbox (user_id);

-- The per-player limit: notices pushed in the current window.
CREATE TABLE push_counts (
    user_id       UUID PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    window_start  TIMESTAMPTZ NOT NULL,
    pushed        INT NOT NULL
);
