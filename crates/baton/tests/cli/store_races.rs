//! `baton store` when machines run it at once, when the disk fails half way, and with a
//! password in every form the driver accepts: concurrent migrations all succeed, concurrent
//! imports into one empty project make exactly one winner, a failed export leaves nothing and
//! can run again, and no password is ever printed.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use crate::common::{Run, T0, TestEnv, to_run};
use crate::store::pg_server::PgServer;
use crate::store::state_files;

/// Racers per trial, and trials per race: few, to keep CI short.
const RACERS: usize = 4;
const TRIALS: usize = 5;

/// Starts every command behind a barrier (a shell waiting on its stdin), releases them
/// together and waits for all.
fn race(commands: Vec<Command>) -> Vec<Run> {
    let mut children: Vec<Child> = commands
        .into_iter()
        .map(|inner| {
            let args: Vec<_> = inner.get_args().map(|a| a.to_owned()).collect();
            let mut cmd = crate::common::in_shell(&inner, "read go", args);
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a contender")
        })
        .collect();
    for child in &mut children {
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(b"go\n").expect("release a contender");
    }
    children
        .into_iter()
        .map(|c| to_run(c.wait_with_output().unwrap()))
        .collect()
}

fn describe(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| format!("exit {}: {}{}", r.code, r.stdout.trim(), r.stderr.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A fresh database on `server` for one trial, and its URL.
fn fresh_database(server: &PgServer, name: &str) -> String {
    use baton_store::pg::{self, config};
    let settings = config::resolve(&server.url(), &config::Process).unwrap();
    let mut client = pg::connect(&settings).unwrap();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    format!("postgres://baton@127.0.0.1:{}/{name}", server.port)
}

/// How many rows the project holds on the server, of state and of journal.
fn held(url: &str, project: &str) -> (i64, i64) {
    use baton_store::pg::{self, config};
    let settings = config::resolve(url, &config::Process).unwrap();
    let mut client = pg::connect(&settings).unwrap();
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM baton_state WHERE project = $1), \
                    (SELECT count(*) FROM baton_journal WHERE project = $1)",
            &[&project],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn concurrent_migrations_on_a_fresh_server_all_succeed() {
    crate::files_only!("it starts servers of its own");
    let Some(server) = PgServer::start("concurrent_migrations_on_a_fresh_server_all_succeed")
    else {
        return;
    };
    let env = TestEnv::new();
    for trial in 0..TRIALS {
        let url = fresh_database(&server, &format!("migrate_trial_{trial}"));
        let commands = (0..RACERS)
            .map(|_| {
                let mut cmd = env.command(None, T0);
                cmd.args(["store", "migrate", "--store", &url]);
                cmd
            })
            .collect();
        let runs = race(commands);
        let all = describe(&runs);
        assert!(
            runs.iter().all(|r| r.code == 0),
            "trial {trial}: every migrate exits 0:\n{all}"
        );
        let applied = runs
            .iter()
            .filter(|r| r.stdout.contains("applied V1"))
            .count();
        assert_eq!(applied, 1, "trial {trial}: exactly one applies:\n{all}");
        let status = to_run(
            env.command(None, T0)
                .args(["--json", "store", "status", "--store", &url])
                .output()
                .unwrap(),
        );
        status.assert_code(0);
        assert_eq!(status.json()["version"], 2);
    }
}

#[test]
fn a_failed_migration_says_the_servers_reason() {
    crate::files_only!("it starts servers of its own");
    let Some(server) = PgServer::start("a_failed_migration_says_the_servers_reason") else {
        return;
    };
    let env = TestEnv::new();
    let url = fresh_database(&server, "blocked");
    // Another tool's table under the name of one of baton's: the server refuses the migration.
    {
        use baton_store::pg::{self, config};
        let settings = config::resolve(&url, &config::Process).unwrap();
        let mut client = pg::connect(&settings).unwrap();
        client
            .batch_execute("CREATE TABLE baton_state (other_tool_column int)")
            .unwrap();
    }
    let run = to_run(
        env.command(None, T0)
            .args(["store", "migrate", "--store", &url])
            .output()
            .unwrap(),
    );
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("already exists"),
        "the server's own words are printed: {}",
        run.stderr
    );
}

#[test]
fn concurrent_imports_into_one_empty_project_make_exactly_one_winner() {
    crate::files_only!("it starts servers of its own");
    let Some(server) =
        PgServer::start("concurrent_imports_into_one_empty_project_make_exactly_one_winner")
    else {
        return;
    };
    let url = server.url();
    let first = TestEnv::new();
    to_run(
        first
            .command(None, T0)
            .args(["store", "migrate", "--store", &url])
            .output()
            .unwrap(),
    )
    .assert_code(0);
    // One machine each, each with state of its own: a loop with some history.
    let machines: Vec<TestEnv> = (0..RACERS).map(|_| TestEnv::new()).collect();
    for (n, env) in machines.iter().enumerate() {
        let ticket = format!("M{n}-1");
        env.run(Some("A"), T0, &["loop", "init", &ticket])
            .assert_code(0);
        for phase in ["qa", "engineer", "quality_gate"] {
            env.set_phase("A", 1, &ticket, phase, "spawned")
                .assert_code(0);
        }
    }
    let one_machine = |env: &TestEnv| {
        baton_store::pg::transfer::collect(&baton_store::layout::Layout {
            root: env.repo.clone(),
            state_dir: env.state_dir(),
        })
        .unwrap()
    };
    for trial in 0..TRIALS {
        let project = format!("race-{trial}");
        let commands = machines
            .iter()
            .map(|env| {
                let mut cmd = env.command(None, T0);
                cmd.args([
                    "--json",
                    "store",
                    "import",
                    "--store",
                    &url,
                    "--project",
                    &project,
                ]);
                cmd
            })
            .collect();
        let runs = race(commands);
        let all = describe(&runs);
        let winners: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(winners.len(), 1, "trial {trial}: exactly one wins:\n{all}");
        for (i, run) in runs.iter().enumerate() {
            if i != winners[0] {
                assert_eq!(run.code, 3, "trial {trial}: the others are refused:\n{all}");
                assert!(
                    format!("{}{}", run.stdout, run.stderr).contains("already holds"),
                    "{all}"
                );
            }
        }
        let moved = one_machine(&machines[winners[0]]);
        assert_eq!(
            held(&url, &project),
            (moved.state.len() as i64, moved.events() as i64),
            "trial {trial}: the project holds the winner's state and nothing of the others'"
        );
    }
}

fn names(files: &[(String, Vec<u8>)]) -> Vec<String> {
    files.iter().map(|(n, _)| n.clone()).collect()
}

/// A project with state, imported to a fresh server and its state directory moved aside: ready
/// for an export, with what the export must give back.
fn exported_elsewhere(server: &PgServer) -> (TestEnv, Vec<(String, Vec<u8>)>) {
    let env = TestEnv::new();
    let url = server.url();
    let run = |args: &[&str]| {
        let mut cmd = env.command(Some("A"), T0);
        to_run(cmd.args(args).output().unwrap())
    };
    run(&["store", "migrate", "--store", &url]).assert_code(0);
    for args in [
        &["loop", "init", "T-1"][..],
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
        &["loop", "init", "T-2"],
        &["batch", "start", "T-3", "T-4"],
        &["run", "new", "--feature", "x"],
    ] {
        run(args).assert_code(0);
    }
    let before = state_files(&env);
    run(&["store", "import", "--store", &url]).assert_code(0);
    std::fs::rename(env.state_dir(), env.repo.join("old-state")).unwrap();
    (env, before)
}

#[test]
fn an_export_blocked_half_way_leaves_nothing_and_runs_again() {
    crate::files_only!("it starts servers of its own");
    let Some(server) = PgServer::start("an_export_blocked_half_way_leaves_nothing_and_runs_again")
    else {
        return;
    };
    let (env, before) = exported_elsewhere(&server);
    let url = server.url();
    // The last file the export writes (journals and archives come after the state files) is
    // blocked by a directory in its place.
    let last = before
        .iter()
        .map(|(n, _)| n)
        .rfind(|n| n.starts_with("journal/"))
        .expect("a journal file")
        .clone();
    let blocker = env.state_dir().join(&last);
    std::fs::create_dir_all(&blocker).unwrap();
    let export = || {
        to_run(
            env.command(Some("A"), T0)
                .args(["store", "export", "--store", &url])
                .output()
                .unwrap(),
        )
    };
    let failed = export();
    assert_ne!(failed.code, 0, "{}", failed.stdout);
    assert_eq!(
        names(&state_files(&env)),
        Vec::<String>::new(),
        "a failed export leaves nothing: {}",
        failed.stderr
    );
    std::fs::remove_dir(&blocker).unwrap();
    export().assert_code(0);
    assert_eq!(state_files(&env), before, "byte for byte");
}

#[test]
fn an_export_on_a_disk_that_fills_half_way_leaves_nothing_and_runs_again() {
    crate::files_only!("it starts servers of its own");
    let Some(server) =
        PgServer::start("an_export_on_a_disk_that_fills_half_way_leaves_nothing_and_runs_again")
    else {
        return;
    };
    let (env, before) = exported_elsewhere(&server);
    let url = server.url();
    let export = |faults: Option<&str>| {
        let mut cmd = env.command(Some("A"), T0);
        if let Some(f) = faults {
            cmd.env("BATON_FAULTS", f);
        }
        to_run(
            cmd.args(["store", "export", "--store", &url])
                .output()
                .unwrap(),
        )
    };
    // The disk fills on the fourth file written.
    let failed = export(Some("atomic.write@4=enospc"));
    assert_ne!(failed.code, 0, "{}", failed.stdout);
    assert_eq!(
        names(&state_files(&env)),
        Vec::<String>::new(),
        "a failed export leaves nothing: {}",
        failed.stderr
    );
    export(None).assert_code(0);
    assert_eq!(state_files(&env), before, "byte for byte");
}

#[test]
fn sslmode_is_not_used_over_a_unix_socket_as_with_libpq() {
    crate::files_only!("it starts servers of its own");
    let Some(server) = PgServer::start("sslmode_is_not_used_over_a_unix_socket_as_with_libpq")
    else {
        return;
    };
    let env = TestEnv::new();
    let dir = server.socket_dir();
    let port = server.port;
    for (url, pghost) in [
        (
            format!(
                "postgres://baton@/postgres?host={}&port={port}&sslmode=require",
                dir.display()
            ),
            None,
        ),
        (
            format!("postgres://baton@/postgres?port={port}&sslmode=verify-full"),
            Some(&dir),
        ),
        (
            format!("postgres://baton@/postgres?port={port}"),
            Some(&dir),
        ),
    ] {
        let mut cmd = env.command(None, T0);
        cmd.args(["--json", "store", "status", "--store", &url]);
        if let Some(host) = pghost {
            cmd.env("PGHOST", host);
        }
        if url.ends_with(&format!("port={port}")) {
            cmd.env("PGSSLMODE", "require");
        }
        let run = to_run(cmd.output().unwrap());
        run.assert_code(0);
        let j = run.json();
        assert_eq!(j["tls"], serde_json::Value::Null, "{url}: {j}");
        assert!(
            j["server"]
                .as_str()
                .unwrap()
                .contains(&dir.display().to_string()),
            "{j}"
        );
    }
}

/// A password in every form the driver accepts, each holding `Zq9`, which must never be
/// printed: in the URL's user info (plain, percent-encoded `/ ? @ #`, raw `/ ? #`, a raw `@`),
/// as a query parameter (plain, percent-encoded, under a percent-encoded key), and in a
/// key=value connection string (plain, quoted, with escapes).
fn password_forms(port: &str) -> Vec<String> {
    vec![
        format!("postgres://me:Zq9pass@127.0.0.1:{port}/db"),
        format!("postgresql://me:Zq9%2Fa%3Fb%40c%23d@127.0.0.1:{port}/db"),
        format!("postgres://me:Zq9/a@127.0.0.1:{port}/db"),
        format!("postgres://me:Zq9?a@127.0.0.1:{port}/db"),
        format!("postgres://me:Zq9#a@127.0.0.1:{port}/db"),
        format!("postgres://me:Zq9/a?b#c@127.0.0.1:{port}/db"),
        format!("postgres://me:Zq9@a@127.0.0.1:{port}/db"),
        format!("postgres://me@127.0.0.1:{port}/db?password=Zq9pass"),
        format!("postgres://me@127.0.0.1:{port}/db?sslmode=disable&password=Zq9%2Fa%26b%3Dc"),
        format!("postgres://me@127.0.0.1:{port}/db?pass%77ord=Zq9pass"),
        format!("postgres://127.0.0.1:{port}/db?user=me&password=Zq9pass&application_name=x"),
        format!("host=127.0.0.1 port={port} user=me password=Zq9pass dbname=db"),
        format!("host=127.0.0.1 port={port} user=me password='Zq9 a b' dbname=db"),
        format!(r"host=127.0.0.1 port={port} password='Zq9\' a' user=me"),
        format!(r"password=Zq9\ a host=127.0.0.1 port={port}"),
        format!("password = Zq9pass host=127.0.0.1 port={port}"),
    ]
}

#[test]
fn no_password_in_any_form_reaches_any_output() {
    let env = TestEnv::new();
    env.run(Some("A"), T0, &["loop", "init", "T-1"]);
    let mut forms = password_forms("1");
    forms.extend(password_forms("notaport"));
    for form in &forms {
        for args in [
            &["store", "status"][..],
            &["--json", "store", "status"],
            &["store", "migrate"],
            &["--json", "store", "migrate"],
            &["--json", "store", "import", "--project", "p"],
            &["store", "export", "--project", "p"],
            &["loop", "show", "T-1"],
            &["--json", "loop", "show", "T-1"],
            &["--json", "status"],
        ] {
            for via_flag in [false, true] {
                let mut cmd = env.command(Some("A"), T0);
                cmd.env_remove("BATON_PROJECT").args(args);
                if via_flag {
                    cmd.args(["--store", form]);
                } else {
                    cmd.env("BATON_STORE", form);
                }
                let run = to_run(cmd.output().unwrap());
                let all = format!("{}\n{}", run.stdout, run.stderr);
                assert!(
                    !all.contains("Zq9"),
                    "{form:?} with {args:?} (flag: {via_flag}) printed the password:\n{all}"
                );
                assert_ne!(run.code, 0, "{form:?} {args:?}: {all}");
            }
        }
        // In the project's committed settings, a password in any form is refused, unprinted.
        let escaped = form.replace('\\', "\\\\");
        env.write(".baton.toml", &format!("store = \"{escaped}\"\n"));
        let mut cmd = env.command(Some("A"), T0);
        cmd.env_remove("BATON_STORE").args(["loop", "show", "T-1"]);
        let run = to_run(cmd.output().unwrap());
        run.assert_code(2);
        assert!(
            run.stderr.contains("holds a password") && !run.stderr.contains("Zq9"),
            "{form:?} in .baton.toml: {}",
            run.stderr
        );
        std::fs::remove_file(env.repo.join(".baton.toml")).unwrap();
    }
}
