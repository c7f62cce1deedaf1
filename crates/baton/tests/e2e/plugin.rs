//! baton as a Claude Code or Codex plugin: `baton init <client> --plugin DIR` writes a
//! marketplace, the real client adds it and installs the plugin offline, and a session runs with
//! it, with no baton on the PATH the client was started with: the plugin's hooks interrupt the
//! loop on a 429, and its SessionStart hook hands the next session the packet. Claude Code's
//! tool calls find `baton` through the plugin's `bin/`; Codex's do not (0.171.0 puts neither the
//! plugin's `bin/` nor `PLUGIN_ROOT` in a tool call's environment), so there the agent's
//! `baton` is the one `~/.profile` puts on the login shell's PATH, as for `baton init codex`.

use crate::clients::{Client, Harness, Outcome, baton_bin};
use crate::fake_api::Reply;
use crate::flow::{baton, loop_state};

#[test]
fn claude_installs_the_plugin_from_a_local_marketplace_and_runs_with_it() {
    let script = vec![
        Reply::Shell("baton loop init T-1".into()),
        Reply::RateLimit,
        Reply::Text("resumed".into()),
    ];
    let test = "claude_installs_the_plugin_from_a_local_marketplace_and_runs_with_it";
    let Some(mut h) = Harness::new(Client::Claude, test, script) else {
        return;
    };
    h.baton_on_path = false;
    // Nothing but the plugin puts baton on a tool call's PATH.
    std::fs::write(h.home.join(".bash_profile"), "").unwrap();
    std::fs::write(h.home.join(".profile"), "").unwrap();
    let inherited = std::env::var("PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&inherited).all(|d| !d.join("baton").exists()),
        "a baton on the test's own PATH would hide what the plugin does"
    );

    let marketplace = h.home.join("marketplace");
    let out = std::process::Command::new(baton_bin())
        .args(["init", "claude", "--plugin"])
        .arg(&marketplace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = marketplace.to_string_lossy().into_owned();
    for args in [
        vec!["plugin", "marketplace", "add", shown.as_str()],
        vec!["plugin", "install", "baton@baton"],
    ] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let run = h.run_args(&args);
        assert_eq!(run.code, Some(0), "claude {args:?}: {run}");
    }

    seen_as_installed(&h, "claude");

    let first = h.run("work on ticket T-1");
    assert_ne!(first.code, Some(0), "a 429 ends session 1: {first}");
    interrupted_then_resumed(&h, &first);
}

/// With the files the real client wrote for its plugin install: `baton doctor` sees baton's
/// hooks as installed (the plugin's), and `baton init <client>` refuses to install the same
/// hooks in the settings too, which would run each hook twice.
fn seen_as_installed(h: &Harness, client: &str) {
    let (_, out, err) = baton(h, &["--json", "doctor"]);
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let plugin = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["name"]
                .as_str()
                .unwrap_or_default()
                .contains("(plugin baton@baton)")
        })
        .unwrap_or_else(|| panic!("no plugin check: {report}"));
    assert_eq!(plugin["ok"], true, "{report}");
    let (code, _, err) = baton(h, &["init", client]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("would run every hook twice"), "{err}");
}

/// `baton init codex --plugin` into `<home>/marketplace` (the trust entries into the harness's
/// `$CODEX_HOME/config.toml`), then the real Codex adds the marketplace and installs the plugin.
fn install_codex_plugin(h: &Harness) -> std::path::PathBuf {
    let marketplace = h.home.join("marketplace");
    let out = std::process::Command::new(baton_bin())
        .args(["init", "codex", "--plugin"])
        .arg(&marketplace)
        .env_clear()
        .env("HOME", &h.home)
        .env("CODEX_HOME", h.home.join(".codex"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown = marketplace.to_string_lossy().into_owned();
    for args in [
        vec!["plugin", "marketplace", "add", shown.as_str()],
        vec!["plugin", "add", "baton@baton"],
    ] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let run = h.run_args(&args);
        assert_eq!(run.code, Some(0), "codex {args:?}: {run}");
    }
    assert!(
        !h.project.join(".codex").exists(),
        "no hooks but the plugin's"
    );
    marketplace
}

#[test]
fn codex_installs_the_plugin_from_a_local_marketplace_and_runs_with_it() {
    let script = vec![
        Reply::Shell("echo \"plugin root: [$PLUGIN_ROOT]\"".into()),
        Reply::Shell("baton loop init T-1".into()),
        Reply::RateLimit,
        Reply::Text("resumed".into()),
    ];
    let test = "codex_installs_the_plugin_from_a_local_marketplace_and_runs_with_it";
    let Some(mut h) = Harness::new(Client::Codex, test, script) else {
        return;
    };
    // The client and its hooks see no baton on their PATH; the tool calls' login shell gets
    // the test's baton from the harness's ~/.bash_profile.
    h.baton_on_path = false;
    let inherited = std::env::var("PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&inherited).all(|d| !d.join("baton").exists()),
        "a baton on the test's own PATH would hide what the plugin does"
    );
    install_codex_plugin(&h);
    seen_as_installed(&h, "codex");

    let first = h.run("work on ticket T-1");
    assert_ne!(first.code, Some(0), "a 429 ends session 1: {first}");
    // Codex ran the plugin's hooks, trusted by the entries `init` wrote.
    assert!(
        first.stderr.contains("hook: SessionStart Completed"),
        "{first}"
    );
    // A tool call is not told where the plugin is (what `init`'s note about PATH is for).
    assert!(
        h.api.saw("plugin root: []"),
        "a tool call saw the plugin's directory:\n{}",
        h.api.summary()
    );
    interrupted_then_resumed(&h, &first);
}

/// What `init`'s note says about a reinstall: Codex pins the files of the installed copy it first
/// ran the hooks with, and runs none of them once a reinstall brings other files.
#[test]
fn codex_runs_no_hook_of_a_reinstalled_plugin_whose_files_changed() {
    let script = vec![Reply::Text("one".into()), Reply::Text("two".into())];
    let test = "codex_runs_no_hook_of_a_reinstalled_plugin_whose_files_changed";
    let Some(h) = Harness::new(Client::Codex, test, script) else {
        return;
    };
    let marketplace = install_codex_plugin(&h);
    let first = h.run("one");
    assert_eq!(first.code, Some(0), "{first}");
    assert!(
        first.stderr.contains("hook: SessionStart Completed"),
        "{first}"
    );

    let skill = marketplace.join("baton/skills/baton/SKILL.md");
    let mut text = std::fs::read_to_string(&skill).unwrap();
    text.push_str("\nchanged\n");
    std::fs::write(&skill, text).unwrap();
    let args: Vec<String> = ["plugin", "add", "baton@baton"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let run = h.run_args(&args);
    assert_eq!(run.code, Some(0), "{run}");

    let second = h.run("two");
    assert_eq!(second.code, Some(0), "{second}");
    assert!(
        second.stderr.contains("hook: SessionStart Failed")
            && !second.stderr.contains("hook: SessionStart Completed"),
        "{second}"
    );
}

/// After session 1, which a 429 ended: the loop is interrupted as a rate limit, owned by the
/// session its tool call found; session 2's request carries the packet; `status` reads it all.
fn interrupted_then_resumed(h: &Harness, first: &Outcome) {
    let state = loop_state(h);
    assert_eq!(state["status"], "interrupted", "{state}\n{first}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}\n{first}");
    assert!(
        !state["session_id"].as_str().unwrap_or_default().is_empty(),
        "the tool call found its session: {state}"
    );
    let seen_before = h.api.requests().len();

    let second = h.run("carry on");
    assert_eq!(second.code, Some(0), "{second}\n{}", h.api.summary());
    let packet = h.api.requests()[seen_before..]
        .iter()
        .filter(|r| r.main)
        .any(|r| r.body.contains("EXPECTED OUTCOME") && r.body.contains("T-1"));
    assert!(
        packet,
        "no request of session 2 carries the packet:\n{}",
        h.api.summary()
    );
    let (code, out, err) = baton(h, &["status"]);
    assert_eq!(code, 0, "{out}\n{err}");
}
