//! `baton help environment`: every environment variable baton reads or sets, with what it
//! does. The manual page carries the same text as its ENVIRONMENT section.

/// The variables, as `(name, what it does)`, in the order the reference lists them.
pub const VARIABLES: &[(&str, &str)] = &[
    ("BATON_SESSION", "The session id, under `--session`."),
    (
        "BATON_STORE",
        "The PostgreSQL store's URL, under `--store`, over the project's .baton.toml.",
    ),
    (
        "BATON_PROJECT",
        "The project's name in a shared store, when its repository's path differs by machine.",
    ),
    (
        "BATON_STATE_DIR",
        "The state directory, instead of .agentic/ at the project's root.",
    ),
    (
        "BATON_PIPELINE_STATE_DIR",
        "Where the single-run pipeline's files are, instead of its default.",
    ),
    (
        "BATON_LEASE_TOKEN",
        "The lease token of a pipeline run, under a command's `--token`.",
    ),
    (
        "BATON_LOCK_WAIT",
        "How long a command waits for a lock held by another (a duration: `5s`, `250ms`; 5s).",
    ),
    (
        "BATON_JUDGE",
        "`off` (or `0`, `false`, `no`): the stop hooks judge no claim of \"done\" (docs/judge.md).",
    ),
    (
        "BATON_GUARD",
        "`off` (or `0`, `false`, `no`): the guard of shared checkouts refuses nothing (docs/guard.md).",
    ),
    (
        "BATON_WINDOW",
        "`off` (or `0`, `false`, `no`): `baton supervise` launches without waiting for the \
         account's window (docs/window.md).",
    ),
    (
        "BATON_ACCOUNT",
        "The account an agent client spends, for the account's window, over what the client's \
         files say (docs/window.md).",
    ),
    (
        "ANTHROPIC_API_KEY, OPENAI_API_KEY, CODEX_API_KEY, GEMINI_API_KEY",
        "An API-key login: its account is known by a one-way digest of the key, never the key.",
    ),
    (
        "XDG_STATE_HOME",
        "The machine's own directory is `$XDG_STATE_HOME/baton` (else ~/.local/state/baton): \
         the accounts' windows with the files.",
    ),
    (
        "CLAUDE_CONFIG_DIR",
        "Where Claude Code keeps its settings and `.claude.json` (its account), instead of ~.",
    ),
    (
        "BATON_NOW",
        "The time every decision reads, RFC 3339, instead of the clock (for tests and replays).",
    ),
    (
        "BATON_OPENCODE_SESSION",
        "Set by baton's OpenCode plugin in every tool call: the OpenCode session.",
    ),
    (
        "BATON_PROJECT_ROOT, BATON_PLAN_DIR, BATON_PHASE, BATON_GATE",
        "Set for an exit gate's command by `baton gate run` and `baton ledger gate`.",
    ),
    (
        "NO_COLOR",
        "Set to something: no colour, whatever else says (`--color always` aside).",
    ),
    (
        "CLICOLOR_FORCE",
        "Set to something but 0: colour even into a pipe (under `--color auto`).",
    ),
    ("CLICOLOR", "0: no colour (under `--color auto`)."),
    (
        "TERM",
        "`dumb`, or unset: no colour on a terminal (under `--color auto`).",
    ),
    (
        "COMPLETE",
        "A shell's name (`bash`, `zsh`, …): a bare `baton` prints its completion script, and \
         `baton -- <words>` their candidates (see `baton completions`); any other command runs \
         as if it were not set.",
    ),
    (
        "CLAUDE_CODE_SESSION_ID, CODEX_SESSION_ID, CODEX_THREAD_ID, COPILOT_AGENT_SESSION_ID",
        "The session of a tool call, as the agent client sets it (after BATON_SESSION).",
    ),
    (
        "GEMINI_CLI, CURSOR_AGENT",
        "Marks of a Gemini CLI or Cursor tool call, whose session is the one its hooks recorded.",
    ),
    (
        "CLAUDE_PID, OPENCODE_PID",
        "The agent client's process, as it names it to its hooks and tool calls.",
    ),
    (
        "CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR, COPILOT_PROJECT_DIR",
        "The directory the client was started in: a hook's project, over the payload's `cwd`.",
    ),
    (
        "CODEX_HOME, COPILOT_HOME, XDG_CONFIG_HOME",
        "Where `baton init --user` writes for Codex (~/.codex), Copilot CLI (~/.copilot) and \
         OpenCode (~/.config/opencode).",
    ),
    (
        "PGHOST, PGPORT, PGUSER, PGPASSWORD, PGPASSFILE, PGDATABASE, PGSSLMODE, PGSSLROOTCERT, \
         PGCONNECT_TIMEOUT",
        "The PostgreSQL store's connection, as libpq reads them, where its URL says nothing.",
    ),
    (
        "HOME",
        "The user's directory: the clients' user settings, ~/.pgpass.",
    ),
    (
        "TZ",
        "The local zone: the times text shows, and a rate limit's reset given as a clock time \
         with no zone.",
    ),
];

/// The reference as `baton help environment` prints it.
pub fn text() -> String {
    let mut out = String::from("The environment variables baton reads (and those it sets):\n\n");
    for (name, what) in VARIABLES {
        out.push_str(&format!("{name}\n    {what}\n"));
    }
    out.push_str("\nDurations (BATON_LOCK_WAIT, --backoff, --interval, --max, --timeout, --lease-ttl, …) take one syntax: `90s`, `15m`, `1h30m`, `2d`, `250ms`, or bare seconds.");
    out
}

/// The reference as the manual page's ENVIRONMENT section (roff).
pub fn roff() -> String {
    let esc = |s: &str| s.replace('\\', "\\\\").replace('-', "\\-");
    let mut out = String::from(".SH ENVIRONMENT\n");
    for (name, what) in VARIABLES {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", esc(name), esc(what)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::client::{Client, SessionSource, UserDir};

    /// Every variable a client's definition names is in the reference.
    #[test]
    fn the_reference_names_every_clients_variables() {
        let all: String = VARIABLES.iter().map(|(n, _)| format!("{n}, ")).collect();
        let listed = |v: &str| all.contains(&format!("{v},"));
        for client in Client::ALL {
            let def = client.def();
            let mut names: Vec<&str> = Vec::new();
            match def.session_source() {
                SessionSource::Variables(vs) => names.extend(vs),
                SessionSource::Recorded { marker } => names.push(marker),
            }
            names.extend(def.pid_variable());
            names.extend(def.project_dir_variable());
            if let UserDir::Variable { variable, .. } = def.user_dir() {
                names.push(variable);
            }
            for name in names {
                assert!(listed(name), "{name} ({client:?}) is not in the reference");
            }
        }
        for name in [
            "BATON_SESSION",
            "BATON_STORE",
            "NO_COLOR",
            "CLICOLOR_FORCE",
            "TERM",
        ] {
            assert!(listed(name), "{name}");
        }
        assert!(roff().starts_with(".SH ENVIRONMENT\n"));
    }
}
