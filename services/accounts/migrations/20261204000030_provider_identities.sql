-- Sign-in with an identity provider (SignInWithProvider, LinkProvider): one account per
-- provider account. Only the provider and its subject (`sub`, the player's stable id at
-- the provider) are kept: no e-mail address or other claim of the ID token.
--
-- An account made by a provider sign-in is registered (not a guest) but has no username:
-- a registered account's username becomes optional (a guest still has none).
ALTER TABLE users DROP CONSTRAINT users_guest_has_no_username;
ALTER TABLE users ADD CONSTRAINT users_guest_has_no_username
    CHECK (NOT is_guest OR username IS NULL);

CREATE TABLE provider_identities (
    provider    TEXT COLLATE "C" NOT NULL CHECK (provider IN ('apple', 'google')),
    subject     TEXT COLLATE "C" NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
    -- Deleting the account deletes the link: the provider account may sign up anew.
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX provider_identities_user ON provider_identities (user_id, created_at);
