-- What the store's code has done to its rows beyond the schema: which rules made the
-- identities' nickname keys (`nickname_key`), so that a change of them rekeys every row once.
CREATE TABLE store_meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
