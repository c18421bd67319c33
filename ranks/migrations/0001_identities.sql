-- Nicknames registered for players' public keys, first come, first served, and the
-- rendezvous's own signing key (shared by every process on one PostgreSQL).
CREATE TABLE identities (
    public_key TEXT PRIMARY KEY,
    nickname TEXT NOT NULL,
    nickname_key TEXT NOT NULL UNIQUE,
    registered_at BIGINT NOT NULL
);

CREATE TABLE signing_keys (
    name TEXT PRIMARY KEY,
    secret_seed TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
