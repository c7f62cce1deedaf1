//! Session continuation across every kind of work: `baton resume` with no argument, its packet,
//! `baton status` and `baton pause`.

use serde_json::{Value, json};

use crate::common::{TestEnv, at};

/// The rows of `baton --json resume`, by kind and key.
fn rows(out: &Value) -> Vec<(String, String)> {
    out["work"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["kind"].as_str().unwrap().to_string(),
                w["key"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn row<'a>(out: &'a Value, kind: &str, key: &str) -> &'a Value {
    out["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == kind && w["key"] == key)
        .unwrap_or_else(|| panic!("no {kind} {key} in {out}"))
}

fn batch_key(all: &Value) -> String {
    all["work"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "batch")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A plan with two declared phases and a ledger whose phase 1 was started at `minute`.
fn ledger(env: &TestEnv, plan: &str, session: &str, minute: i64) {
    env.write(&format!("{plan}/phase-1.md"), "# Phase 1\n");
    env.write(&format!("{plan}/phase-2.md"), "# Phase 2\n");
    env.baton(session, minute, &["ledger", "init", plan])
        .assert_code(0);
    env.baton(session, minute, &["ledger", "start", plan, "--phase", "1"])
        .assert_code(0);
}

#[test]
fn resume_without_a_ticket_names_each_piece_of_work_once_with_its_own_commands_verdict() {
    let env = TestEnv::new();
    // Session A: a loop stopped by a rate limit, a loop whose turn died, a batch, a run and a
    // ledger, each interrupted; everything is an hour old when session B starts.
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "qa",
            "--action",
            "spawned",
            "--iteration",
            "2",
        ],
    )
    .assert_code(0);
    env.baton(
        "A",
        0,
        &["loop", "interrupt", "PROJ-1", "--reason", "rate_limit"],
    )
    .assert_code(0);
    env.baton("A", 0, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    // Interrupted with no known reason, as a failure hook records a turn that died.
    env.baton("A", 0, &["loop", "interrupt", "PROJ-2"])
        .assert_code(0);
    env.baton("A", 0, &["batch", "start", "PROJ-3", "PROJ-4"])
        .assert_code(0);
    // Interrupted as the originating stop hook marks it.
    let mut batch = env.read_batch();
    batch["status"] = "interrupted".into();
    env.write_batch(&batch);
    let run_id = env.baton("A", 0, &["run", "new", "--feature", "export retries"]);
    let run_id = run_id.stdout.lines().next().unwrap().to_string();
    ledger(&env, "plans/auth", "A", 0);
    // A's agent died on it: the ledger is A's, and it says A stopped.
    env.baton("A", 0, &["ledger", "died", "plans/auth", "--phase", "1"])
        .assert_code(0);
    // The active feature of the continuation protocol, on the checked-out branch.
    env.write(
        ".aspis/current/active_feature.json",
        "{\n  \"id\": \"F-001\",\n  \"slug\": \"export-retries\",\n  \"title\": \"Export retries\",\n  \"path\": \".aspis/features/F-001-export-retries\",\n  \"branch\": \"main\",\n  \"mode\": \"production\",\n  \"phase\": \"build\"\n}\n",
    );
    env.write(
        ".aspis/features/F-001-export-retries/TASKS.md",
        "- [x] T-01 Setup\n- [~] T-02 Retry loop\n- [ ] T-03 Docs\n",
    );
    env.git(&["add", "-A"]);
    env.git(&["commit", "--quiet", "-m", "plans"]);

    let out = env.baton("B", 60, &["--json", "resume"]);
    out.assert_code(0);
    let all = out.json();
    let mut names = rows(&all);
    names.sort();
    let batch = batch_key(&all);
    let mut expected: Vec<(String, String)> = [
        ("batch", batch.as_str()),
        ("feature", "F-001"),
        ("ledger", "plans/auth"),
        ("loop", "PROJ-1"),
        ("loop", "PROJ-2"),
        ("run", run_id.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    expected.sort();
    assert_eq!(names, expected, "each piece of work once");
    assert_eq!(all["verdict"], "resume");

    // Each verdict, mode and next step is the one its own command gives, and so is each row
    // of `status --json`.
    let status = env.baton("B", 60, &["--json", "status"]).json();
    for ticket in ["PROJ-1", "PROJ-2"] {
        let own = env.baton("B", 60, &["--json", "resume", ticket]).json();
        for listed in [row(&all, "loop", ticket), row(&status, "loop", ticket)] {
            for field in ["verdict", "mode", "next"] {
                assert_eq!(listed[field], own[field], "{ticket} {field}: {listed}");
            }
        }
    }
    assert_eq!(row(&all, "loop", "PROJ-1")["class"], "rate_limit");
    assert_eq!(row(&all, "loop", "PROJ-2")["class"], "crash");
    assert_eq!(row(&all, "ledger", "plans/auth")["verdict"], "derive");
    assert_eq!(row(&all, "feature", "F-001")["verdict"], "resume");
    assert_eq!(row(&all, "feature", "F-001")["class"], "crash");
    // The batch's verdict is the ownership gate's: `batch resume` takes it over.
    assert_eq!(row(&all, "ledger", "plans/auth")["phase"], "phase 1");
    assert_eq!(
        row(&all, "batch", batch_key(&all).as_str())["verdict"],
        "offer"
    );
    // The run's own command is checked last: it takes the run lock when it proceeds.
    let own = env
        .baton("B", 60, &["--json", "run", "resume", &run_id])
        .json();
    assert_eq!(row(&all, "run", &run_id)["verdict"], own["verdict"]);

    // One packet names every interrupted piece of work with the command that accepts it.
    let md = all["packet_markdown"].as_str().unwrap();
    for needle in [
        "`baton resume accept PROJ-1`",
        "`baton resume accept PROJ-2`",
        "`baton batch resume`",
        &format!("`baton run resume {run_id}`"),
        "`baton ledger derive plans/auth --append`",
        "`baton continue --set-resume-point`",
    ] {
        assert!(md.contains(needle), "{needle} missing from\n{md}");
    }
    // The text says the same, one line per piece of work, then the packet.
    let text = env.baton("B", 60, &["resume"]);
    assert!(
        text.stdout
            .contains("loop PROJ-1: offer (respawn) · rate_limit"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("# Resume packet"), "{}", text.stdout);
}

#[test]
fn resume_without_a_ticket_on_an_empty_project_says_so_and_creates_nothing() {
    let env = TestEnv::new();
    let out = env.baton("A", 0, &["--json", "resume"]);
    out.assert_code(0);
    assert_eq!(out.json()["verdict"], "none");
    assert!(out.json()["packet"]["items"].as_array().unwrap().is_empty());
    assert!(!env.state_dir().exists());
}

#[test]
fn the_packet_stays_under_ten_thousand_characters_with_a_thousand_loops_most_urgent_first() {
    let env = TestEnv::new();
    // 1,000 loops session A paused, 50 runs, 20 ledgers; one loop interrupted after the pause
    // with no known reason (a crash, more urgent than any pause).
    for n in 0..1000 {
        let key = format!("PROJ-{n:04}");
        env.write_loop(
            &key,
            &json!({
                "schema_version": 1, "session_id": "A", "ticket_id": key, "loop_key": key,
                "status": "active", "last_phase": "qa", "last_phase_action": "spawned",
                "loop_state": {"phase": "qa", "iteration": 1, "max_iterations": 3},
                "last_updated": at(0), "owner_epoch": 1
            }),
        );
    }
    env.write_loop(
        "ZZZ-LATE",
        &json!({
            "schema_version": 1, "session_id": "A", "ticket_id": "ZZZ-LATE", "loop_key": "ZZZ-LATE",
            "status": "interrupted", "interrupt_reason": "unknown", "interrupted_at": at(10),
            "last_phase": "skeptic", "last_phase_action": "spawned",
            "loop_state": {"phase": "skeptic", "iteration": 1, "max_iterations": 3},
            "last_updated": at(10), "owner_epoch": 1
        }),
    );
    for n in 0..50 {
        env.baton(
            "A",
            0,
            &["run", "new", "--feature", &format!("feature {n}")],
        )
        .assert_code(0);
    }
    for n in 0..20 {
        env.write(
            &format!("plans/p{n:02}/STATE.md"),
            &format!(
                "# run-state — plan: plans/p{n:02}\nphase 1: started (base abc1234) @ {}\n",
                at(0)
            ),
        );
    }
    env.baton("A", 5, &["pause", "--reason", "end of day"])
        .assert_code(0);
    let out = env.baton("B", 120, &["--json", "resume"]);
    out.assert_code(0);
    let all = out.json();
    let md = all["packet_markdown"].as_str().unwrap();
    assert!(
        md.chars().count() <= 10_000,
        "{} characters",
        md.chars().count()
    );
    let packet = &all["packet"];
    let items = packet["items"].as_array().unwrap();
    // Most urgent first: the crash, then the paused work.
    let urgency: Vec<u64> = items
        .iter()
        .map(|i| i["urgency"].as_u64().unwrap())
        .collect();
    assert!(urgency.is_sorted(), "{urgency:?}");
    let late = items
        .iter()
        .position(|i| i["key"] == "ZZZ-LATE")
        .expect("the crash is in");
    assert_eq!(items[late]["class"], "crash");
    let first_pause = items
        .iter()
        .position(|i| i["class"] == "pause")
        .expect("a pause is in");
    assert!(late < first_pause, "the crash before the paused work");
    let more = packet["more"].as_u64().unwrap();
    assert_eq!(items.len() as u64 + more, 1000 + 1 + 50 + 20);
    assert!(
        md.contains(&format!("+{more} more: `baton status` lists them")),
        "{md}"
    );
    for title in [
        "## INTENT",
        "## CONTEXT",
        "## CONSTRAINTS",
        "## REFERENCES",
        "## EXPECTED OUTCOME",
    ] {
        assert!(md.contains(title), "{title}");
    }
}

#[test]
fn a_pause_covers_what_the_pausing_session_wrote_before_it_and_nothing_after() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 0, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    env.baton("A", 1, &["pause", "--reason", "lunch"])
        .assert_code(0);
    // Written after the pause: resumed since, then abandoned.
    env.baton(
        "A",
        2,
        &[
            "loop", "set", "PROJ-2", "--phase", "skeptic", "--action", "spawned",
        ],
    )
    .assert_code(0);
    // Another session's pause leaves A's in place.
    env.baton("C", 3, &["pause", "--reason", "meeting"])
        .assert_code(0);
    let all = env.baton("B", 60, &["--json", "resume"]).json();
    assert_eq!(row(&all, "loop", "PROJ-1")["class"], "pause");
    // Not covered, and nothing else says it was interrupted: another session's quiet loop.
    assert_eq!(row(&all, "loop", "PROJ-2")["verdict"], "quiet");
    assert_eq!(row(&all, "loop", "PROJ-2")["class"], Value::Null);
    assert_eq!(all["pause"]["marks"].as_array().unwrap().len(), 2);
    assert!(
        all["packet_markdown"]
            .as_str()
            .unwrap()
            .contains("explicitly paused: lunch"),
        "the reason reaches the next session: {}",
        all["packet_markdown"]
    );
    env.baton("A", 61, &["pause", "--clear"]).assert_code(0);
    let all = env.baton("B", 62, &["--json", "resume"]).json();
    assert_eq!(row(&all, "loop", "PROJ-1")["verdict"], "quiet");
}

#[test]
fn a_delegate_that_returned_and_was_never_processed_is_left() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &[
            "loop", "set", "PROJ-1", "--phase", "skeptic", "--action", "returned",
        ],
    )
    .assert_code(0);
    env.baton("A", 1, &["loop", "interrupt", "PROJ-1"])
        .assert_code(0);
    let all = env.baton("B", 60, &["--json", "resume"]).json();
    assert_eq!(row(&all, "loop", "PROJ-1")["class"], "left");
    assert!(
        all["packet_markdown"]
            .as_str()
            .unwrap()
            .contains("recontextualize"),
        "{}",
        all["packet_markdown"]
    );
}

#[test]
fn live_and_finished_work_is_listed_but_not_in_the_packet() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton("A", 0, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &["loop", "finish", "PROJ-2", "--status", "complete"],
    )
    .assert_code(0);
    let all = env.baton("B", 2, &["--json", "resume"]).json();
    assert_eq!(row(&all, "loop", "PROJ-1")["verdict"], "live");
    assert_eq!(row(&all, "loop", "PROJ-2")["verdict"], "none");
    assert_eq!(row(&all, "loop", "PROJ-2")["detail"], "finished");
    assert_eq!(all["verdict"], "none");
    assert!(all["packet"]["items"].as_array().unwrap().is_empty());
}

#[test]
fn status_is_one_table_of_everything_within_eighty_columns_without_colour_when_piped() {
    let env = TestEnv::new();
    let long = "PROJ-".to_string() + &"9".repeat(60);
    env.baton(
        "a-very-long-session-identifier-0123456789",
        0,
        &["loop", "init", &long],
    )
    .assert_code(0);
    env.baton(
        "a-very-long-session-identifier-0123456789",
        0,
        &["loop", "interrupt", &long],
    )
    .assert_code(0);
    env.baton("A", 0, &["loop", "init", "PROJ-2"])
        .assert_code(0);
    env.baton(
        "A",
        0,
        &["loop", "interrupt", "PROJ-2", "--reason", "rate_limit"],
    )
    .assert_code(0);
    let out = env.baton("B", 30, &["status"]);
    out.assert_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("KIND"), "{}", out.stdout);
    for line in &lines {
        assert!(line.chars().count() <= 80, "over 80 columns: {line:?}");
    }
    assert!(!out.stdout.contains('\x1b'), "colour on a pipe");
    // The most urgent first: the loop that died for no known reason (a crash) before the rate
    // limit that has reset.
    let rows: Vec<&&str> = lines.iter().filter(|l| l.starts_with("loop")).collect();
    assert!(rows[0].contains("crash"), "{}", out.stdout);
    assert!(rows[1].contains("rate_limit"), "{}", out.stdout);
    assert!(out.stdout.contains("A stale 30m"), "{}", out.stdout);
    let json = env.baton("B", 30, &["--json", "status"]).json();
    let keys: Vec<&str> = json["work"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["key"].as_str().unwrap())
        .collect();
    assert!(
        keys.contains(&long.as_str()),
        "the JSON keeps the whole key"
    );
    assert_eq!(json["work"][0]["owner"]["live"], false);
}

/// A decision that belongs to a human is never pre-filled into a command an agent is told to
/// run: a loop that records no owner gets no accept or decline command in the packet, and its
/// next step asks the human, naming the command (with `--force`) that the gate then takes.
#[test]
fn the_packet_asks_the_human_before_an_ownerless_loop_is_taken_over() {
    let env = TestEnv::new();
    env.write_loop(
        "PROJ-1",
        &json!({
            "schema_version": 1, "session_id": null, "ticket_id": "PROJ-1", "loop_key": "PROJ-1",
            "status": "interrupted", "interrupt_reason": "unknown",
            "last_phase": "skeptic", "last_phase_action": "spawned",
            "loop_state": {"phase": "skeptic", "iteration": 1, "max_iterations": 3},
            "last_updated": at(0), "owner_epoch": 1
        }),
    );
    let all = env.baton("B", 60, &["--json", "resume"]).json();
    let item = &all["packet"]["items"][0];
    assert!(item["accept"].is_null(), "{item}");
    assert!(item["decline"].is_null(), "{item}");
    let next = item["next"].as_str().unwrap();
    assert!(next.contains("ask the human"), "{next}");
    assert!(
        next.contains("`baton resume accept PROJ-1 --force`"),
        "{next}"
    );
    // What the human picks is a command the gate takes.
    env.baton("B", 60, &["resume", "accept", "PROJ-1", "--force"])
        .assert_code(0);
}

/// Partial work in the tree (`confirm`): keeping it or setting it aside is the human's pick, so
/// the packet pre-fills neither `--commit` nor `--discard`; its next step names both.
#[test]
fn the_packet_names_the_humans_choices_for_partial_work_and_prefills_none() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "A",
        1,
        &["loop", "interrupt", "PROJ-1", "--reason", "unknown"],
    )
    .assert_code(0);
    env.write("half-done.txt", "partial\n");
    let all = env.baton("B", 60, &["--json", "resume"]).json();
    let item = &all["packet"]["items"][0];
    assert!(item["accept"].is_null(), "{item}");
    let next = item["next"].as_str().unwrap();
    assert!(next.contains("ask the human"), "{next}");
    assert!(
        next.contains("--discard") && next.contains("--commit"),
        "{next}"
    );
    let markdown = all["packet_markdown"].as_str().unwrap();
    assert!(
        !markdown.contains("Accept: `baton resume accept PROJ-1 --commit`"),
        "{markdown}"
    );
}

/// Colour only on a terminal, and never with `NO_COLOR`: `script` gives `baton status` a
/// pseudo-terminal.
#[test]
fn status_paints_verdicts_on_a_terminal_unless_no_color_is_set() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let on_a_terminal = |vars: &[(&str, &str)]| {
        let inner = env.command(Some("B"), &at(30));
        let mut cmd = crate::common::like(&inner, "script");
        // `script` runs its command through a shell: the binary's path is quoted, the rest are
        // fixed words.
        cmd.args(["-qec"])
            .arg(format!(
                "'{}' status",
                inner.get_program().to_string_lossy()
            ))
            .arg("/dev/null")
            .env("TERM", "xterm-256color");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("script (util-linux) runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let painted = on_a_terminal(&[]);
    assert!(
        painted.contains("\x1b["),
        "no colour on a terminal: {painted:?}"
    );
    for vars in [
        &[("NO_COLOR", "1")][..],
        &[("TERM", "dumb")][..],
        &[("CLICOLOR", "0")][..],
    ] {
        let plain = on_a_terminal(vars);
        assert!(plain.contains("PROJ-1"), "{plain:?}");
        assert!(
            !plain.contains("\x1b["),
            "colour despite {vars:?}: {plain:?}"
        );
    }
    // CLICOLOR_FORCE colours even a pipe.
    let mut cmd = env.command(Some("B"), &at(30));
    cmd.env("CLICOLOR_FORCE", "1").arg("status");
    let forced = crate::common::to_run(cmd.output().unwrap());
    assert!(forced.stdout.contains("\x1b["), "{:?}", forced.stdout);
}

/// A `plans` link never leads the session-start scan out of the project.
#[test]
fn a_plans_link_out_of_the_project_is_not_followed() {
    let env = TestEnv::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("secret")).unwrap();
    std::fs::write(
        outside.path().join("secret/STATE.md"),
        format!(
            "# run-state — plan: plans/secret\nphase 1: started (base abc1234) @ {}\n",
            at(0)
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), env.repo.join("plans")).unwrap();
    let all = env.baton("A", 60, &["--json", "status"]).json();
    assert!(all["work"].as_array().unwrap().is_empty(), "{all}");
}

/// The table takes a wide terminal's width (the key shown whole) and keeps to 80 columns into
/// a pipe; a long session id is its first 8 characters in text, whole in `--json`.
#[test]
fn status_fits_the_terminal_and_shortens_long_session_ids() {
    let env = TestEnv::new();
    let key = "PAYMENTS-REFUND-RETRY-2024";
    let uuid = "0b6f7d2e-9c1a-4d3e-8f00-123456789abc";
    env.baton(uuid, 0, &["loop", "init", key]).assert_code(0);
    let piped = env.baton("B", 1, &["status"]);
    piped.assert_code(0);
    assert!(
        piped.stdout.lines().all(|l| l.chars().count() <= 80),
        "{}",
        piped.stdout
    );
    assert!(!piped.stdout.contains(key), "{}", piped.stdout);
    assert!(piped.stdout.contains("0b6f7d2e…"), "{}", piped.stdout);
    assert!(!piped.stdout.contains(uuid), "{}", piped.stdout);
    let json = env.baton("B", 1, &["--json", "status"]).json();
    assert_eq!(json["work"][0]["owner"]["session"], uuid, "{json}");
    // `log` too: short in text, whole in `--json`.
    let log = env.baton("B", 1, &["log", key]);
    assert!(
        log.stdout.contains("(session 0b6f7d2e…, epoch 0)"),
        "{}",
        log.stdout
    );
    let log = env.baton("B", 1, &["--json", "log", key]).json();
    assert_eq!(log["events"][0]["session"], uuid, "{log}");

    // On a terminal: its width, wider or narrower than 80.
    let on_terminal = |cols: usize| {
        let inner = env.command(Some("B"), &at(1));
        let mut cmd = crate::common::like(&inner, "script");
        cmd.args(["-qec"])
            .arg(format!(
                "stty cols {cols}; '{}' status",
                inner.get_program().to_string_lossy()
            ))
            .arg("/dev/null")
            .env("TERM", "dumb");
        let out = cmd.output().expect("script (util-linux) runs");
        String::from_utf8_lossy(&out.stdout).replace('\r', "")
    };
    let wide = on_terminal(120);
    assert!(wide.contains(key), "{wide}");
    assert!(wide.lines().all(|l| l.chars().count() <= 120), "{wide}");
    assert!(wide.lines().any(|l| l.chars().count() > 80), "{wide}");
    let narrow = on_terminal(66);
    assert!(narrow.lines().all(|l| l.chars().count() <= 66), "{narrow}");
    assert!(narrow.contains("PAYMENTS"), "{narrow}");
}
