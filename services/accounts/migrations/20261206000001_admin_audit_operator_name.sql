-- Who acted, by name: an operator's token names the operator (`basra admin token
-- --operator NAME`), and the audit keeps it beside the token's subject. Expand only: the
-- previous release inserts without it (empty: not named).
ALTER TABLE admin_audit ADD COLUMN operator_name TEXT NOT NULL DEFAULT '';
