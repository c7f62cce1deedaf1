use std::path::Path;
use std::process::Command;

use clap::Args;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

use crate::error::CommandError;
use crate::output::Report;
use baton_core::time::format_ts;
use baton_ops::env::Ctx;

/// Walk through a ticket loop interrupted by a rate limit, in a throwaway repository.
///
/// Starts a loop, advances it, interrupts it as a rate limit would, then shows what the next
/// session's `baton resume` says, what accepting it prints, and the gate refusing the old
/// session.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo repository and print where it is.
    #[arg(long)]
    keep: bool,
}

struct Step {
    session: &'static str,
    minutes: i64,
    args: &'static [&'static str],
    says: &'static str,
}

const STEPS: &[Step] = &[
    Step {
        session: "A",
        minutes: 0,
        args: &["loop", "init", "PROJ-1"],
        says: "Session A reaches Phase 6 of ticket PROJ-1 and starts its loop.",
    },
    Step {
        session: "A",
        minutes: 3,
        args: &[
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
        says: "Each phase transition is recorded; the breadcrumb says where the loop is.",
    },
    Step {
        session: "A",
        minutes: 4,
        args: &[
            "loop",
            "interrupt",
            "PROJ-1",
            "--reason",
            "rate_limit",
            "--resume-after",
            "5m",
        ],
        says: "A rate limit ends session A's turn (a hook records it).",
    },
    Step {
        session: "B",
        minutes: 16,
        args: &["resume"],
        says: "12 minutes later a new session B starts; its first call finds the interrupted loop, says why it stopped, and hands B one resume packet.",
    },
    Step {
        session: "B",
        minutes: 16,
        args: &["resume", "accept", "PROJ-1"],
        says: "B accepts: it owns the loop now, with a new owner epoch.",
    },
    Step {
        session: "A",
        minutes: 17,
        args: &[
            "loop", "set", "PROJ-1", "--phase", "qa", "--action", "spawned",
        ],
        says: "Session A comes back and tries to write: the ownership gate refuses it.",
    },
];

pub fn cmd_demo(ctx: &Ctx, args: DemoArgs) -> Result<Report, CommandError> {
    let dir = tempfile::Builder::new()
        .prefix("baton-demo-")
        .tempdir()
        .map_err(|e| {
            CommandError::new(
                crate::error::ExitStatus::Failure,
                format!("cannot create a temporary directory: {e}"),
            )
        })?;
    let repo = dir.path();
    make_repo(repo)?;
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::new(
            crate::error::ExitStatus::Failure,
            format!("cannot find the baton executable: {e}"),
        )
    })?;
    let start: Timestamp = ctx.now;
    let mut text = format!(
        "baton demo: a ticket loop interrupted by a rate limit, in {}\n",
        repo.display()
    );
    let mut steps = Vec::new();
    for step in STEPS {
        let now = start + SignedDuration::from_mins(step.minutes);
        let out = Command::new(&exe)
            .args(step.args)
            .current_dir(repo)
            .env("BATON_SESSION", format!("session-{}", step.session))
            .env("BATON_NOW", format_ts(now))
            .env_remove("BATON_STATE_DIR")
            // The demo's state is its throwaway repository's files, never a shared server's.
            .env_remove("BATON_STORE")
            .env_remove("BATON_PROJECT")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .output()
            .map_err(|e| {
                CommandError::new(
                    crate::error::ExitStatus::Failure,
                    format!("cannot run {}: {e}", exe.display()),
                )
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code().unwrap_or(-1);
        text.push_str(&format!(
            "\n# +{}m, session {}: {}\n$ baton {}\n",
            step.minutes,
            step.session,
            step.says,
            step.args.join(" ")
        ));
        for line in stdout.lines().chain(stderr.lines()) {
            text.push_str(&format!("  {line}\n"));
        }
        if code != 0 {
            text.push_str(&format!("  (exit {code})\n"));
        }
        steps.push(json!({ "session": step.session, "at": format_ts(now), "args": step.args, "exit": code, "stdout": stdout, "stderr": stderr }));
    }
    text.push_str(
        "\nEvery command takes `--json`.\nNext: run `baton init <client>` in your project (claude, codex, gemini, copilot or opencode)\nso that its hooks keep this state for your agent; `baton loop --help` and `baton resume --help` say more.\n",
    );
    let kept = if args.keep {
        let path = dir.keep();
        text.push_str(&format!(
            "The demo repository is kept at {}\n",
            path.display()
        ));
        Some(path.display().to_string())
    } else {
        None
    };
    Ok(Report::ok(json!({ "steps": steps, "kept": kept }), text))
}

/// A repository with one commit on `main`, made without the user's git configuration.
fn make_repo(repo: &Path) -> Result<(), CommandError> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "baton demo")
            .env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
            .env("GIT_COMMITTER_NAME", "baton demo")
            .env("GIT_COMMITTER_EMAIL", "demo@example.invalid")
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run git: {e}")),
        }
        .map_err(|m| {
            CommandError::new(crate::error::ExitStatus::Failure, m).hint("baton needs git on PATH")
        })
    };
    git(&["init", "--quiet", "--initial-branch=main"])?;
    std::fs::write(repo.join("README.md"), "# demo project\n").map_err(|e| {
        CommandError::new(
            crate::error::ExitStatus::Failure,
            format!("cannot write the demo repository: {e}"),
        )
    })?;
    std::fs::write(repo.join(".gitignore"), ".agentic/\n").map_err(|e| {
        CommandError::new(
            crate::error::ExitStatus::Failure,
            format!("cannot write the demo repository: {e}"),
        )
    })?;
    git(&["add", "."])?;
    git(&["commit", "--quiet", "-m", "initial commit"])
}
