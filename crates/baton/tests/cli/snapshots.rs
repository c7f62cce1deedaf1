//! Snapshots of what users see: the `--help` of every command, and the text and `--json` of
//! the session-start answers (`resume`, `status`, `log`, `loop show`) on one interrupted loop.
//! A change to a help layout or a JSON shape shows up here as a diff to review
//! (`cargo insta review`, or `INSTA_UPDATE=always` and `git diff`), never unnoticed.
//!
//! The repository's temp path is masked as `[REPO]`; the clock and the session ids are fixed.

use crate::common::{TestEnv, at};

/// `insta::assert_snapshot!` with the environment's temp paths masked.
fn snapshot(env: &TestEnv, name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    let repo = env.repo.canonicalize().unwrap();
    settings.add_filter(&regex_escape(&repo.display().to_string()), "[REPO]");
    settings.add_filter(&regex_escape(&env.repo.display().to_string()), "[REPO]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// `--json` output pretty-printed, so a change to its shape is a readable diff; text as it is.
fn shown(name: &str, stdout: &str) -> String {
    if !name.ends_with("json") {
        return stdout.to_string();
    }
    let value: serde_json::Value = serde_json::from_str(stdout).unwrap();
    serde_json::to_string_pretty(&value).unwrap()
}

/// The subcommands a help lists under `Commands:` (a two-space indent, then the name).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_help_of_every_command() {
    let env = TestEnv::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.run(None, &at(0), &args);
        run.assert_code(0);
        seen += 1;
        for sub in subcommands(&run.stdout) {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
        let name = if path.is_empty() {
            "help".to_string()
        } else {
            format!("help-{}", path.join("-"))
        };
        snapshot(&env, &name, &run.stdout);
    }
    assert!(seen > 30, "only {seen} commands found");
}

/// One loop, interrupted by a rate limit, as the next session sees it.
fn interrupted_loop() -> TestEnv {
    let env = TestEnv::new();
    env.baton("S-one", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    env.baton(
        "S-one",
        1,
        &[
            "loop",
            "set",
            "PROJ-1",
            "--phase",
            "qa",
            "--action",
            "returned",
            "--iteration",
            "2",
        ],
    )
    .assert_code(0);
    env.baton(
        "S-one",
        2,
        &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "15m",
        ],
    )
    .assert_code(0);
    env
}

#[test]
fn what_the_next_session_sees() {
    crate::files_only!("the snapshots name the state files");
    let env = interrupted_loop();
    for (name, args) in [
        ("resume", &["resume"][..]),
        ("resume-json", &["--json", "resume"]),
        ("resume-ticket", &["resume", "PROJ-1"]),
        ("resume-ticket-json", &["--json", "resume", "PROJ-1"]),
        ("status", &["status"]),
        ("status-json", &["--json", "status"]),
        ("log", &["log", "PROJ-1"]),
        ("log-json", &["--json", "log", "PROJ-1"]),
        ("loop-show", &["loop", "show", "PROJ-1"]),
        ("loop-show-json", &["--json", "loop", "show", "PROJ-1"]),
    ] {
        let run = env.baton("S-two", 30, args);
        run.assert_code(0);
        snapshot(
            &env,
            &format!("next-session-{name}"),
            &shown(name, &run.stdout),
        );
    }
}

#[test]
fn what_a_transition_and_a_refusal_print() {
    crate::files_only!("the snapshots name the state files");
    let env = TestEnv::new();
    env.baton("S-one", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let set = [
        "loop", "set", "PROJ-1", "--phase", "qa", "--action", "returned",
    ];
    let done = env.baton("S-one", 1, &set);
    done.assert_code(0);
    snapshot(&env, "transition", &done.stdout);
    let mut json = vec!["--json"];
    json.extend(set);
    let done = env.baton("S-one", 2, &json);
    done.assert_code(0);
    snapshot(&env, "transition-json", &shown("json", &done.stdout));
    // Another session, while the owner is live: refused, exit 3.
    let refused = env.baton("S-two", 3, &json);
    refused.assert_code(3);
    snapshot(&env, "refused-json", &shown("json", &refused.stdout));
}
