//! `baton init`: hooks merged into each client's settings without losing the user's own,
//! idempotently; `--remove` gives back the bytes; Codex's trust entries hash as Codex does.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{Run, T0, TestEnv, to_run};

/// A settings file as the clients write it (2-space JSON) with the user's own hook for an
/// event baton also uses, a hook for one it does not, and other keys.
const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [
      {
        "matcher": "",
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done",
            "timeout": 5
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./check.sh"
          }
        ]
      }
    ]
  },
  "permissions": {
    "allow": [
      "Bash(git status)"
    ]
  }
}
"#;

const CODEX_CONFIG: &str = "model = \"o3\"\n\n[tui]\ntheme = \"dark\" # mine\n";

fn init(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command(None, T0);
    cmd.env("CODEX_HOME", env.home().join(".codex"))
        .arg("init")
        .args(args);
    to_run(cmd.output().unwrap())
}

fn settings_path(env: &TestEnv, client: &str) -> PathBuf {
    env.repo.join(match client {
        "claude" => ".claude/settings.json",
        "codex" => ".codex/hooks.json",
        _ => ".gemini/settings.json",
    })
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Every file `init` may touch, with its bytes.
fn touched(env: &TestEnv) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    [
        env.repo.join(".claude/settings.json"),
        env.repo.join(".claude/skills/baton/SKILL.md"),
        env.repo.join(".codex/hooks.json"),
        env.repo.join("AGENTS.md"),
        env.repo.join(".gemini/settings.json"),
        env.repo.join("GEMINI.md"),
        env.home().join(".codex/config.toml"),
    ]
    .into_iter()
    .map(|p| {
        let bytes = read(&p);
        (p, bytes)
    })
    .collect()
}

fn with_user_files(client: &str) -> TestEnv {
    let env = TestEnv::new();
    std::fs::create_dir_all(settings_path(&env, client).parent().unwrap()).unwrap();
    std::fs::write(settings_path(&env, client), USER_SETTINGS).unwrap();
    env.write("AGENTS.md", "# Agents\n\nRun the tests.\n");
    env.write("GEMINI.md", "# Gemini\n");
    std::fs::create_dir_all(env.home().join(".codex")).unwrap();
    std::fs::write(env.home().join(".codex/config.toml"), CODEX_CONFIG).unwrap();
    env
}

#[test]
fn init_keeps_the_users_hooks_is_idempotent_and_remove_gives_back_the_bytes() {
    let events = [
        ("claude", "Stop", 10),
        ("codex", "Stop", 10),
        ("gemini", "AfterAgent", 10_000),
    ];
    for (client, stop_event, stop_timeout) in events {
        let env = with_user_files(client);
        let original = touched(&env);
        init(&env, &[client]).assert_code(0);
        let path = settings_path(&env, client);
        let value: Value = serde_json::from_slice(&read(&path).unwrap()).unwrap();
        assert_eq!(value["model"], "opus", "{client}");
        assert_eq!(value["permissions"]["allow"][0], "Bash(git status)");
        assert_eq!(value["hooks"]["PreToolUse"][0]["matcher"], "Bash");
        assert_eq!(
            value["hooks"]["Stop"][0]["hooks"][0]["command"],
            "notify-send done"
        );
        let ours = &value["hooks"][stop_event];
        let ours = &ours[ours.as_array().unwrap().len() - 1]["hooks"][0];
        let command = ours["command"].as_str().unwrap();
        // A project's settings name no path of this machine.
        assert_eq!(command, format!("baton hook {client} {stop_event}"));
        assert_eq!(ours["timeout"], stop_timeout);

        let once = touched(&env);
        let again = init(&env, &[client]);
        again.assert_code(0);
        assert_eq!(again.stdout.trim(), "nothing to change");
        assert_eq!(
            touched(&env),
            once,
            "{client}: a second run changes no byte"
        );

        init(&env, &[client, "--remove"]).assert_code(0);
        assert_eq!(
            touched(&env),
            original,
            "{client}: --remove restores every byte"
        );
        assert!(!env.repo.join(".claude/skills").exists());
    }
}

#[test]
fn init_in_a_fresh_project_creates_the_files_and_remove_deletes_them() {
    for client in ["claude", "codex", "gemini"] {
        let env = TestEnv::new();
        let run = init(&env, &["--json", client]);
        run.assert_code(0);
        let out = run.json();
        assert_eq!(out["changed"], true);
        assert!(
            out["files"]
                .as_array()
                .unwrap()
                .iter()
                .all(|f| f["action"] == "created")
        );
        init(&env, &[client, "--remove"]).assert_code(0);
        assert!(
            touched(&env).iter().all(|(_, bytes)| bytes.is_none()),
            "{client}"
        );
        for dir in [".claude", ".codex", ".gemini"] {
            assert!(!env.repo.join(dir).exists(), "{client}: {dir} left behind");
        }
    }
}

#[test]
fn the_skill_and_the_marked_blocks_tell_the_agent_when_to_call_baton() {
    let env = with_user_files("codex");
    init(&env, &["claude"]).assert_code(0);
    init(&env, &["codex"]).assert_code(0);
    init(&env, &["gemini"]).assert_code(0);
    let skill = std::fs::read_to_string(env.repo.join(".claude/skills/baton/SKILL.md")).unwrap();
    assert!(
        skill.starts_with("---\nname: baton\ndescription: "),
        "{skill}"
    );
    for text in [
        skill,
        std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap(),
        std::fs::read_to_string(env.repo.join("GEMINI.md")).unwrap(),
    ] {
        assert!(text.contains("baton resume"), "{text}");
        assert!(text.contains("baton loop set"), "{text}");
        assert!(text.contains("baton pause"), "{text}");
    }
    let agents = std::fs::read_to_string(env.repo.join("AGENTS.md")).unwrap();
    assert!(agents.starts_with("# Agents\n\nRun the tests.\n\n<!-- baton:begin -->\n"));
    assert_eq!(agents.matches("<!-- baton:begin -->").count(), 1);
}

#[test]
fn dry_run_prints_a_diff_and_changes_nothing() {
    for client in ["claude", "codex", "gemini"] {
        let env = with_user_files(client);
        let before = touched(&env);
        let run = init(&env, &[client, "--dry-run"]);
        run.assert_code(0);
        assert_eq!(touched(&env), before, "{client}");
        let name = settings_path(&env, client)
            .strip_prefix(&env.repo)
            .unwrap()
            .display()
            .to_string();
        assert!(
            run.stdout
                .contains(&format!("--- a/{name}\n+++ b/{name}\n@@ ")),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("+            \"command\": "));
        assert!(run.stdout.contains(" hook "));
        // And after the real run, a dry run has nothing to show.
        init(&env, &[client]).assert_code(0);
        let run = init(&env, &[client, "--dry-run"]);
        assert_eq!(run.stdout.trim(), "nothing to change");
    }
}

#[test]
fn invalid_json_is_refused_and_nothing_changes() {
    for client in ["claude", "codex", "gemini"] {
        let env = TestEnv::new();
        let path = settings_path(&env, client);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\n  \"hooks\": {\n").unwrap();
        let before = touched(&env);
        let run = init(&env, &[client]);
        run.assert_code(2);
        assert!(
            run.stderr.contains(&path.display().to_string()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("is not valid JSON"), "{}", run.stderr);
        assert!(run.stderr.contains("hint: fix the file"), "{}", run.stderr);
        assert_eq!(touched(&env), before, "{client}");
    }
}

/// Codex's trust hash, computed here from the recipe: SHA-256 of the handler's group as
/// compact JSON with sorted keys. The same recipe made Codex 0.171.0 run the hooks.
fn expected_hash(event_name: &str, command: &str, timeout: u64) -> String {
    let canonical = format!(
        r#"{{"event_name":"{event_name}","hooks":[{{"async":false,"command":{},"timeout":{timeout},"type":"command"}}]}}"#,
        serde_json::to_string(command).unwrap()
    );
    let hex: String = Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[test]
fn codex_trust_entries_carry_the_hash_codex_computes() {
    let env = with_user_files("codex");
    let run = init(&env, &["codex"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("`baton init codex --trust-project`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("~/.profile"), "{}", run.stderr);
    let hooks: Value =
        serde_json::from_slice(&read(&settings_path(&env, "codex")).unwrap()).unwrap();
    let config = std::fs::read_to_string(env.home().join(".codex/config.toml")).unwrap();
    assert!(config.starts_with(CODEX_CONFIG), "{config}");
    let hooks_file = env.repo.canonicalize().unwrap().join(".codex/hooks.json");
    for (event, snake, group, timeout) in [
        ("SessionStart", "session_start", 0, 10),
        ("Stop", "stop", 1, 10),
        ("SessionEnd", "session_end", 0, 3),
    ] {
        let command = hooks["hooks"][event][group]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        let key = format!("{}:{snake}:{group}:0", hooks_file.display());
        let entry = format!(
            "[hooks.state.\"{key}\"]\ntrusted_hash = \"{}\"\n",
            expected_hash(snake, command, timeout)
        );
        assert!(config.contains(&entry), "{entry}\nnot in\n{config}");
    }
    // The hash of a known handler, spelled out once.
    assert_eq!(
        expected_hash("session_start", "baton hook codex SessionStart", 10),
        "sha256:b996c0643749c78acc9e3d3bf0f597d9f6c112ab3ffa805a3a0f08df9da6a7f3"
    );

    let run = init(&env, &["codex", "--trust-project"]);
    run.assert_code(0);
    assert!(!run.stderr.contains("--trust-project"), "{}", run.stderr);
    let config = std::fs::read_to_string(env.home().join(".codex/config.toml")).unwrap();
    let project = format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        env.repo.canonicalize().unwrap().display()
    );
    assert!(config.contains(&project), "{config}");

    init(&env, &["codex", "--remove"]).assert_code(0);
    let config = std::fs::read_to_string(env.home().join(".codex/config.toml")).unwrap();
    assert!(!config.contains("hooks.state"), "{config}");
    assert!(config.contains(&project), "the user's project trust stays");
}

#[test]
fn user_installs_write_under_home() {
    let env = TestEnv::new();
    for client in ["claude", "codex", "gemini"] {
        init(&env, &[client, "--user"]).assert_code(0);
    }
    let home = env.home();
    for path in [
        ".claude/settings.json",
        ".claude/skills/baton/SKILL.md",
        ".codex/hooks.json",
        ".codex/AGENTS.md",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".gemini/GEMINI.md",
    ] {
        assert!(home.join(path).is_file(), "{path} missing");
    }
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    let key = format!(
        "{}:session_start:0:0",
        home.canonicalize()
            .unwrap()
            .join(".codex/hooks.json")
            .display()
    );
    assert!(config.contains(&key), "{config}");
    assert!(!env.repo.join(".claude").exists());
    for client in ["claude", "codex", "gemini"] {
        init(&env, &[client, "--user", "--remove"]).assert_code(0);
    }
    assert!(!home.join(".claude/settings.json").exists());
    assert!(!home.join(".codex/config.toml").exists());
    assert!(!home.join(".gemini/GEMINI.md").exists());
}

#[test]
fn the_hooks_call_baton_by_name_when_it_is_the_one_on_path() {
    let env = TestEnv::new();
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_baton"), bin.join("baton")).unwrap();
    let mut cmd = env.command(None, T0);
    cmd.env("PATH", &bin).args(["init", "claude"]);
    let run = to_run(cmd.output().unwrap());
    run.assert_code(0);
    assert!(
        !run.stderr.contains("not this executable"),
        "{}",
        run.stderr
    );
    let value: Value =
        serde_json::from_slice(&read(&settings_path(&env, "claude")).unwrap()).unwrap();
    assert_eq!(
        value["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "baton hook claude SessionStart"
    );
    // Without this baton on PATH, a project's hooks still call `baton` by name, and the note
    // says how to put it there; the user's own settings name it by its path.
    let run = init(&env, &["claude", "--json"]);
    run.assert_code(0);
    assert_eq!(run.json()["changed"], false, "{}", run.stdout);
    let notes = run.json()["notes"].to_string();
    assert!(notes.contains("/usr/local/bin/baton"), "{notes}");
    let run = init(&env, &["claude", "--user", "--json"]);
    run.assert_code(0);
    let value: Value =
        serde_json::from_slice(&read(&env.home().join(".claude/settings.json")).unwrap()).unwrap();
    let start = value["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(start.len(), 1);
    assert!(
        start[0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .starts_with('/')
    );
    // A run with this baton on PATH replaces that entry instead of adding a second one.
    let mut cmd = env.command(None, T0);
    cmd.env("PATH", &bin).args(["init", "claude", "--user"]);
    to_run(cmd.output().unwrap()).assert_code(0);
    let value: Value =
        serde_json::from_slice(&read(&env.home().join(".claude/settings.json")).unwrap()).unwrap();
    let start = value["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(start.len(), 1);
    assert_eq!(
        start[0]["hooks"][0]["command"],
        "baton hook claude SessionStart"
    );
}

/// `--remove` gives back the very bytes of a file however it was formatted (one line, an empty
/// `hooks` object, no final newline), as long as nobody changed it since `init`; after a change
/// of the user's, it takes out baton's entries alone and keeps that change.
#[test]
fn remove_gives_back_any_formatting_and_keeps_a_later_edit() {
    let originals = [
        r#"{"model": "opus"}"#,
        "{\"hooks\": {}, \"theme\": \"dark\"}\n",
        "{\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"notify-send done\"}]}]},\"model\":\"opus\"}",
    ];
    for client in ["claude", "codex", "gemini"] {
        for original in originals {
            let env = TestEnv::new();
            let path = settings_path(&env, client);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, original).unwrap();
            init(&env, &[client]).assert_code(0);
            assert_ne!(read(&path).unwrap(), original.as_bytes(), "{client}");
            init(&env, &[client]).assert_code(0);
            init(&env, &[client, "--remove"]).assert_code(0);
            assert_eq!(
                String::from_utf8(read(&path).unwrap()).unwrap(),
                original,
                "{client}: {original}"
            );
        }
        // A change of the user's after `init`: baton's entries go, the change stays.
        let env = TestEnv::new();
        let path = settings_path(&env, client);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, originals[0]).unwrap();
        init(&env, &[client]).assert_code(0);
        let edited =
            String::from_utf8(read(&path).unwrap())
                .unwrap()
                .replacen("\"opus\"", "\"sonnet\"", 1);
        std::fs::write(&path, &edited).unwrap();
        init(&env, &[client, "--remove"]).assert_code(0);
        let left: Value = serde_json::from_slice(&read(&path).unwrap()).unwrap();
        assert_eq!(left, serde_json::json!({ "model": "sonnet" }), "{client}");
    }
}

/// A skill file someone changed after `init` is theirs: `--remove` leaves it.
#[test]
fn remove_leaves_a_skill_file_someone_changed() {
    let env = TestEnv::new();
    init(&env, &["claude"]).assert_code(0);
    let skill = env.repo.join(".claude/skills/baton/SKILL.md");
    let mut text = std::fs::read_to_string(&skill).unwrap();
    text.push_str("\n- Our team also runs `make check` before `baton loop set`.\n");
    std::fs::write(&skill, &text).unwrap();
    init(&env, &["claude", "--remove"]).assert_code(0);
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), text);
    assert!(!env.repo.join(".claude/settings.json").exists());
}

/// The files `init` writes into a project are uncommitted changes until committed, and a
/// resume treats a dirty tree with care: `init` says to commit them, and only when it wrote.
#[test]
fn init_says_to_commit_what_it_wrote_into_the_project() {
    let env = TestEnv::new();
    let first = init(&env, &["gemini"]);
    first.assert_code(0);
    assert!(
        first
            .stderr
            .contains("note: commit .gemini/settings.json, GEMINI.md"),
        "{}",
        first.stderr
    );
    let again = init(&env, &["gemini"]);
    assert!(!again.stderr.contains("note: commit"), "{}", again.stderr);
}

#[test]
fn the_ledger_merge_rule_goes_into_gitattributes_and_comes_out_byte_for_byte() {
    let env = TestEnv::new();
    let theirs = "*.png binary\n";
    env.write(".gitattributes", theirs);
    init(&env, &["claude"]).assert_code(0);
    let attrs = std::fs::read_to_string(env.repo.join(".gitattributes")).unwrap();
    assert!(attrs.starts_with(theirs), "{attrs}");
    assert!(attrs.contains("plans/**/STATE.md merge=union"), "{attrs}");
    // git itself reads the rule for a ledger.
    let check = env.git(&["check-attr", "merge", "plans/auth/STATE.md"]);
    assert_eq!(check.trim(), "plans/auth/STATE.md: merge: union");
    // A second client adds nothing more.
    init(&env, &["gemini"]).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(env.repo.join(".gitattributes")).unwrap(),
        attrs
    );
    init(&env, &["claude", "--remove"]).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(env.repo.join(".gitattributes")).unwrap(),
        theirs
    );
    // In a project without one, the file comes and goes with baton.
    let fresh = TestEnv::new();
    init(&fresh, &["codex"]).assert_code(0);
    assert!(fresh.repo.join(".gitattributes").exists());
    init(&fresh, &["codex", "--remove"]).assert_code(0);
    assert!(!fresh.repo.join(".gitattributes").exists());
}
