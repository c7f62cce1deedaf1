-- baton's state in PostgreSQL: the same JSON documents the file store writes, kept as text so
-- that an export gives back the bytes an import took; one row per state file, one per
-- journal event.

-- Every piece of state a project has: a loop (key: its LOOP_KEY), the batch, a run (key: its
-- run id), the pause marks, the legacy loop file. `project` names the repository the same way
-- on every machine. `rev` counts the row's writes: a write names the `rev` it read and lands
-- only if it is still that (one conditional statement: two machines racing get exactly one
-- winner). `epoch` is the owner epoch the document holds; `written_at` is the server's clock at
-- the last write, which liveness is read from.
CREATE TABLE baton_state (
    project    text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('loop', 'batch', 'run', 'pause', 'legacy_loop')),
    key        text        NOT NULL,
    doc        text        NOT NULL,
    rev        bigint      NOT NULL DEFAULT 1,
    epoch      bigint      NOT NULL DEFAULT 0,
    written_at timestamptz NOT NULL DEFAULT now(),
    host       text        NOT NULL DEFAULT '',
    PRIMARY KEY (project, kind, key)
);

-- State moved out of the way (a finished loop, a replaced batch), kept.
CREATE TABLE baton_archive (
    project     text        NOT NULL,
    kind        text        NOT NULL,
    key         text        NOT NULL,
    archived_at timestamptz NOT NULL DEFAULT now(),
    doc         text        NOT NULL,
    PRIMARY KEY (project, kind, key, archived_at)
);

-- Each target's history (`baton log`): a loop (`loop-<KEY>`), `batch`, a run (`run-<ID>`).
CREATE TABLE baton_journal (
    project text        NOT NULL,
    target  text        NOT NULL,
    seq     bigserial   NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    event   text        NOT NULL,
    PRIMARY KEY (project, target, seq)
);
