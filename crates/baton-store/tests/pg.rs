//! The PostgreSQL schema against a real, throwaway server: migrations apply in order, once,
//! and `status` reads the server's clock and the schema without writing.

#[path = "support/pg_server.rs"]
mod pg_server;

use baton_store::pg::config::{Process, resolve};
use baton_store::pg::{connect, known, migrate, status};
use pg_server::PgServer;

#[test]
fn migrations_apply_once_and_status_reads_without_writing() {
    let Some(server) = PgServer::start("migrations_apply_once_and_status_reads_without_writing")
    else {
        return;
    };
    let settings = resolve(&server.url(), &Process).unwrap();
    let mut client = connect(&settings).unwrap();

    let before = status(&mut client, &settings).unwrap();
    assert!(before.applied.is_empty());
    assert!(
        before.server_version.starts_with(char::is_numeric),
        "{before:?}"
    );
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('baton_schema_history') IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!exists, "status created nothing");

    let applied = migrate(&mut client, &settings).unwrap();
    assert_eq!(applied, known(), "every migration, in order");
    assert_eq!(applied[0].version, 1);
    assert!(migrate(&mut client, &settings).unwrap().is_empty(), "once");

    let after = status(&mut client, &settings).unwrap();
    assert_eq!(after.applied, known());
    assert_eq!(after.counts, [("journal events".to_string(), 0)]);
    // The server's clock, as an RFC 3339 time.
    assert!(
        after.server_now.parse::<jiff::Timestamp>().is_ok(),
        "{after:?}"
    );
    // The tables the store writes exist.
    for table in ["baton_state", "baton_archive", "baton_journal"] {
        let n: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
    }
}

#[test]
fn a_server_that_is_not_there_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://u:hunter2@127.0.0.1:{port}/d");
    let settings = resolve(&url, &Process).unwrap();
    let Err(err) = connect(&settings) else {
        panic!("connected to a closed port");
    };
    let text = format!("{err} {}", err.hint().unwrap_or_default());
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains(&format!("postgres://u@127.0.0.1:{port}/d")),
        "{text}"
    );
    assert!(text.contains("PGHOST"), "{text}");
}
