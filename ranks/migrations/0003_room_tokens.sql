-- Who took a token for which room, and when last: a round may list only players who joined
-- its room through this rendezvous.
CREATE TABLE room_tokens (
    public_key TEXT NOT NULL,
    room TEXT NOT NULL,
    issued_at BIGINT NOT NULL,
    PRIMARY KEY (public_key, room)
);
