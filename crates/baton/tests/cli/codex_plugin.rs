//! `baton init codex --plugin DIR`: the marketplace Codex reads, the plugin whose hooks call its
//! own baton, and the trust entries of those hooks in `$CODEX_HOME/config.toml`, keeping the
//! rest of the user's config; a second run changes nothing.

use std::path::Path;

use serde_json::Value;

use crate::common::{Run, T0, TestEnv, to_run};

fn init(env: &TestEnv, args: &[&str]) -> Run {
    let mut cmd = env.command(None, T0);
    cmd.env("CODEX_HOME", env.home().join(".codex"))
        .arg("init")
        .args(args);
    to_run(cmd.output().unwrap())
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn codex_plugin_files_are_written_with_hooks_calling_the_plugins_own_baton() {
    let env = TestEnv::new();
    let dir = env.home().join("market place");
    let config = env.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        "model = \"o3\"\n\n[tui]\ntheme = \"dark\" # mine\n",
    )
    .unwrap();
    let shown = dir.to_string_lossy().into_owned();

    let run = init(&env, &["codex", "--plugin", &shown]);
    run.assert_code(0);
    assert!(run.stdout.contains("as a Codex plugin"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains(&format!("codex plugin marketplace add '{shown}'")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("codex plugin add baton@baton"),
        "{}",
        run.stdout
    );

    let marketplace = json(&dir.join(".agents/plugins/marketplace.json"));
    assert_eq!(marketplace["name"], "baton");
    assert_eq!(marketplace["plugins"][0]["name"], "baton");
    assert_eq!(marketplace["plugins"][0]["source"]["source"], "local");
    assert_eq!(marketplace["plugins"][0]["source"]["path"], "./baton");
    let manifest = json(&dir.join("baton/.codex-plugin/plugin.json"));
    assert_eq!(manifest["name"], "baton");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    let hooks = json(&dir.join("baton/hooks/hooks.json"));
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "SessionEnd",
            "PreCompact",
            "PreToolUse"
        ]
    );
    for (event, groups) in hooks["hooks"].as_object().unwrap() {
        let command = groups[0]["hooks"][0]["command"].as_str().unwrap();
        assert_eq!(
            command,
            format!("\"${{PLUGIN_ROOT}}/bin/baton\" hook codex {event}")
        );
    }
    assert!(dir.join("baton/skills/baton/SKILL.md").is_file());
    let binary = dir.join("baton/bin/baton");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&binary).unwrap().permissions().mode() & 0o111,
        0o111
    );
    assert_eq!(
        std::fs::read(&binary).unwrap(),
        std::fs::read(env!("CARGO_BIN_EXE_baton")).unwrap()
    );
    // Nothing the plugin holds names this machine's paths.
    for rel in [
        ".agents/plugins/marketplace.json",
        "baton/.codex-plugin/plugin.json",
        "baton/hooks/hooks.json",
    ] {
        let text = std::fs::read_to_string(dir.join(rel)).unwrap();
        assert!(!text.contains(&*env.home().to_string_lossy()), "{rel}");
    }
    // No Claude Code files.
    assert!(!dir.join(".claude-plugin").exists());

    // The trust entries, keyed by the installed plugin, beside the user's own config.
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with("model = \"o3\"\n\n[tui]\ntheme = \"dark\" # mine\n"),
        "{text}"
    );
    for event in [
        "session_start",
        "user_prompt_submit",
        "stop",
        "session_end",
        "pre_compact",
    ] {
        assert!(
            text.contains(&format!(
                "[hooks.state.\"baton@baton:hooks/hooks.json:{event}:0:0\"]\ntrusted_hash = \"sha256:"
            )),
            "{event}: {text}"
        );
    }

    let again = init(&env, &["--json", "codex", "--plugin", &shown]);
    again.assert_code(0);
    let v = again.json();
    assert_eq!(v["changed"], false, "{v}");
    assert_eq!(v["client"], "codex");
    assert_eq!(v["command"], "\"${PLUGIN_ROOT}/bin/baton\"");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

#[test]
fn codex_plugin_refuses_a_config_it_cannot_read_and_writes_nothing() {
    let env = TestEnv::new();
    let dir = env.home().join("marketplace");
    let config = env.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "model = \n").unwrap();
    let run = init(&env, &["codex", "--plugin", &dir.to_string_lossy()]);
    run.assert_code(2);
    assert!(run.stderr.contains("is not valid TOML"), "{}", run.stderr);
    assert!(!dir.exists());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "model = \n");
}

#[test]
fn plugin_is_refused_for_a_client_baton_writes_no_plugin_for() {
    let env = TestEnv::new();
    let dir = env.home().join("marketplace");
    let run = init(&env, &["gemini", "--plugin", &dir.to_string_lossy()]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("`--plugin` is for Claude Code and Codex: Gemini CLI has no plugin"),
        "{}",
        run.stderr
    );
    assert!(!dir.exists());
}
