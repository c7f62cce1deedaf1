//! The guard of shared checkouts (docs/guard.md) over the machine: the registry of the sessions
//! working in a repository (`baton_store::checkouts`), kept by the hooks, and the call a
//! pre-tool hook makes on a shell command. A command that is no git command putting anyone's
//! work at risk is decided from its words alone: no file is read.

use std::path::{Path, PathBuf};

use baton_core::guard::git::{Branch, Effect, GitCall, Read};
use baton_core::guard::shell::{Dir, Simple, commands};
use baton_core::guard::{Checkout, Refusal, Target, decide};
use baton_store::checkouts::{Worktree, normal, register, registered, registered_one, unregister};
use baton_store::{JournalTarget, StateStore, process};
use jiff::Timestamp;

use crate::env::Ctx;
use crate::error::OpError;

/// The environment variable that turns the guard off for one run (`off`, `0`, `false` or `no`).
pub const GUARD_VARIABLE: &str = "BATON_GUARD";

/// How long a record whose process cannot be checked (another host, no pid) counts as live
/// after its last refresh.
const UNCHECKED_LIVE_SECS: i64 = 15 * 60;

/// How often at most a session's record in the registry is written again when nothing in it
/// changed.
pub const REFRESH_SECS: i64 = 60;

/// How deep shells run inside shells (`bash -c "sh -c '…'"`) are read.
const MAX_DEPTH: usize = 4;

/// A git command a shell command line runs, with the directory it starts in (`None`: one the
/// shell decides, such as `cd "$DIR"`).
#[derive(Debug, Clone)]
pub struct Planned {
    pub call: GitCall,
    pub dir: Option<PathBuf>,
}

/// The git commands of `line` that would put someone's work at risk, started from `cwd`:
/// read from the words alone. A line the shell grammar cannot read holds none the guard can
/// name (the client's shell refuses it too).
pub fn planned(line: &str, cwd: &Path) -> Vec<Planned> {
    let mut out = Vec::new();
    collect(line, Some(cwd.to_path_buf()), 0, &mut out);
    out
}

fn collect(line: &str, cwd: Option<PathBuf>, depth: usize, out: &mut Vec<Planned>) {
    let Ok(cmds) = commands(line) else {
        return;
    };
    for cmd in cmds {
        let dir = cwd.as_ref().and_then(|c| dir_of(c, &cmd));
        match baton_core::guard::git::read(&cmd) {
            Read::Harmless => {}
            Read::Git(call) => out.push(Planned { call, dir }),
            Read::Script(script) if depth < MAX_DEPTH => {
                collect(&script, dir, depth + 1, out);
            }
            Read::Script(_) => {}
        }
    }
}

/// The directory a simple command starts in: `cwd` after the `cd`s before it.
fn dir_of(cwd: &Path, cmd: &Simple) -> Option<PathBuf> {
    let mut dir = cwd.to_path_buf();
    for step in &cmd.dirs {
        match step {
            Dir::To(to) => dir = dir.join(expand_home(to)?),
            Dir::Unknown => return None,
        }
    }
    Some(dir)
}

/// `~` and `~/…` as the shell expands them; another user's `~name` is not followed.
fn expand_home(path: &str) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        None => Some(PathBuf::from(path)),
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(rest.trim_start_matches('/')))
        }
        Some(_) => None,
    }
}

/// Where a planned call works: its worktree (after `env -C`, `-C`, `--git-dir` and
/// `--work-tree`).
fn worktree_of(p: &Planned) -> Option<(Worktree, PathBuf)> {
    let mut dir = p.dir.clone()?;
    let at = &p.call.location;
    if let Some(d) = &at.env_dir {
        dir = dir.join(expand_home(d)?);
    }
    for d in &at.dirs {
        dir = dir.join(expand_home(d)?);
    }
    let mut tree = match &at.git_dir {
        Some(git_dir) => {
            let git_dir = normal(&dir.join(expand_home(git_dir)?));
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(text) => normal(&git_dir.join(text.trim())),
                Err(_) => git_dir.clone(),
            };
            Worktree {
                root: normal(&dir),
                git_dir,
                common_dir: common,
            }
        }
        None => Worktree::of(&dir)?,
    };
    if let Some(work_tree) = &at.work_tree {
        tree.root = normal(&dir.join(expand_home(work_tree)?));
    }
    Some((tree, dir))
}

/// Whether a registered session still runs: its client process, where it names one on this
/// machine and boot; else a refresh within the last 15 minutes.
pub fn is_live(c: &Checkout, now: Timestamp) -> bool {
    let here = c.host == process::host() && c.boot_id == process::boot_id();
    match (c.pid, c.pid_start) {
        (Some(pid), Some(start)) if here => process::is_alive(pid, start),
        _ => baton_core::time::parse_ts(Some(&c.refreshed))
            .is_some_and(|at| now.duration_since(at).as_secs() < UNCHECKED_LIVE_SECS),
    }
}

/// The guard's settings: on unless `[guard] enabled = false` in `.baton.toml`, or
/// `BATON_GUARD=off` for one run.
pub fn enabled(ctx: &Ctx, root: &Path) -> Result<bool, OpError> {
    if ctx.settings.guard_off {
        return Ok(false);
    }
    let Some(table) = crate::env::project_table(root, "guard")? else {
        return Ok(true);
    };
    match table.get("enabled") {
        None => Ok(true),
        Some(v) => v.as_bool().ok_or_else(|| {
            OpError::usage(format!(
                "{}: [guard] `enabled` is not true or false",
                crate::env::PROJECT_SETTINGS
            ))
            .hint("write it as `[guard]` with `enabled = false`")
        }),
    }
}

/// Who is about to run a command.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    pub client: &'a str,
    pub session: &'a str,
}

/// What the guard decided on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Pass,
    /// Refused, with the reason the client shows the model.
    Refuse {
        refusal: Box<Refusal>,
        reason: String,
    },
}

/// The call at a pre-tool hook on the git commands a shell command line plans (`planned`), run
/// by `caller`: the registry is read only for these. A refusal, a refused command let through
/// once (`allow`) and a guard turned off for a command it would refuse are journaled
/// (`journal`, which opens the store only then).
pub fn at_tool(
    ctx: &Ctx,
    planned: &[Planned],
    caller: Caller,
    journal: &mut dyn FnMut(serde_json::Value),
) -> Result<Call, OpError> {
    for p in planned {
        let Some((tree, dir)) = worktree_of(p) else {
            continue;
        };
        let others: Vec<Checkout> = registered(&tree)
            .into_iter()
            .filter(|c| !(c.client == caller.client && c.session == caller.session))
            .filter(|c| {
                let live = is_live(c, ctx.now);
                if !live {
                    // A dead session's record never blocks, and goes.
                    unregister(&tree, &c.client, &c.session);
                }
                live
            })
            .collect();
        if others.is_empty() {
            continue;
        }
        let targets = targets(&p.call, &tree, &dir);
        let Some(refusal) = decide(&targets, &others) else {
            continue;
        };
        let event = |name: &str| {
            serde_json::json!({
                "ts": baton_core::time::format_ts_ms(ctx.now),
                "event": name,
                "session": caller.session,
                "client": caller.client,
                "what": p.call.what,
                "rule": refusal.rule.id(),
                "other": refusal.other.session,
                "worktree": tree.root.to_string_lossy(),
            })
        };
        if !enabled(ctx, &tree.root)? {
            journal(event("guard-off"));
            continue;
        }
        if take_allowance(&tree, caller.session) {
            journal(event("allowed"));
            continue;
        }
        journal(event("refused"));
        let reason = baton_core::guard::reason(&refusal, caller.session, ctx.now);
        return Ok(Call::Refuse {
            refusal: Box::new(refusal),
            reason,
        });
    }
    Ok(Call::Pass)
}

/// What a call's effects touch, resolved from where it runs.
fn targets(call: &GitCall, tree: &Worktree, dir: &Path) -> Vec<Target> {
    let root = tree.root.to_string_lossy().into_owned();
    call.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Tree => Some(Target::Tree(root.clone())),
            Effect::Branch(Branch::Named(name)) => Some(Target::Branch(name.clone())),
            Effect::Branch(Branch::Current) => tree.head().0.map(Target::Branch),
            Effect::SharedStash => Some(Target::Stash),
            Effect::RemovesWorktree(path) => Some(Target::Worktree(
                normal(&dir.join(expand_home(path)?))
                    .to_string_lossy()
                    .into_owned(),
            )),
        })
        .collect()
}

fn allowance(tree: &Worktree, session: &str) -> PathBuf {
    tree.registry().join(format!(
        "allow-{}.once",
        baton_store::sessions::file_safe(session)
    ))
}

/// Takes the one refused command a person allowed `session`, if they did.
fn take_allowance(tree: &Worktree, session: &str) -> bool {
    std::fs::remove_file(allowance(tree, session)).is_ok()
}

/// Lets `session`'s next refused command in the repository of `dir` through, once (`baton
/// guard allow`), journaled.
pub fn allow(
    ctx: &Ctx,
    dir: &Path,
    session: &str,
    store: &dyn StateStore,
) -> Result<PathBuf, OpError> {
    let tree = Worktree::of(dir).ok_or_else(|| {
        OpError::usage(format!("{} is not in a git repository", dir.display()))
            .hint("run it in the checkout the session works in")
    })?;
    let path = allowance(&tree, session);
    let registry = tree.registry();
    if !baton_store::layout::check_real_dir(&registry)? {
        baton_store::layout::make_dir(&registry)?;
    }
    baton_store::atomic::replace_hint(&path, baton_core::time::format_ts(ctx.now).as_bytes())?;
    let event = serde_json::json!({
        "ts": baton_core::time::format_ts_ms(ctx.now),
        "event": "allow",
        "session": session,
        "worktree": tree.root.to_string_lossy(),
    });
    store.append_journal(JournalTarget::Guard, &event)?;
    Ok(path)
}

/// Records `checkout`'s session in the registry of the repository of `dir`, with the worktree,
/// branch and index found there (a hint: the next refresh writes it again). `owned: None`
/// keeps what the record said the session owns. Written only when something in it changed, or
/// its last refresh is older than `refresh_secs`: one small read otherwise.
pub fn keep_registered(
    dir: &Path,
    mut checkout: Checkout,
    owned: Option<Vec<String>>,
    now: Timestamp,
    refresh_secs: i64,
) -> Result<(), OpError> {
    let Some(tree) = Worktree::of(dir) else {
        return Ok(());
    };
    let (branch, head) = tree.head();
    checkout.worktree = tree.root.to_string_lossy().into_owned();
    checkout.branch = branch;
    checkout.head = head;
    checkout.index = tree.index().to_string_lossy().into_owned();
    let before = registered_one(&tree, &checkout.client, &checkout.session);
    checkout.owned = match (owned, &before) {
        (Some(owned), _) => owned,
        (None, Some(before)) => before.owned.clone(),
        (None, None) => Vec::new(),
    };
    if let Some(before) = before {
        let fresh = baton_core::time::parse_ts(Some(&before.refreshed))
            .is_some_and(|at| now.duration_since(at).as_secs() < refresh_secs);
        let same = Checkout {
            refreshed: checkout.refreshed.clone(),
            ..before
        } == checkout;
        if same && fresh {
            return Ok(());
        }
    }
    Ok(register(&tree, &checkout)?)
}

/// The live sessions registered in the repository of `dir`, by worktree and session (a dead
/// one's record goes).
pub fn live_checkouts(dir: &Path, now: Timestamp) -> Vec<Checkout> {
    let Some(tree) = Worktree::of(dir) else {
        return Vec::new();
    };
    let mut live: Vec<Checkout> = registered(&tree)
        .into_iter()
        .filter(|c| {
            let alive = is_live(c, now);
            if !alive {
                unregister(&tree, &c.client, &c.session);
            }
            alive
        })
        .collect();
    live.sort_by(|a, b| (&a.worktree, &a.session).cmp(&(&b.worktree, &b.session)));
    live
}

/// The marker line of baton's `reference-transaction` hook.
const BACKSTOP_MARK: &str = "# baton: the guard of shared checkouts";

/// Whether a hook's text is baton's backstop.
pub fn is_backstop(text: &str) -> bool {
    text.lines()
        .nth(1)
        .is_some_and(|l| l.starts_with(BACKSTOP_MARK))
}

/// baton's `reference-transaction` hook: the hook that was in place runs first (kept beside
/// it as `reference-transaction.before-baton`), then, for a prepared transaction, `baton guard
/// ref-update`, whose refusal (exit 1) aborts it. With no `baton` on PATH it does nothing.
pub fn backstop_script() -> String {
    format!(
        r#"#!/bin/sh
{BACKSTOP_MARK} (docs/guard.md): an agent session's ref update
# that would move another live session's work is refused; a person's never is. Written by
# `baton init`; `baton init <client> --remove` takes it out and puts back the hook it ran.
input=$(cat)
if [ -x "$0.before-baton" ]; then
  printf '%s\n' "$input" | "$0.before-baton" "$@" || exit $?
fi
[ "$1" = prepared ] || exit 0
command -v baton >/dev/null 2>&1 || exit 0
printf '%s\n' "$input" | baton guard ref-update "$1"
"#
    )
}

/// Where git runs the repository's hooks from (`git rev-parse --git-path hooks`, which follows
/// `core.hooksPath`), from `root`; with no git to ask, the common directory's `hooks`.
pub fn hooks_dir(root: &Path) -> Option<PathBuf> {
    let asked = std::process::Command::new("git")
        .args(["rev-parse", "--git-path", "hooks"])
        .current_dir(root)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output();
    let out = match asked {
        Ok(out) if out.status.success() => out,
        Ok(_) => return None,
        Err(_) => return Worktree::of(root).map(|t| t.common_dir.join("hooks")),
    };
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Some(if path.is_absolute() {
        path
    } else {
        root.join(path)
    })
}

/// The backstop's call on a transaction git prepared (`reference-transaction prepared`, its
/// lines `input`), run in `dir`: the reason an agent session's update is refused, or `None`.
/// A person (no agent session, no agent among the process's ancestors) is never refused.
pub fn at_ref_update(
    ctx: &Ctx,
    dir: &Path,
    input: &str,
    journal: &mut dyn FnMut(serde_json::Value),
) -> Result<Option<String>, OpError> {
    use baton_core::guard::backstop::{Facts, decide_refs, updates};
    let updates = updates(input);
    let held =
        |name: &str| name == "HEAD" || name == "refs/stash" || name.starts_with("refs/heads/");
    if !updates.iter().any(|u| held(&u.name)) {
        return Ok(None);
    }
    let me = ctx.session();
    let agent = process::agent_ancestor_named();
    if me.is_none() && agent.is_none() {
        return Ok(None);
    }
    let Some(tree) = Worktree::of(dir) else {
        return Ok(None);
    };
    let others: Vec<Checkout> = registered(&tree)
        .into_iter()
        .filter(|c| Some(c.session.as_str()) != me && is_live(c, ctx.now))
        .collect();
    if others.is_empty() {
        return Ok(None);
    }
    let root = tree.root.to_string_lossy().into_owned();
    let (branch, _) = tree.head();
    let fast_forward = |old: &str, new: &str| {
        std::process::Command::new("git")
            .args(["merge-base", "--is-ancestor", old, new])
            .current_dir(&tree.root)
            .status()
            .is_ok_and(|s| s.success())
    };
    let stash_log =
        std::fs::read_to_string(tree.common_dir.join("logs/refs/stash")).unwrap_or_default();
    let stash_entry = |id: &str| stash_log.lines().any(|l| l.split(' ').nth(1) == Some(id));
    let current = |name: &str| {
        let out = std::process::Command::new("git")
            .args(["rev-parse", "--verify", "--quiet", name])
            .current_dir(&tree.root)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let facts = Facts {
        worktree: &root,
        branch: branch.as_deref(),
        fast_forward: &fast_forward,
        stash_entry: &stash_entry,
        current: &current,
    };
    let Some(refusal) = decide_refs(&updates, &facts, &others) else {
        return Ok(None);
    };
    let session = me.map(str::to_string).unwrap_or_default();
    let event = |name: &str| {
        serde_json::json!({
            "ts": baton_core::time::format_ts_ms(ctx.now),
            "event": name,
            "session": session,
            "client": agent.map(|(_, c)| c.as_str()),
            "what": "reference-transaction",
            "rule": refusal.rule.id(),
            "other": refusal.other.session,
            "worktree": root,
        })
    };
    if !enabled(ctx, &tree.root)? {
        journal(event("guard-off"));
        return Ok(None);
    }
    if !session.is_empty() && take_allowance(&tree, &session) {
        journal(event("allowed"));
        return Ok(None);
    }
    journal(event("refused"));
    Ok(Some(baton_core::guard::reason(
        &refusal,
        if session.is_empty() {
            "<session>"
        } else {
            &session
        },
        ctx.now,
    )))
}

/// Removes the session from the registry of the repository of `dir` (its session ended).
pub fn forget(dir: &Path, client: &str, session: &str) {
    if let Some(tree) = Worktree::of(dir) {
        unregister(&tree, client, session);
    }
}
