-- The accounts' breakers (SPEC section 11): one document for the whole server, since an
-- account's window is the same whichever project spends it. A change reads it `FOR UPDATE` and
-- writes it back in one transaction, so two machines changing it at once are serialized and
-- exactly one waiter becomes a window's probe.
CREATE TABLE baton_breakers (
    id         smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    doc        text        NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    host       text        NOT NULL DEFAULT ''
);
INSERT INTO baton_breakers (doc) VALUES ('{"breakers":[]}');
