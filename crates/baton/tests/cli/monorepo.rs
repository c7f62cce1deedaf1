//! Hooks find their project, and `init` and `supervise` agree with the clients on where a
//! project's settings are: a hook whose `cwd` is a nested repository the agent moved into acts
//! on the project the client started in (`CLAUDE_PROJECT_DIR`, `GEMINI_PROJECT_DIR`); started in
//! a package of a monorepo, Claude Code and Gemini CLI read that package's settings only, and
//! Codex reads every `.codex/` up to the root (as measured with the real clients: Claude Code
//! 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Run, T0, TestEnv, at, to_run};

fn fixture(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/clients")
        .join(rel);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A repository of its own inside the project (a submodule's checkout, a vendored clone).
fn nested_repo(env: &TestEnv) -> PathBuf {
    let nested = env.repo.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    let out = Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(&nested)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    nested.canonicalize().unwrap()
}

/// `baton hook <client> <event>` with `payload` on stdin and `vars` set, as the client runs it.
fn hook(env: &TestEnv, client: &str, event: &str, payload: &Value, vars: &[(&str, &Path)]) -> Run {
    let vars: Vec<(&str, &std::ffi::OsStr)> = vars
        .iter()
        .map(|(name, dir)| (*name, dir.as_os_str()))
        .collect();
    let bytes = serde_json::to_vec(payload).unwrap();
    crate::hooks::run_hook(env, &["hook", client, event], &bytes, &at(3), &vars)
}

/// `baton <args>` run in `dir`, a directory below the project's root.
fn run_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = env.command(None, T0);
    cmd.current_dir(dir)
        .env("CODEX_HOME", env.home().join(".codex"))
        .args(args);
    to_run(cmd.output().unwrap())
}

#[test]
fn a_failure_hook_run_in_a_nested_repository_interrupts_the_work_of_the_project() {
    let env = TestEnv::new();
    let mut failure = fixture("claude-code-2.1.332/StopFailure.after-429.json");
    let session = failure["session_id"].as_str().unwrap().to_string();
    env.baton(&session, 0, &["loop", "init", "T-1"])
        .assert_code(0);
    // The agent `cd`'d into the nested repository: Claude Code runs the hook there, and says
    // where it started in CLAUDE_PROJECT_DIR.
    let nested = nested_repo(&env);
    failure["cwd"] = nested.to_str().unwrap().into();
    let root = env.repo.canonicalize().unwrap();
    hook(
        &env,
        "claude",
        "StopFailure",
        &failure,
        &[("CLAUDE_PROJECT_DIR", &root)],
    )
    .assert_code(0);
    let state = env.read_loop("T-1");
    assert_eq!(state["status"], "interrupted", "{state}");
    assert_eq!(state["interrupt_reason"], "rate_limit", "{state}");
    // Nothing of baton's went into the nested repository.
    assert!(!nested.join(".agentic").exists());
}

#[test]
fn a_gemini_turn_opened_in_a_nested_repository_is_kept_in_the_project() {
    let env = TestEnv::new();
    let mut prompt = fixture("gemini-0.61.0/BeforeAgent.json");
    let session = prompt["session_id"].as_str().unwrap().to_string();
    let nested = nested_repo(&env);
    prompt["cwd"] = nested.to_str().unwrap().into();
    let root = env.repo.canonicalize().unwrap();
    hook(
        &env,
        "gemini",
        "BeforeAgent",
        &prompt,
        &[("GEMINI_PROJECT_DIR", &root)],
    )
    .assert_code(0);
    let turn = format!("sessions/gemini-{session}.turn");
    assert!(
        env.state_dir().join(&turn).exists(),
        "no {turn} in the project"
    );
    assert!(!nested.join(".agentic").exists());
}

#[test]
fn another_clients_project_variable_is_not_taken_for_its_own() {
    // A Codex hook under an outer Claude Code inherits its CLAUDE_PROJECT_DIR: the payload's
    // `cwd` decides for Codex, which names no project directory of its own.
    let env = TestEnv::new();
    let mut prompt = fixture("codex-0.171.0/UserPromptSubmit.json");
    let session = prompt["session_id"].as_str().unwrap().to_string();
    let root = env.repo.canonicalize().unwrap();
    prompt["cwd"] = root.to_str().unwrap().into();
    let elsewhere = tempfile::tempdir().unwrap();
    hook(
        &env,
        "codex",
        "UserPromptSubmit",
        &prompt,
        &[("CLAUDE_PROJECT_DIR", elsewhere.path())],
    )
    .assert_code(0);
    let turn = format!("sessions/codex-{session}.turn");
    assert!(
        env.state_dir().join(&turn).exists(),
        "no {turn} in the project"
    );
}

#[test]
fn init_in_a_package_installs_where_the_client_started_there_reads() {
    let env = TestEnv::new();
    let package = env.repo.join("packages/app");
    std::fs::create_dir_all(&package).unwrap();
    let out = run_in(&env, &package, &["init", "claude"]);
    out.assert_code(0);
    assert!(package.join(".claude/settings.json").is_file());
    assert!(package.join(".claude/skills/baton/SKILL.md").is_file());
    assert!(!env.repo.join(".claude").exists());
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("only from the directory it is started in") && said.contains("packages/app"),
        "{said}"
    );
    // Gemini CLI reads the directory it starts in too.
    run_in(&env, &package, &["init", "gemini"]).assert_code(0);
    assert!(package.join(".gemini/settings.json").is_file());
    assert!(!env.repo.join(".gemini").exists());
    // Codex reads every `.codex/` up to the root: the root's reaches every package.
    run_in(&env, &package, &["init", "codex"]).assert_code(0);
    assert!(env.repo.join(".codex/hooks.json").is_file());
    assert!(!package.join(".codex").exists());
    // At the root, nothing changes: the files go where they always went, with no note.
    let env = TestEnv::new();
    let out = run_in(&env, &env.repo.clone(), &["init", "claude"]);
    out.assert_code(0);
    assert!(env.repo.join(".claude/settings.json").is_file());
    assert!(!format!("{}{}", out.stdout, out.stderr).contains("started in"));
}

#[test]
fn supervise_in_a_package_refuses_hooks_its_client_would_not_read() {
    let env = TestEnv::new();
    run_in(&env, &env.repo.clone(), &["init", "claude"]).assert_code(0);
    let package = env.repo.join("packages/app");
    std::fs::create_dir_all(&package).unwrap();
    let out = run_in(
        &env,
        &package,
        &["supervise", "--", "claude", "-p", "do the task"],
    );
    out.assert_code(2);
    let root_settings = env
        .repo
        .canonicalize()
        .unwrap()
        .join(".claude/settings.json");
    assert!(
        out.stderr
            .contains(&format!("installed in {}", root_settings.display()))
            && out.stderr.contains("reads only")
            && out.stderr.contains("packages/app/.claude/settings.json"),
        "{}",
        out.stderr
    );
    // Installed in the package, supervise goes on past the check (and then fails to run the
    // agent, which this machine does not have).
    run_in(&env, &package, &["init", "claude"]).assert_code(0);
    let out = run_in(
        &env,
        &package,
        &["supervise", "--", "claude", "-p", "do the task"],
    );
    assert!(!out.stderr.contains("hooks are"), "{}", out.stderr);
}
