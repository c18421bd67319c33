-- Round reports (each player's signed copy, at most one per player and round), the rounds a
-- strict majority agreed on, and the ratings those rounds made.
CREATE TABLE round_tallies (
    round_id TEXT PRIMARY KEY,
    reports BIGINT NOT NULL
);

CREATE TABLE round_reports (
    round_id TEXT NOT NULL,
    reporter TEXT NOT NULL,
    digest TEXT NOT NULL,
    results TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (round_id, reporter)
);

CREATE TABLE rounds (
    round_id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    results TEXT NOT NULL,
    recorded_at BIGINT NOT NULL
);

CREATE TABLE ratings (
    public_key TEXT PRIMARY KEY,
    rating DOUBLE PRECISION NOT NULL,
    uncertainty DOUBLE PRECISION NOT NULL,
    skill DOUBLE PRECISION NOT NULL,
    rounds BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX ratings_by_skill ON ratings (skill);
