-- Who took a token for which room, from which address, and when last: a round may list only
-- players who joined its room through this rendezvous, and is recorded only when the players
-- who signed it are also a majority of the round's addresses (its homes).
CREATE TABLE room_tokens (
    public_key TEXT NOT NULL,
    room TEXT NOT NULL,
    address TEXT NOT NULL,
    issued_at BIGINT NOT NULL,
    PRIMARY KEY (public_key, room)
);
