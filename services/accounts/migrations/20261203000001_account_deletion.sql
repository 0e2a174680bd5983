-- Account deletion (DeleteAccount; services/accounts/README.md, "Deleting an account").
--
-- A deleted account's row goes, and with it (ON DELETE CASCADE) its devices, password,
-- refresh tokens, rating, friend links, request counts and name changes. Its matches
-- stay, for the other players' histories and ratings: its seats in `matches.seats` and
-- its `match_players` rows are re-keyed to an anonymous key (a fresh random UUID drawn
-- at deletion and stored with nothing that leads back to the account) and named
-- "Deleted player". `match_players.user_id` therefore no longer refers to `users`.
ALTER TABLE match_players DROP CONSTRAINT match_players_user_id_fkey;

-- The ids of deleted accounts, as SHA-256 of the id's 16 bytes only: a match that was
-- still being played when its player deleted the account is recorded later naming the
-- old id; this table tells RecordMatch to record that seat as "Deleted player" (no key,
-- no rating) instead of refusing the record. It holds nothing but the hash and the day.
CREATE TABLE deleted_accounts (
    id_hash     BYTEA PRIMARY KEY CHECK (length(id_hash) = 32),
    deleted_at  TIMESTAMPTZ NOT NULL
);
