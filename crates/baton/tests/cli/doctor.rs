//! `baton doctor`: each check with its fix, exit 4 while any fails, and nothing changed.

use serde_json::Value;

use crate::common::{TestEnv, at, to_run};

/// `baton doctor --json` with `path` as PATH (the system's after it) and `CODEX_HOME` in the
/// test's home.
fn doctor(env: &TestEnv, path: Option<&std::path::Path>) -> (i32, Value) {
    let mut cmd = env.command(None, &at(0));
    let system = std::env::var("PATH").unwrap_or_default();
    if let Some(dir) = path {
        cmd.env("PATH", format!("{}:{system}", dir.display()));
    }
    cmd.env("CODEX_HOME", env.home().join(".codex"))
        .args(["--json", "doctor"]);
    let run = to_run(cmd.output().unwrap());
    (run.code, run.json())
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// A folder holding a `baton` that is this build.
fn baton_dir(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.home().join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_baton"), dir.join("baton")).unwrap();
    dir
}

#[test]
fn nothing_installed_is_two_fixes_and_installing_passes_them() {
    let env = TestEnv::new();
    let before = env.snapshot();
    let (code, report) = doctor(&env, None);
    assert_eq!(code, 4, "{report}");
    assert_eq!(env.snapshot(), before, "doctor changes nothing");
    assert_eq!(check(&report, "git")["ok"], true, "{report}");
    assert_eq!(check(&report, "hooks")["ok"], false, "{report}");
    assert!(
        check(&report, "hooks")["fix"]
            .as_str()
            .unwrap()
            .contains("baton init <client>")
    );
    assert_eq!(check(&report, "PATH")["ok"], false, "{report}");

    let bin = baton_dir(&env);
    env.run(None, &at(0), &["init", "claude"]).assert_code(0);
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(check(&report, "Claude Code hooks")["ok"], true, "{report}");
    assert_eq!(check(&report, "Claude Code runs")["ok"], true, "{report}");
    // Without baton on the PATH the hooks, which call it by name, cannot run.
    let (code, report) = doctor(&env, None);
    assert_eq!(code, 4, "{report}");
    assert_eq!(check(&report, "Claude Code runs")["ok"], false, "{report}");
}

#[test]
fn codex_hooks_without_their_trust_are_named_with_the_command_that_writes_it() {
    let env = TestEnv::new();
    let bin = baton_dir(&env);
    let mut cmd = env.command(None, &at(0));
    cmd.env("CODEX_HOME", env.home().join(".codex"))
        .args(["init", "codex"]);
    to_run(cmd.output().unwrap()).assert_code(0);
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 4, "{report}");
    assert_eq!(check(&report, "Codex hook trust")["ok"], true, "{report}");
    let project = check(&report, "Codex project trust");
    assert_eq!(project["ok"], false, "{report}");
    assert!(
        project["fix"].as_str().unwrap().contains("--trust-project"),
        "{report}"
    );
    // A handler edited by hand is no longer the one Codex trusted.
    let hooks = env.repo.join(".codex/hooks.json");
    let text = std::fs::read_to_string(&hooks).unwrap();
    std::fs::write(
        &hooks,
        text.replacen("\"timeout\": 10", "\"timeout\": 11", 1),
    )
    .unwrap();
    let (_, report) = doctor(&env, Some(&bin));
    let trust = check(&report, "Codex hook trust");
    assert_eq!(trust["ok"], false, "{report}");
    assert!(trust["fix"].as_str().unwrap().contains("baton init codex"));
}

#[test]
fn gemini_in_an_untrusted_folder_is_named_with_the_trust_entry_that_fixes_it() {
    let env = TestEnv::new();
    let bin = baton_dir(&env);
    env.run(None, &at(0), &["init", "gemini"]).assert_code(0);
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 4, "{report}");
    let trust = check(&report, "Gemini CLI folder trust");
    assert_eq!(trust["ok"], false, "{report}");
    assert!(
        trust["fix"].as_str().unwrap().contains("TRUST_FOLDER"),
        "{report}"
    );
    // Trusting the repository's parent trusts the repository.
    let parent = env.repo.parent().unwrap().to_string_lossy().into_owned();
    std::fs::create_dir_all(env.home().join(".gemini")).unwrap();
    std::fs::write(
        env.home().join(".gemini/trustedFolders.json"),
        serde_json::json!({ parent: "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 0, "{report}");
    assert_eq!(check(&report, "Gemini CLI folder trust")["ok"], true);
}

#[test]
fn copilot_in_an_untrusted_folder_is_named_with_the_config_entry_that_fixes_it() {
    let env = TestEnv::new();
    let bin = baton_dir(&env);
    env.run(None, &at(0), &["init", "copilot"]).assert_code(0);
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 4, "{report}");
    let trust = check(&report, "Copilot CLI folder trust");
    assert_eq!(trust["ok"], false, "{report}");
    assert!(
        trust["fix"].as_str().unwrap().contains("trustedFolders"),
        "{report}"
    );
    // Copilot writes its config as JSON with comment lines; a parent entry
    // covers the repository.
    let parent = env.repo.parent().unwrap().to_string_lossy().into_owned();
    std::fs::create_dir_all(env.home().join(".copilot")).unwrap();
    std::fs::write(
        env.home().join(".copilot/config.json"),
        format!(
            "// User settings belong in settings.json.\n// This file is managed automatically.\n{}\n",
            serde_json::json!({ "firstLaunchAt": "2026-12-02T19:30:00.000Z", "trustedFolders": [parent] })
        ),
    )
    .unwrap();
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 0, "{report}");
    assert_eq!(check(&report, "Copilot CLI folder trust")["ok"], true);
}

/// Hooks switched off are found: `"disableAllHooks": true` in any of Claude Code's settings
/// files (the project's, its local one, the user's) fails the check with the fix that works;
/// a settings file Claude Code cannot read (a `//` comment) is named as that, not as hooks to
/// install with a command that would refuse it.
#[test]
fn hooks_switched_off_or_an_unreadable_settings_file_are_named_with_their_fix() {
    let env = TestEnv::new();
    let bin = baton_dir(&env);
    env.run(None, &at(0), &["init", "claude"]).assert_code(0);
    for (file, at_home) in [
        (".claude/settings.local.json", false),
        (".claude/settings.json", true),
    ] {
        let path = if at_home {
            env.home().join(file)
        } else {
            env.repo.join(file)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"disableAllHooks\": true}\n").unwrap();
        let (code, report) = doctor(&env, Some(&bin));
        assert_eq!(code, 4, "{report}");
        let switched = check(&report, "Claude Code hooks switched on");
        assert_eq!(switched["ok"], false, "{report}");
        assert!(
            switched["fix"]
                .as_str()
                .unwrap()
                .contains("disableAllHooks"),
            "{report}"
        );
        std::fs::remove_file(&path).unwrap();
    }
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 0, "{report}");

    let settings = env.repo.join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(&settings, format!("// my notes\n{text}")).unwrap();
    let (code, report) = doctor(&env, Some(&bin));
    assert_eq!(code, 4, "{report}");
    let unreadable = check(&report, "Claude Code settings");
    assert!(
        unreadable["fix"].as_str().unwrap().contains("no comments"),
        "{report}"
    );
    assert!(
        !report["checks"].as_array().unwrap().iter().any(|c| c["fix"]
            .as_str()
            .is_some_and(|f| f.contains("baton init <client>"))),
        "{report}"
    );
}

/// baton installed as a Claude Code plugin, with the files Claude Code 2.1.332 writes for
/// `claude plugin marketplace add DIR` and `claude plugin install baton@baton` (captured:
/// `enabledPlugins` in the user's settings, `plugins/installed_plugins.json`, the installed
/// copy under `plugins/cache/`).
fn claude_plugin_installed(env: &TestEnv) {
    let marketplace = env.home().join("marketplace");
    env.run(
        None,
        &at(0),
        &["init", "claude", "--plugin", &marketplace.to_string_lossy()],
    )
    .assert_code(0);
    let claude = env.home().join(".claude");
    let install = claude.join("plugins/cache/baton/baton/0.1.0");
    std::fs::create_dir_all(install.parent().unwrap()).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(marketplace.join("baton"))
        .arg(&install)
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::write(
        claude.join("settings.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "extraKnownMarketplaces": {"baton": {"source": {"source": "directory", "path": marketplace}}},
            "enabledPlugins": {"baton@baton": true}
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(
        claude.join("plugins/installed_plugins.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "version": 2,
            "plugins": {"baton@baton": [{
                "scope": "user",
                "installPath": install,
                "version": "0.1.0",
                "installedAt": "2026-12-05T10:32:54.743Z",
                "lastUpdated": "2026-12-05T10:32:54.743Z"
            }]}
        }))
        .unwrap(),
    )
    .unwrap();
}

/// A setup made as a plugin is installed as far as `doctor`, `init` and `supervise` are
/// concerned: doctor passes it (its tool calls find the plugin's own baton), `baton init
/// claude` refuses to install the same hooks a second time, and the printed install command
/// names the marketplace by an absolute path (a relative one reads as a GitHub `owner/repo`).
#[test]
fn a_claude_plugin_setup_is_installed_and_never_doubled() {
    let env = TestEnv::new();
    claude_plugin_installed(&env);
    let (code, report) = doctor(&env, None);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        check(&report, "Claude Code hooks (plugin baton@baton)")["ok"],
        true
    );
    let doubled = env.run(None, &at(0), &["init", "claude"]);
    doubled.assert_code(3);
    assert!(
        doubled.stderr.contains("would run every hook twice"),
        "{}",
        doubled.stderr
    );
    assert!(
        !env.repo.join(".claude/settings.json").exists(),
        "nothing written"
    );
    // supervise takes the plugin's hooks as installed: it goes on to launch the agent (there
    // is no `claude` here, so the launch itself fails), rather than refusing for want of hooks.
    let supervised = env.run(None, &at(0), &["supervise", "--", "claude", "-p", "x"]);
    assert!(
        supervised.stderr.contains("cannot run claude"),
        "{}",
        supervised.stderr
    );

    let relative = env.run(None, &at(0), &["init", "claude", "--plugin", "tools/baton"]);
    relative.assert_code(0);
    let expected = env.repo.canonicalize().unwrap().join("tools/baton");
    assert!(
        relative.stdout.contains(&format!(
            "claude plugin marketplace add {}",
            expected.display()
        )),
        "{}",
        relative.stdout
    );
}

/// The same for the other clients' switches: Gemini CLI's `hooksConfig.enabled: false` and
/// Codex's `[features] hooks = false`.
#[test]
fn gemini_and_codex_hooks_switched_off_are_named() {
    let env = TestEnv::new();
    let bin = baton_dir(&env);
    env.run(None, &at(0), &["init", "gemini"]).assert_code(0);
    let settings = env.repo.join(".gemini/settings.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    v["hooksConfig"] = serde_json::json!({"enabled": false});
    std::fs::write(&settings, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let (_, report) = doctor(&env, Some(&bin));
    let off = check(&report, "Gemini CLI hooks switched on");
    assert_eq!(off["ok"], false, "{report}");
    assert!(
        off["fix"].as_str().unwrap().contains("hooksConfig/enabled"),
        "{report}"
    );

    let env = TestEnv::new();
    let bin = baton_dir(&env);
    let mut init = env.command(None, &at(0));
    init.env("CODEX_HOME", env.home().join(".codex"))
        .args(["init", "codex", "--trust-project"]);
    assert!(init.status().unwrap().success());
    let config = env.home().join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[features]\nhooks = false\n")).unwrap();
    let (_, report) = doctor(&env, Some(&bin));
    let off = check(&report, "Codex hooks switched on");
    assert_eq!(off["ok"], false, "{report}");
    assert!(
        off["found"]
            .as_str()
            .unwrap()
            .contains("features.hooks = false"),
        "{report}"
    );
}
