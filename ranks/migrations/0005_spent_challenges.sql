-- Challenges a proof was taken for, until they expire: each is good once (`Store::spend_challenge`).
CREATE TABLE spent_challenges (
    nonce TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

CREATE INDEX spent_challenges_by_expiry ON spent_challenges (expires_at);
