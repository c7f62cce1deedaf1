//! The account's window (docs/window.md): a limit with a reset closes it for every supervisor,
//! conductor and session on the account; at the reset one probes, and the rest follow.

use serde_json::{Value, json};

use crate::common::{Run, TestEnv, at};
use crate::supervise::{Fake, START};

/// Claude Code's hook `event` for `session`, its payload's own fields `more`, on the clock
/// `now`, with `vars` set (`None`: unset) on top of the environment's.
fn hook(
    env: &TestEnv,
    now: &str,
    session: &str,
    event: &str,
    more: Value,
    vars: &[(&str, Option<&str>)],
) -> Run {
    let mut p = json!({ "session_id": session, "hook_event_name": event, "cwd": env.repo });
    p.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    let mut cmd = env.command(None, now);
    for (name, value) in vars {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    cmd.args(["hook", "claude", event])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    let _ = child
        .stdin
        .take()
        .unwrap()
        .write_all(p.to_string().as_bytes());
    let run = crate::common::to_run(child.wait_with_output().unwrap());
    run.assert_code(0);
    run
}

/// The hooks of one turn of `session` that a limit ended, with `message` as its error.
fn limited_as(
    env: &TestEnv,
    session: &str,
    message: &str,
    now: &str,
    vars: &[(&str, Option<&str>)],
) {
    hook(
        env,
        now,
        session,
        "SessionStart",
        json!({ "source": "startup" }),
        vars,
    );
    hook(
        env,
        now,
        session,
        "UserPromptSubmit",
        json!({ "prompt": "task" }),
        vars,
    );
    hook(
        env,
        now,
        session,
        "StopFailure",
        json!({ "error": "rate_limit", "last_assistant_message": format!("API Error: Request rejected (429) · {message}") }),
        vars,
    );
}

fn limited(env: &TestEnv, session: &str, message: &str, now: &str) {
    limited_as(env, session, message, now, &[]);
}

/// A turn of `session` that ended without a limit.
fn turn(env: &TestEnv, session: &str, now: &str) {
    hook(
        env,
        now,
        session,
        "Stop",
        json!({ "stop_hook_active": false }),
        &[],
    );
}

fn check(env: &TestEnv, now: &str) -> Run {
    env.run(None, now, &["window", "check", "--client", "claude"])
}

/// `T0` plus seconds.
fn at_s(secs: i64) -> String {
    let t0: jiff::Timestamp = crate::common::T0.parse().unwrap();
    (t0 + jiff::SignedDuration::from_secs(secs))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[test]
fn a_conductor_asks_before_each_spawn_and_the_first_after_the_reset_probes() {
    let env = TestEnv::new();
    check(&env, &at(0)).assert_code(0);
    // A limit with no reset, and one that resets in seconds, close nothing.
    limited(&env, "S0", "Request rate limit exceeded", &at(0));
    limited(&env, "S0", "Please retry after 30s.", &at(0));
    let run = check(&env, &at(0));
    run.assert_code(0);
    assert_eq!(run.stdout, "open\n");
    // The 5-hour limit: closed until its reset, said in one line a script can capture.
    limited(&env, "S1", "5-hour limit reached ∙ try again in 2h", &at(0));
    let run = check(&env, &at(1));
    run.assert_code(3);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(
        run.stdout.starts_with("closed: the 5h window of "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.trim_end().ends_with(&at(120)), "{}", run.stdout);
    let json = env.run(
        None,
        &at(1),
        &["--json", "window", "check", "--client", "claude"],
    );
    json.assert_code(3);
    crate::snapshots::assert_matches_schema(&env, "window check", &json.json());
    assert_eq!(json.json()["until"], at(120));
    // The first check after the reset is the probe; the next waits for its first turn.
    let probe = check(&env, &at(121));
    probe.assert_code(0);
    assert!(
        probe.stderr.contains("probes the window"),
        "{}",
        probe.stderr
    );
    let run = check(&env, &at(121));
    run.assert_code(3);
    assert!(run.stdout.contains("being probed"), "{}", run.stdout);
    // Any session's turn on the account that ends without a limit opens it; the launches
    // that follow are staggered.
    turn(&env, "S2", &at(122));
    let run = check(&env, &at(122));
    run.assert_code(3);
    assert!(
        run.stdout.contains("opens for this launch at"),
        "{}",
        run.stdout
    );
    check(&env, &at_s(122 * 60 + 10)).assert_code(0);
    // The probe met the limit again: closed until the new reset.
    limited(
        &env,
        "S3",
        "5-hour limit reached ∙ try again in 3h",
        &at(123),
    );
    check(&env, &at(124)).assert_code(3);
    // A person's word reopens it.
    let run = env.run(None, &at(124), &["window", "reopen", "--client", "claude"]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with("reopened 1 window of "),
        "{}",
        run.stdout
    );
    check(&env, &at(124)).assert_code(0);
    // With no client named, outside one, it says how to name it.
    let run = env.run(None, &at(124), &["window", "check"]);
    run.assert_code(2);
    assert!(run.stderr.contains("--client"), "{}", run.stderr);
}

#[test]
fn the_account_is_read_from_the_clients_files_and_keeps_no_secret() {
    let env = TestEnv::new();
    let uuid = format!("{:08x}-aaaa-4bbb-8ccc-000000000001", std::process::id());
    std::fs::write(
        env.home().join(".claude.json"),
        json!({
            "numStartups": 4,
            "primaryApiKey": "sk-ant-api03-do-not-keep",
            "oauthAccount": { "accountUuid": uuid, "emailAddress": "dev@example.invalid", "organizationUuid": "org-1" }
        })
        .to_string(),
    )
    .unwrap();
    let unnamed = |args: &[&str], now: &str| {
        let mut cmd = env.command(None, now);
        cmd.env_remove("BATON_ACCOUNT").args(args);
        crate::common::to_run(cmd.output().unwrap())
    };
    limited_as(
        &env,
        "S1",
        "Weekly limit reached ∙ try again in 2 days",
        &at(0),
        &[("BATON_ACCOUNT", None)],
    );
    let status = unnamed(&["--json", "status"], &at(1));
    status.assert_code(0);
    crate::snapshots::assert_matches_schema(&env, "status", &status.json());
    let windows = status.json()["windows"].clone();
    let label = format!("claude account {}", &uuid[..8]);
    assert_eq!(windows[0]["label"], label, "{windows}");
    assert_eq!(windows[0]["window"], "weekly", "{windows}");
    assert_eq!(windows[0]["basis"], "account");
    let kept = windows.to_string();
    for secret in ["sk-ant", "do-not-keep", "dev@example"] {
        assert!(!kept.contains(secret), "{secret} in {kept}");
    }
    if !crate::common::pg_mode() {
        let file = env.home().join(".local/state/baton/breakers.json");
        let raw = std::fs::read_to_string(&file).unwrap();
        assert!(
            !raw.contains("sk-ant") && !raw.contains("dev@example"),
            "{raw}"
        );
    }
    let run = unnamed(&["window", "check", "--client", "claude"], &at(1));
    run.assert_code(3);
    assert!(run.stdout.contains(&label), "{}", run.stdout);
    // Another account on the same machine is not held.
    let other = {
        let mut cmd = env.command(None, &at(1));
        cmd.env("BATON_ACCOUNT", format!("other-{uuid}"))
            .args(["window", "check", "--client", "claude"]);
        crate::common::to_run(cmd.output().unwrap())
    };
    other.assert_code(0);
    // Gemini CLI's account by the digest of its address; Copilot CLI's by its login.
    std::fs::create_dir_all(env.home().join(".gemini")).unwrap();
    std::fs::write(
        env.home().join(".gemini/google_accounts.json"),
        r#"{"active":"dev@example.invalid","old":[]}"#,
    )
    .unwrap();
    std::fs::create_dir_all(env.home().join(".copilot")).unwrap();
    std::fs::write(
        env.home().join(".copilot/config.json"),
        "// This file is managed automatically.\n{\"lastLoggedInUser\":{\"host\":\"https://github.com\",\"login\":\"octo\"},\"copilotTokens\":{\"k\":\"gho_do-not-keep\"}}\n",
    )
    .unwrap();
    for (client, label) in [
        (
            "gemini",
            format!(
                "gemini account {}",
                &baton_core::breaker::key_digest("dev@example.invalid")[..8]
            ),
        ),
        ("copilot", "copilot account octo".to_string()),
        ("cursor", "cursor on ".to_string()),
    ] {
        let run = unnamed(&["--json", "window", "check", "--client", client], &at(1));
        run.assert_code(0);
        let shown = run.json()["account"].as_str().unwrap().to_string();
        assert!(shown.starts_with(&label), "{client}: {shown}");
        assert!(!run.stdout.contains("do-not-keep") && !run.stdout.contains("example"));
    }
    // Text: who tripped it and until when.
    let text = unnamed(&["status"], &at(1));
    assert!(
        text.stdout
            .contains(&format!("{label}, weekly window: closed until")),
        "{}",
        text.stdout
    );
}

#[test]
fn wait_and_the_packet_say_the_window_is_closed() {
    let env = TestEnv::new();
    limited(&env, "S1", "5-hour limit reached ∙ try again in 2h", &at(0));
    let run = env.run(None, &at(1), &["--json", "wait"]);
    run.assert_code(0);
    let j = run.json();
    crate::snapshots::assert_matches_schema(&env, "wait", &j);
    assert_eq!(j["verdict"], "wait", "{j}");
    assert_eq!(j["until"], at(120));
    assert_eq!(j["window"]["window"], "5h");
    let text = env.run(None, &at(1), &["wait"]);
    assert!(
        text.stdout.starts_with("the 5h window of ") && text.stdout.contains("is closed until"),
        "{}",
        text.stdout
    );
    // `--sleep` waits it out on the fake clock; `--max` short of it is a person's call.
    env.run(None, &at(1), &["wait", "--max", "30m"])
        .assert_code(4);
    let slept = env.run(None, &at(1), &["--json", "wait", "--sleep"]);
    slept.assert_code(0);
    assert_eq!(slept.json()["waited_secs"], 119 * 60, "{}", slept.stdout);
    // A new session is told in its packet.
    let start = hook(
        &env,
        &at(2),
        "S2",
        "SessionStart",
        json!({ "source": "startup" }),
        &[],
    );
    assert!(
        start.stdout.contains("window of ") && start.stdout.contains("is closed until"),
        "{}",
        start.stdout
    );
}

/// Everyone on the account waits: a supervisor launched while the window is closed waits for
/// the reset and then for the probe, and launches after it; a supervisor on another account
/// runs on. Each in a project of its own, on one machine (one store).
#[test]
fn a_supervisor_on_the_account_waits_for_the_reset_and_follows_the_probe() {
    let shared = tempfile::tempdir().unwrap();
    let account = format!("team-{}", std::process::id());
    let on = |f: &mut Fake, account: &str| {
        f.vars.push((
            "XDG_STATE_HOME".into(),
            Some(shared.path().to_string_lossy().into_owned()),
        ));
        f.vars.push(("BATON_ACCOUNT".into(), Some(account.into())));
    };
    // A meets the limit, waits for the reset, probes the window and finishes.
    let mut a = Fake::new();
    on(&mut a, &account);
    a.attempt(
        1,
        &format!("{START}rate_limit '5-hour limit reached ∙ try again in 5m'\n"),
    );
    a.attempt(2, "baton resume accept T-1 >/dev/null\nbaton loop finish T-1 --status complete >/dev/null\nfinish\n");
    let run = a.supervise(&[]);
    run.assert_code(0);
    assert_eq!(a.launches(), 2);
    assert!(run.stderr.contains("probes it first"), "{}", run.stderr);
    // B, started at minute 0 on the same account, does not launch into the window: it waits
    // for the reset, and then for its place after the probe.
    let mut b = Fake::new();
    on(&mut b, &account);
    b.attempt(1, "finish\n");
    let run = b.supervise(&["--ticket", "T-2"]);
    run.assert_code(0);
    assert_eq!(b.launches(), 1);
    // The wait is in the work's journal, for the account, not counted as a restart.
    let log = b.env.baton("X", 500, &["--json", "log", "T-2"]);
    log.assert_code(0);
    let waits: Vec<Value> = log.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "supervise.wait")
        .cloned()
        .collect();
    let shown: Vec<(&str, &str)> = waits
        .iter()
        .map(|w| (w["source"].as_str().unwrap(), w["until"].as_str().unwrap()))
        .collect();
    let follow = at_s(5 * 60 + 10);
    assert_eq!(
        shown,
        [("account", at(5).as_str()), ("follow", follow.as_str())]
    );
    assert!(waits.iter().all(|w| w["counted"] == false), "{waits:?}");
    let launched = b.read("launched-1");
    assert_eq!(
        launched.split(' ').next(),
        Some(at_s(5 * 60 + 10).as_str()),
        "{launched}"
    );
    assert!(
        run.stderr.contains("window is closed until"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("following the probe"), "{}", run.stderr);
    // C, on another account, launches at once.
    let mut c = Fake::new();
    on(&mut c, &format!("{account}-other"));
    c.attempt(1, "finish\n");
    c.supervise(&[]).assert_code(0);
    assert_eq!(c.read("launched-1").split(' ').next(), Some(at(0).as_str()));
    // With the wait turned off, B's next run launches into the window (what baton did before).
    let mut d = Fake::new();
    on(&mut d, &account);
    d.vars.push(("BATON_WINDOW".into(), Some("off".into())));
    let state = shared.path().to_string_lossy().into_owned();
    limited_as(
        &d.env,
        "S9",
        "5-hour limit reached ∙ try again in 3h",
        &at(0),
        &[
            ("XDG_STATE_HOME", Some(&state)),
            ("BATON_ACCOUNT", Some(&account)),
        ],
    );
    d.run(&["window", "check", "--client", "claude"])
        .assert_code(3);
    d.attempt(1, "finish\n");
    d.supervise(&[]).assert_code(0);
    assert_eq!(d.read("launched-1").split(' ').next(), Some(at(0).as_str()));
}

/// At the reset exactly one of the waiters probes; the other launches only after the probe's
/// first turn, its place in the stagger later. On the machine's clock, two supervisors at once.
#[test]
fn at_the_reset_exactly_one_waiter_probes() {
    crate::files_only!("the test seeds the machine's breakers file");
    let shared = tempfile::tempdir().unwrap();
    let now = jiff::Timestamp::now();
    let reset = now + jiff::SignedDuration::from_secs(3);
    let who = json!({ "id": "S0", "host": "elsewhere", "since": baton_core::time::format_ts(now) });
    let account = format!("pair-{}", std::process::id());
    let dir = shared.path().join("baton");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("breakers.json"),
        json!({ "breakers": [{
            "client": "claude", "account": format!("account:{account}"), "label": "claude account pair",
            "basis": "account", "window": "5h", "reset": baton_core::time::format_ts(reset),
            "opened": baton_core::time::format_ts(now), "tripped_by": who
        }]})
        .to_string(),
    )
    .unwrap();
    let fakes: Vec<Fake> = (0..2)
        .map(|_| {
            let mut f = Fake::new();
            f.vars.push((
                "XDG_STATE_HOME".into(),
                Some(shared.path().to_string_lossy().into_owned()),
            ));
            f.vars.push(("BATON_ACCOUNT".into(), Some(account.clone())));
            f.vars.push(("BATON_NOW".into(), None));
            f.attempt(1, "sleep 1\nfinish\n");
            f
        })
        .collect();
    let children: Vec<_> = fakes
        .iter()
        .map(|f| {
            f.command(&["supervise", "--", "claude", "-p", "do it"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for o in &outs {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let started = |f: &Fake| -> f64 {
        let line = f.read("launched-1");
        line.split(' ').nth(1).unwrap().trim().parse().unwrap()
    };
    let mut times: Vec<f64> = fakes.iter().map(started).collect();
    times.sort_by(|x, y| x.partial_cmp(y).unwrap());
    // The breaker keeps its reset to the second.
    let reset_secs = reset.as_second() as f64;
    assert!(
        times[0] >= reset_secs,
        "launched before the reset: {times:?} < {reset_secs}"
    );
    // The second waited for the probe's first turn (a second's work), then its 10 s place.
    assert!(
        times[1] - times[0] >= 10.0,
        "the second did not follow the probe: {times:?}"
    );
    let probes: Vec<_> = outs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("probes it first"))
        .collect();
    assert_eq!(probes.len(), 1, "exactly one probe");
}

/// The limit's own words, as the failure hook passed them, name the window it closes, and a
/// team's pooled budget is the organization's; `reopen` lifts the pool's too.
#[test]
fn the_limits_words_name_its_window_and_a_pooled_budget_holds_the_team() {
    let env = TestEnv::new();
    let uuid = format!("{:08x}-bbbb-4ccc-8ddd-000000000002", std::process::id());
    std::fs::write(
        env.home().join(".claude.json"),
        json!({ "oauthAccount": { "accountUuid": uuid, "organizationUuid": format!("org-{uuid}") } })
            .to_string(),
    )
    .unwrap();
    let unset: &[(&str, Option<&str>)] = &[("BATON_ACCOUNT", None)];
    let windows = || {
        let mut cmd = env.command(None, &at(1));
        cmd.env_remove("BATON_ACCOUNT").args(["--json", "status"]);
        let run = crate::common::to_run(cmd.output().unwrap());
        run.assert_code(0);
        let mut seen: Vec<(String, String)> = run.json()["windows"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|b| {
                (
                    b["window"].as_str().unwrap().to_string(),
                    b["label"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        seen.sort();
        seen
    };
    // Three hours off would be the 5-hour window by distance; the words say otherwise.
    limited_as(
        &env,
        "S1",
        "You've hit your Opus limit · try again in 3h",
        &at(0),
        unset,
    );
    limited_as(
        &env,
        "S2",
        "Weekly limit reached ∙ try again in 3h",
        &at(0),
        unset,
    );
    let short = &uuid[..8];
    assert_eq!(
        windows(),
        [
            ("weekly".to_string(), format!("claude account {short}")),
            ("weekly-opus".to_string(), format!("claude account {short}")),
        ]
    );
    limited_as(
        &env,
        "S3",
        "You've hit your team's pooled group budget · try again in 4h",
        &at(0),
        unset,
    );
    assert!(
        windows().contains(&(
            "5h".to_string(),
            format!("claude team pool org{}", &uuid[..5])
        )),
        "{:?}",
        windows()
    );
    let mut cmd = env.command(None, &at(1));
    cmd.env_remove("BATON_ACCOUNT")
        .args(["window", "reopen", "--client", "claude"]);
    let run = crate::common::to_run(cmd.output().unwrap());
    run.assert_code(0);
    assert!(
        run.stdout.starts_with("reopened 3 windows"),
        "{}",
        run.stdout
    );
    assert_eq!(windows(), []);
}

/// A breakers file no one can read holds nothing: every command and hook runs on, and the
/// next limit writes a good one, the bad one kept aside.
#[test]
fn a_breakers_file_that_cannot_be_read_stops_nothing() {
    crate::files_only!("the machine's breakers file");
    let env = TestEnv::new();
    let dir = env.home().join(".local/state/baton");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("breakers.json");
    for bad in [
        "{not json",
        r#"{"breakers":[{"client":"claude","account":"machine:x","label":"l","basis":"machine","window":"5h","reset":"2026-03-01T11:00:00Z","opened":"x","tripped_by":{"id":"s","host":"h","since":"x"},"probe":{"by":{"id":"gone","host":"h","since":"never"},"ok":"yesterday"}}]}"#,
    ] {
        std::fs::write(&file, bad).unwrap();
        for args in [
            &["status"][..],
            &["wait"],
            &["window", "check", "--client", "claude"],
        ] {
            env.run(None, &at(1), args).assert_code(0);
        }
    }
    std::fs::write(&file, "{not json").unwrap();
    limited(&env, "S1", "5-hour limit reached ∙ try again in 2h", &at(0));
    check(&env, &at(1)).assert_code(3);
    assert_eq!(
        std::fs::read_to_string(dir.join("breakers.json.bad")).unwrap(),
        "{not json"
    );
}

/// A session hears of its own client's windows only; a script's `baton wait` waits for every
/// client's.
#[test]
fn a_session_hears_of_its_own_clients_window_and_a_script_of_every_one() {
    crate::files_only!("the test seeds the machine's breakers file");
    let env = TestEnv::new();
    let dir = env.home().join(".local/state/baton");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("breakers.json"),
        json!({ "breakers": [{
            "client": "codex", "account": "account:shared", "label": "codex account shared",
            "basis": "account", "window": "5h", "reset": at(120), "opened": at(0),
            "tripped_by": { "id": "C1", "host": "h", "since": at(0) }
        }]})
        .to_string(),
    )
    .unwrap();
    let named: &[(&str, Option<&str>)] = &[("BATON_ACCOUNT", Some("shared"))];
    let start = hook(
        &env,
        &at(1),
        "S1",
        "SessionStart",
        json!({ "source": "startup" }),
        named,
    );
    assert!(!start.stdout.contains("codex account"), "{}", start.stdout);
    let mut cmd = env.command(None, &at(1));
    cmd.env("BATON_ACCOUNT", "shared").args(["--json", "wait"]);
    let run = crate::common::to_run(cmd.output().unwrap());
    run.assert_code(0);
    assert_eq!(run.json()["window"]["client"], "codex", "{}", run.stdout);
}
