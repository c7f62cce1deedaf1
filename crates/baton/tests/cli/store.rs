//! `baton store migrate|status` against a throwaway PostgreSQL server, as a user runs them.

#[path = "../../../baton-store/tests/support/pg_server.rs"]
mod pg_server;

use crate::common::{T0, TestEnv};
use pg_server::PgServer;

#[test]
fn migrate_then_status_as_a_user_runs_them() {
    let Some(server) = PgServer::start("migrate_then_status_as_a_user_runs_them") else {
        return;
    };
    let env = TestEnv::new();
    let run = |args: &[&str], url: Option<&str>| {
        let mut cmd = env.command(None, T0);
        if let Some(url) = url {
            cmd.env("BATON_STORE", url);
        }
        crate::common::to_run(cmd.args(args).output().unwrap())
    };
    let url = server.url();
    // Before: the schema is behind, and status says what to run.
    let before = run(&["--json", "store", "status"], Some(&url));
    before.assert_code(0);
    let j = before.json();
    assert_eq!(j["version"], 0, "{j}");
    assert_eq!(j["pending"][0]["version"], 1, "{j}");
    assert!(
        j["notes"][0]
            .as_str()
            .unwrap()
            .contains("baton store migrate"),
        "{j}"
    );

    let migrated = run(&["store", "migrate", "--store", &url], None);
    migrated.assert_code(0);
    assert!(
        migrated.stdout.contains("applied V1 state"),
        "{}",
        migrated.stdout
    );
    let again = run(&["store", "migrate"], Some(&url));
    again.assert_code(0);
    assert!(
        again.stdout.contains("up to date (version 1)"),
        "{}",
        again.stdout
    );

    let after = run(&["--json", "store", "status"], Some(&url));
    after.assert_code(0);
    let j = after.json();
    assert_eq!(j["version"], 1);
    assert_eq!(j["pending"], serde_json::json!([]));
    assert!(
        j["server_now"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()
    );
    assert_eq!(
        j["server"],
        format!("postgres://baton@127.0.0.1:{}/postgres", server.port)
    );
}

#[test]
fn no_password_is_ever_printed_and_a_missing_server_is_named() {
    let env = TestEnv::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://me:hunter2@127.0.0.1:{port}/db");
    for json in [false, true] {
        let mut args = vec!["store", "status", "--store", &url];
        if json {
            args.insert(0, "--json");
        }
        let run = crate::common::to_run(env.command(None, T0).args(&args).output().unwrap());
        run.assert_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains("hunter2"), "{all}");
        assert!(
            all.contains(&format!("postgres://me@127.0.0.1:{port}/db")),
            "{all}"
        );
        assert!(all.contains("refused"), "the cause is said: {all}");
    }
    let none = crate::common::to_run(
        env.command(None, T0)
            .args(["store", "migrate"])
            .output()
            .unwrap(),
    );
    none.assert_code(2);
    assert!(none.stderr.contains("BATON_STORE"), "{}", none.stderr);
}
