//! `baton store migrate|status` against a throwaway PostgreSQL server, as a user runs them.

#[path = "../../../baton-store/tests/support/pg_server.rs"]
pub(crate) mod pg_server;

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
        migrated.stdout.contains("applied V1 state, V2 breakers"),
        "{}",
        migrated.stdout
    );
    let again = run(&["store", "migrate"], Some(&url));
    again.assert_code(0);
    assert!(
        again.stdout.contains("up to date (version 2)"),
        "{}",
        again.stdout
    );

    let after = run(&["--json", "store", "status"], Some(&url));
    after.assert_code(0);
    let j = after.json();
    assert_eq!(j["version"], 2);
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
    crate::files_only!("it starts servers of its own");
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

/// Every file of baton's state under `.agentic/`, by path, with its bytes (no lock sidecars,
/// no ignore file, no directories).
pub(crate) fn state_files(env: &TestEnv) -> Vec<(String, Vec<u8>)> {
    let root = env.state_dir();
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if rel != "locks" {
                    dirs.push(path);
                }
            } else if rel != ".gitignore" {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn import_then_export_gives_back_every_file_byte_for_byte() {
    crate::files_only!("it starts servers of its own");
    let Some(server) = PgServer::start("import_then_export_gives_back_every_file_byte_for_byte")
    else {
        return;
    };
    let env = TestEnv::new();
    let url = server.url();
    // The state is made in the file store; only `baton store` names the server.
    let run = |args: &[&str]| {
        let mut args = args.to_vec();
        if args.first() == Some(&"store") || args.get(1) == Some(&"store") {
            args.extend(["--store", url.as_str()]);
        }
        let cmd = env.command(Some("A"), T0).args(&args).output().unwrap();
        crate::common::to_run(cmd)
    };
    run(&["store", "migrate"]).assert_code(0);
    for args in [
        &["loop", "init", "T-1"][..],
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
        &[
            "loop",
            "interrupt",
            "T-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "1h",
        ],
        &["loop", "init", "T-2"],
        &["loop", "finish", "T-2", "--status", "complete"],
        &["loop", "init", "T-2"],
        &["batch", "start", "T-3", "T-4"],
        &["run", "new", "--feature", "x"],
        &["pause", "--reason", "end of day"],
    ] {
        run(args).assert_code(0);
    }
    let before = state_files(&env);
    let names: Vec<&str> = before.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "batch-state.json",
        "pause.json",
        "loop-state-T-1.json",
        "journal/batch.jsonl",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("archive/")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("runs/")), "{names:?}");

    let imported = run(&["--json", "store", "import"]);
    imported.assert_code(0);
    let j = imported.json();
    assert!(j["project"].as_str().unwrap().starts_with("git:"), "{j}");
    // Twice is refused: the project holds state there now.
    let again = run(&["store", "import"]);
    again.assert_code(3);
    assert!(again.stderr.contains("already holds"), "{}", again.stderr);
    // An export over existing state is refused, and changes nothing.
    run(&["store", "export"]).assert_code(3);
    assert_eq!(state_files(&env), before);

    // The same project on another machine: its state directory empty, then exported into.
    std::fs::rename(env.state_dir(), env.repo.join("old-state")).unwrap();
    let exported = run(&["--json", "store", "export"]);
    exported.assert_code(0);
    assert_eq!(exported.json()["exported"], j["imported"]);
    let after = state_files(&env);
    assert_eq!(
        after.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        before.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    assert_eq!(after, before, "byte for byte");
    // And baton reads it as before.
    let shown = run(&["--json", "loop", "show", "T-1"]);
    shown.assert_code(0);
    assert_eq!(shown.json()["state"]["interrupt_reason"], "rate_limit");
}

/// A migrated throwaway server, and a command for the project at `dir` with `BATON_STORE` set.
#[test]
fn a_store_url_with_verify_full_works_over_tls_and_status_says_so() {
    let Some((server, certs)) =
        PgServer::start_tls("a_store_url_with_verify_full_works_over_tls_and_status_says_so")
    else {
        return;
    };
    let env = TestEnv::new();
    let url = format!(
        "postgres://baton@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}",
        server.port,
        certs.path().join("ca.pem").display()
    );
    let run = |args: &[&str]| {
        let mut cmd = env.command(Some("A"), T0);
        cmd.env("BATON_STORE", &url).env_remove("BATON_NOW");
        crate::common::to_run(cmd.args(args).output().unwrap())
    };
    run(&["store", "migrate"]).assert_code(0);
    run(&["loop", "init", "T-1"]).assert_code(0);
    let status = run(&["--json", "store", "status"]);
    status.assert_code(0);
    let j = status.json();
    assert!(
        j["tls"].as_str().is_some_and(|v| v.starts_with("TLSv1")),
        "{j}"
    );
    assert_eq!(j["counts"][0]["kind"], "journal events", "{j}");
    let text = run(&["store", "status"]);
    assert!(
        text.stdout.contains("connection: encrypted (TLSv1"),
        "{}",
        text.stdout
    );
}

fn with_store(test: &str) -> Option<(PgServer, TestEnv)> {
    let server = PgServer::start(test)?;
    let env = TestEnv::new();
    let mut cmd = env.command(None, T0);
    cmd.env("BATON_STORE", server.url());
    crate::common::to_run(cmd.args(["store", "migrate"]).output().unwrap()).assert_code(0);
    Some((server, env))
}

fn at_store(
    env: &TestEnv,
    dir: &std::path::Path,
    url: &str,
    session: &str,
    args: &[&str],
) -> crate::common::Run {
    let mut cmd = env.command(Some(session), T0);
    cmd.env("BATON_STORE", url)
        .env_remove("BATON_NOW")
        .current_dir(dir);
    crate::common::to_run(cmd.args(args).output().unwrap())
}

#[test]
fn with_baton_store_the_state_lives_on_the_server_and_the_gates_hold() {
    let Some((server, env)) =
        with_store("with_baton_store_the_state_lives_on_the_server_and_the_gates_hold")
    else {
        return;
    };
    let url = server.url();
    let run = |session: &str, args: &[&str]| at_store(&env, &env.repo, &url, session, args);
    run("A", &["loop", "init", "T-1"]).assert_code(0);
    run(
        "A",
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
    )
    .assert_code(0);
    // Another session's write to a live loop is refused, as with files.
    let refused = run(
        "B",
        &[
            "loop", "set", "T-1", "--phase", "qa", "--action", "returned",
        ],
    );
    refused.assert_code(3);
    assert!(
        refused.stdout.contains("gate.foreign-live-owner"),
        "{}",
        refused.stdout
    );
    run("A", &["loop", "interrupt", "T-1", "--reason", "unknown"]).assert_code(0);
    // Nothing of the loop is in the project's files: it is on the server.
    let files: Vec<String> = std::fs::read_dir(env.state_dir())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !files.iter().any(|f| f.starts_with("loop-state")),
        "{files:?}"
    );
    let status = run("X", &["--json", "store", "status"]);
    assert_eq!(
        status.json()["counts"][1]["kind"],
        "loop",
        "{}",
        status.stdout
    );

    // A second machine: another clone of the project, the same name on the server.
    let other = env.repo.parent().unwrap().join("machine-b");
    env.git(&[
        "clone",
        "--quiet",
        env.repo.to_str().unwrap(),
        other.to_str().unwrap(),
    ]);
    let shown = at_store(&env, &other, &url, "C", &["--json", "loop", "show", "T-1"]);
    shown.assert_code(0);
    assert_eq!(shown.json()["state"]["status"], "interrupted");

    // Sessions on both machines race to take it over: exactly one wins.
    let children: Vec<_> = (0..12)
        .map(|i| {
            let dir = if i % 2 == 0 { &env.repo } else { &other };
            let mut cmd = env.command(Some(&format!("S{i}")), T0);
            cmd.env("BATON_STORE", &url)
                .env_remove("BATON_NOW")
                .current_dir(dir)
                .args(["resume", "accept", "T-1"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code().unwrap_or(-1))
        .collect();
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert!(codes.iter().all(|&c| c == 0 || c == 3), "{codes:?}");
    // The owner's heartbeat from a third machine, whose clone has no state directory at all.
    let winner = format!("S{}", codes.iter().position(|&c| c == 0).unwrap());
    let third = env.repo.parent().unwrap().join("machine-c");
    env.git(&[
        "clone",
        "--quiet",
        env.repo.to_str().unwrap(),
        third.to_str().unwrap(),
    ]);
    let beat = at_store(
        &env,
        &third,
        &url,
        &winner,
        &["--json", "loop", "heartbeat", "T-1"],
    );
    beat.assert_code(0);
    assert_eq!(beat.json()["refreshed"], true, "{}", beat.stdout);
    // The journal on the server tells it, whichever machine asks.
    let log = at_store(&env, &other, &url, "X", &["--json", "log", "T-1"]);
    let events: Vec<String> = log.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        events,
        ["init", "set", "interrupt", "takeover"],
        "{}",
        log.stdout
    );
}

#[test]
fn the_project_setting_names_the_store_but_never_a_password() {
    crate::files_only!("it starts servers of its own");
    let Some((server, env)) =
        with_store("the_project_setting_names_the_store_but_never_a_password")
    else {
        return;
    };
    env.write(
        ".baton.toml",
        &format!("# shared state\nstore = \"{}\"\n", server.url()),
    );
    let plain = |args: &[&str]| {
        let mut cmd = env.command(Some("A"), T0);
        crate::common::to_run(cmd.args(args).output().unwrap())
    };
    plain(&["loop", "init", "T-1"]).assert_code(0);
    assert!(!env.state_dir().join("loop-state-T-1.json").exists());
    let status = plain(&["--json", "store", "status"]);
    status.assert_code(0);
    assert_eq!(status.json()["counts"][1]["count"], 1, "{}", status.stdout);

    let with_password = server.url().replace("baton@", "baton:hunter2@");
    env.write(".baton.toml", &format!("store = \"{with_password}\"\n"));
    let refused = plain(&["loop", "show", "T-1"]);
    refused.assert_code(2);
    assert!(
        refused.stderr.contains("holds a password"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains("hunter2"), "{}", refused.stderr);
}

#[test]
fn a_machine_whose_clock_runs_two_hours_ahead_still_sees_a_live_owner() {
    crate::files_only!("it starts servers of its own");
    let Some((server, env)) =
        with_store("a_machine_whose_clock_runs_two_hours_ahead_still_sees_a_live_owner")
    else {
        return;
    };
    let Ok(faketime) = which("faketime") else {
        assert!(
            std::env::var_os("BATON_PG_REQUIRED").is_none(),
            "CI installs faketime"
        );
        crate::common::skipped("faketime is not installed");
        return;
    };
    let url = server.url();
    // Machine B runs baton (the built binary, dynamically linked) with its clock two hours
    // ahead: by its own clock, A's write of a moment ago is long past the 10-minute window.
    let run_ahead = |env: &TestEnv, store: Option<&str>, args: &[&str]| {
        let mut inner = env.command(Some("B"), T0);
        inner.env_remove("BATON_NOW");
        if let Some(url) = store {
            inner.env("BATON_STORE", url);
        }
        let mut cmd = crate::common::like(&inner, &faketime);
        cmd.args(["-f", "+2h", env!("CARGO_BIN_EXE_baton")])
            .args(args);
        crate::common::to_run(cmd.output().unwrap())
    };
    let ahead = |env: &TestEnv, store: Option<&str>| {
        run_ahead(env, store, &["--json", "resume", "T-1"]).json()["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // With the store, every age is the server's: A is live, and nothing is taken over.
    at_store(&env, &env.repo, &url, "A", &["loop", "init", "T-1"]).assert_code(0);
    let verdict = ahead(&env, Some(&url));
    assert!(verdict.starts_with("live"), "{verdict}");
    run_ahead(&env, Some(&url), &["resume", "accept", "T-1", "--force"]).assert_code(3);
    run_ahead(
        &env,
        Some(&url),
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
    )
    .assert_code(3);
    let shown = at_store(
        &env,
        &env.repo,
        &url,
        "X",
        &["--json", "loop", "show", "T-1"],
    );
    assert_eq!(shown.json()["state"]["session_id"], "A", "{}", shown.stdout);
    assert_eq!(shown.json()["state"]["owner_epoch"], 0, "{}", shown.stdout);
    // The same with files, deciding by the machine's own clock, would offer A's live loop.
    let files = TestEnv::new();
    let mut init = files.command(Some("A"), T0);
    init.env_remove("BATON_NOW");
    crate::common::to_run(init.args(["loop", "init", "T-1"]).output().unwrap()).assert_code(0);
    let verdict = ahead(&files, None);
    assert!(!verdict.starts_with("live"), "{verdict}");
}

fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| p.exists())
        .ok_or(())
}

#[test]
fn status_and_resume_say_where_the_work_is_owned() {
    let Some((server, env)) = with_store("status_and_resume_say_where_the_work_is_owned") else {
        return;
    };
    let url = server.url();
    at_store(&env, &env.repo, &url, "A", &["loop", "init", "T-1"]).assert_code(0);
    at_store(&env, &env.repo, &url, "A", &["loop", "init", "T-2"]).assert_code(0);
    let mine = at_store(&env, &env.repo, &url, "X", &["status"]);
    assert!(!mine.stdout.contains("another machine"), "{}", mine.stdout);
    // T-2's owner last wrote from another machine.
    let settings =
        baton_store::pg::config::resolve(&url, &baton_store::pg::config::Process).unwrap();
    let mut client = baton_store::pg::connect(&settings).unwrap();
    client
        .execute(
            "UPDATE baton_state SET host = 'machine-b' WHERE key = 'T-2'",
            &[],
        )
        .unwrap();
    let status = at_store(&env, &env.repo, &url, "X", &["status"]);
    assert!(
        status
            .stdout
            .contains("owned on another machine: machine-b"),
        "{}",
        status.stdout
    );
    let resume = at_store(&env, &env.repo, &url, "X", &["--json", "resume"]);
    let rows = resume.json()["work"].as_array().unwrap().clone();
    let machine = |key: &str| {
        rows.iter()
            .find(|r| r["key"] == key)
            .map(|r| r["owner"]["machine"].clone())
            .unwrap()
    };
    assert_eq!(machine("T-2"), "machine-b", "{rows:?}");
    assert_eq!(
        machine("T-1"),
        serde_json::Value::Null,
        "this machine: {rows:?}"
    );
    let text = at_store(&env, &env.repo, &url, "X", &["resume"]);
    assert!(
        text.stdout.contains("owned on machine-b"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_shallow_clone_needs_the_project_named() {
    let env = TestEnv::new();
    env.write("second.txt", "2\n");
    env.git(&["add", "."]);
    env.git(&["commit", "--quiet", "-m", "second"]);
    let shallow = env.repo.parent().unwrap().join("shallow");
    env.git(&[
        "clone",
        "--quiet",
        "--depth",
        "1",
        &format!("file://{}", env.repo.display()),
        shallow.to_str().unwrap(),
    ]);
    let run = |project: Option<&str>| {
        let mut cmd = env.command(Some("A"), T0);
        // A server that is not there: the project's name is settled before connecting.
        cmd.env("BATON_STORE", "postgres://nobody@127.0.0.1:1/none")
            .env_remove("BATON_PROJECT")
            .current_dir(&shallow)
            .args(["loop", "init", "T-1"]);
        if let Some(p) = project {
            cmd.env("BATON_PROJECT", p);
        }
        crate::common::to_run(cmd.output().unwrap())
    };
    let refused = run(None);
    refused.assert_code(2);
    assert!(refused.stderr.contains("shallow"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("BATON_PROJECT"),
        "{}",
        refused.stderr
    );
    // Named, it goes on to the server (which is not there).
    let named = run(Some("acme"));
    named.assert_code(1);
    assert!(named.stderr.contains("cannot connect"), "{}", named.stderr);
}
