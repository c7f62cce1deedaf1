//! PostgreSQL for fleets of machines: the connection settings (`config`), the versioned schema
//! (`migrations/`, applied by refinery) and what `baton store migrate|status` do with them.

pub mod backend;
pub mod config;
pub mod deadline;
pub mod records;
pub mod store;
pub mod tls;
pub mod transfer;

use postgres::Client;

use crate::StoreError;
use config::Settings;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// The table that records which migrations ran.
const HISTORY_TABLE: &str = "baton_schema_history";

fn db_error(
    settings: &Settings,
    action: &'static str,
) -> impl FnOnce(postgres::Error) -> StoreError {
    let server = settings.shown.clone();
    move |e| StoreError::Db {
        action,
        server,
        message: with_causes(&e),
    }
}

/// An error and its causes, `: `-separated: the driver's own words stop at "error connecting
/// to server", the cause says "Connection refused".
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(&format!(": {more}"));
        }
        cause = c.source();
    }
    text
}

/// A scalar subquery that applies the session settings named in `$1` to the values in `$2`
/// (text arrays), skipping any this server does not know (`tcp_user_timeout` is PostgreSQL
/// 12's): it goes into a statement baton sends anyway, and costs no round trip of its own.
pub const APPLY_SETTINGS: &str = "(SELECT count(set_config(s.name, s.value, false)) \
     FROM unnest($1::text[], $2::text[]) AS s(name, value) \
     WHERE s.name IN (SELECT name FROM pg_settings))";

/// The names and values of `settings`, as `APPLY_SETTINGS` takes them.
pub fn setting_params(settings: &[(&str, String)]) -> (Vec<String>, Vec<String>) {
    settings
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .unzip()
}

/// A connection to the server `settings` name, its server's end bounded as
/// `config::SERVER_SOCKET` says.
pub fn connect(settings: &Settings) -> Result<Client, StoreError> {
    let mut client = connect_bare(settings)?;
    let server: Vec<(&str, String)> = config::SERVER_SOCKET
        .iter()
        .map(|(n, v)| (*n, v.to_string()))
        .collect();
    let (names, values) = setting_params(&server);
    client
        .query(&format!("SELECT {APPLY_SETTINGS}"), &[&names, &values])
        .map_err(db_error(settings, "connect to"))?;
    Ok(client)
}

/// A connection, its session as the server's settings make it.
fn connect_bare(settings: &Settings) -> Result<Client, StoreError> {
    let connector = tls::connector(&settings.tls).map_err(|message| StoreError::Db {
        action: "connect to",
        server: settings.shown.clone(),
        message,
    })?;
    match connector {
        None => settings.config.connect(postgres::NoTls),
        Some(tls) => settings.config.connect(tls),
    }
    .map_err(db_error(settings, "connect to"))
}

/// A connection to the server `settings` name, made within `bound`, with the watchdog that
/// bounds each of its round trips; its session settings are the caller's to apply
/// (`APPLY_SETTINGS`, in its first statement).
pub fn connect_watched(
    settings: &Settings,
    bound: std::time::Duration,
) -> Result<(Client, deadline::Watchdog), StoreError> {
    let (dog, client, fired) = deadline::Watchdog::connect(bound, || connect_bare(settings));
    if fired {
        return Err(StoreError::Unanswered {
            action: "connect to",
            server: settings.shown.clone(),
            waited: bound,
        });
    }
    Ok((client?, dog))
}

/// A connection of the store's own commands (`store migrate`, `status`, `import`, `export`)
/// with every round trip bounded as a state command's are (`backend::Db::open_within`): the
/// server gives up on a statement after `lock_wait` and a second, and `dog` shuts the socket
/// when an answer has not come `bound` after the call.
pub struct Bounded {
    pub client: Client,
    pub dog: deadline::Watchdog,
    /// `lock_wait` and `deadline::GRACE`.
    pub bound: std::time::Duration,
    /// The session's statement timeout, in milliseconds.
    pub statement_timeout: String,
}

/// Connects as `connect` does, within `lock_wait` and `deadline::GRACE`, and sets the
/// session's statement timeout to `lock_wait` and a second.
pub fn connect_bounded(
    settings: &Settings,
    lock_wait: std::time::Duration,
) -> Result<Bounded, StoreError> {
    let bound = lock_wait + deadline::GRACE;
    let ms = |d: std::time::Duration| d.as_millis().clamp(1, i32::MAX as u128).to_string();
    let statement_timeout = ms(lock_wait + std::time::Duration::from_secs(1));
    let mut session: Vec<(&str, String)> = config::SERVER_SOCKET
        .iter()
        .map(|(n, v)| (*n, v.to_string()))
        .collect();
    session.push(("statement_timeout", statement_timeout.clone()));
    let (names, values) = setting_params(&session);
    let (mut client, dog) = connect_watched(settings, bound)?;
    within(&dog, bound, settings, "connect to", || {
        client
            .query(&format!("SELECT {APPLY_SETTINGS}"), &[&names, &values])
            .map_err(db_error(settings, "connect to"))
    })?;
    Ok(Bounded {
        client,
        dog,
        bound,
        statement_timeout,
    })
}

/// Runs `call` within `bound` on the connection `dog` watches: `StoreError::Unanswered`,
/// naming the server, when the watchdog had to end it.
pub fn within<T>(
    dog: &deadline::Watchdog,
    bound: std::time::Duration,
    settings: &Settings,
    action: &'static str,
    call: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let (out, fired) = dog.within(bound, call);
    if fired {
        return Err(StoreError::Unanswered {
            action,
            server: settings.shown.clone(),
            waited: bound,
        });
    }
    out
}

/// The schema's version: the latest migration applied, `None` before the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub version: i32,
    pub name: String,
}

/// The schema version this baton writes: the last of `migrations/`. Kept as a number so that
/// opening the store on every call does not build refinery's runner (it compiles a regex);
/// a test checks it against the runner.
pub const LATEST: i32 = 2;

/// Every migration baton knows, oldest first.
pub fn known() -> Vec<Version> {
    let mut all: Vec<Version> = embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| Version {
            version: m.version() as i32,
            name: m.name().to_string(),
        })
        .collect();
    all.sort_by_key(|v| v.version);
    all
}

/// The session advisory lock that serializes `baton store migrate` across machines: the
/// first takes it and applies the migrations, the others wait for it and then find them
/// applied. (A key of its own: the state locks are keyed by project and scope.)
const MIGRATE_LOCK: i64 = 0x6261_746f_6e5f_6d69; // "baton_mi"

/// Applies every migration not applied yet, in order, each in its own transaction; returns
/// those it applied. Concurrent runs (on any machine) are serialized on the server: one
/// applies, the others find the schema applied.
pub fn migrate(client: &mut Client, settings: &Settings) -> Result<Vec<Version>, StoreError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATE_LOCK])
        .map_err(db_error(settings, "migrate"))?;
    let mut runner = embedded::migrations::runner();
    runner.set_migration_table_name(HISTORY_TABLE);
    let report = runner.set_grouped(false).run(client);
    // The lock dies with the connection in any case; released here for a caller that goes on.
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATE_LOCK]);
    let report = report.map_err(|e| StoreError::Db {
        action: "migrate",
        server: settings.shown.clone(),
        message: with_causes(&e),
    })?;
    unlocked.map_err(db_error(settings, "migrate"))?;
    Ok(report
        .applied_migrations()
        .iter()
        .map(|m| Version {
            version: m.version() as i32,
            name: m.name().to_string(),
        })
        .collect())
}

/// What `baton store status` shows of a server.
#[derive(Debug, Clone)]
pub struct Status {
    pub server_version: String,
    /// The server's clock, which every liveness and lease age is read from.
    pub server_now: String,
    /// The TLS version of this connection, as the server sees it; `None`: not encrypted.
    pub tls: Option<String>,
    pub applied: Vec<Version>,
    /// Rows of state per kind, and journal events, once the schema exists.
    pub counts: Vec<(String, i64)>,
}

/// Reads the server's version, clock and schema state, writing nothing.
pub fn status(client: &mut Client, settings: &Settings) -> Result<Status, StoreError> {
    let err = || db_error(settings, "read the status of");
    let row = client
        .query_one(
            "SELECT current_setting('server_version'), \
                    to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), \
                    to_regclass($1) IS NOT NULL, \
                    (SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl)",
            &[&HISTORY_TABLE],
        )
        .map_err(err())?;
    let (server_version, server_now, has_history, tls): (String, String, bool, Option<String>) =
        (row.get(0), row.get(1), row.get(2), row.get(3));
    let mut applied = Vec::new();
    if has_history {
        for row in client
            .query(
                &format!("SELECT version, name FROM {HISTORY_TABLE} ORDER BY version"),
                &[],
            )
            .map_err(err())?
        {
            applied.push(Version {
                version: row.get(0),
                name: row.get(1),
            });
        }
    }
    let mut counts = Vec::new();
    if !applied.is_empty() {
        for row in client
            .query(
                "SELECT kind, count(*) FROM baton_state GROUP BY kind \
                 UNION ALL SELECT 'journal events', count(*) FROM baton_journal ORDER BY 1",
                &[],
            )
            .map_err(err())?
        {
            counts.push((row.get(0), row.get(1)));
        }
    }
    Ok(Status {
        server_version,
        server_now,
        tls,
        applied,
        counts,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn latest_names_the_last_migration() {
        assert_eq!(
            super::known().last().map(|v| v.version),
            Some(super::LATEST)
        );
    }
}
