//! The guard of a shared checkout (SPEC section 10): the git commands an agent is about to run,
//! read from its command line with a shell's own grammar (`shell`), what each would do to work
//! a session holds (`git`), and the call on them given who else works in the repository.

pub mod backstop;
pub mod git;
pub mod shell;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::text::esc;

/// A session as the repository's registry of checkouts keeps it: who it is, where it works,
/// and how to tell it still runs. Every linked worktree of the repository sees the same
/// registry (it lives in the git common directory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkout {
    pub client: String,
    pub session: String,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The client process, with its start time (a pid alone never proves liveness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_start: Option<u64>,
    /// The root of the worktree it works in.
    pub worktree: String,
    /// The branch checked out there; `None` on a detached HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The index file of that worktree.
    pub index: String,
    /// The work it owns (tickets' loops, runs), by key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<String>,
    /// When its hooks last refreshed this record.
    pub refreshed: String,
}

/// What a command would touch, where the shell resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The files and index of this worktree (its root).
    Tree(String),
    /// This branch.
    Branch(String),
    /// The repository's one stash, its top entry.
    Stash,
    /// This linked worktree, removed (its root).
    Worktree(String),
}

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: crate::Rule,
    pub target: Target,
    /// The live session whose work it would destroy or move.
    pub other: Checkout,
}

/// The first of `targets` another live session holds: a worktree it works in, a branch it has
/// checked out, or (anywhere in the repository) the shared stash. `others` are the repository's
/// live sessions other than the one about to run the command.
pub fn decide(targets: &[Target], others: &[Checkout]) -> Option<Refusal> {
    use crate::Rule;
    targets.iter().find_map(|target| {
        let (rule, other) = match target {
            Target::Tree(root) => (
                Rule::GuardSharedTree,
                others.iter().find(|o| &o.worktree == root),
            ),
            Target::Branch(name) => (
                Rule::GuardHeldBranch,
                others.iter().find(|o| o.branch.as_ref() == Some(name)),
            ),
            Target::Stash => (Rule::GuardSharedStash, others.first()),
            Target::Worktree(root) => (
                Rule::GuardSharedTree,
                others.iter().find(|o| &o.worktree == root),
            ),
        };
        other.map(|other| Refusal {
            rule,
            target: target.clone(),
            other: other.clone(),
        })
    })
}

/// `5ba716a7…`: a session id cut short, as people read it.
fn short(session: &str) -> String {
    let cut = crate::timeline::short_session(session);
    if cut.len() < session.len() {
        format!("{}…", esc(cut))
    } else {
        esc(cut).into_owned()
    }
}

/// How long ago `at` was, as a person reads it (`2 min ago`).
fn ago(at: &str, now: Timestamp) -> String {
    match crate::time::parse_ts(Some(at)) {
        Some(then) => {
            let secs = now.duration_since(then).as_secs().max(0);
            match secs {
                0..=59 => format!("{secs} s ago"),
                60..=3599 => format!("{} min ago", secs / 60),
                _ => format!("{} h ago", secs / 3600),
            }
        }
        None => "at an unknown time".into(),
    }
}

/// The reason the client shows the model: the other session (short id, client, branch, last
/// refresh), what the command would do to its work, the safe way to the same end, and how a
/// person lets it through for `me` (the refused session). It never names the command, so there
/// is nothing to copy and run again.
pub fn reason(refusal: &Refusal, me: &str, now: Timestamp) -> String {
    let o = &refusal.other;
    let who = format!(
        "session {} ({}, {}, last seen {})",
        short(&o.session),
        esc(&o.client),
        match &o.branch {
            Some(b) => format!("on branch {}", esc(b)),
            None => "on a detached HEAD".into(),
        },
        ago(&o.refreshed, now)
    );
    let (harm, instead) = match &refusal.target {
        Target::Tree(root) => (
            format!(
                "it would rewrite the files or the index of the checkout {}, where {who} is working too",
                esc(root)
            ),
            "Keep your own changes with a commit of the files you changed (`git add <your files> && git commit`), or work in a worktree of your own (`git worktree add <dir> -b <new-branch>`); leave the other session's files as they are.",
        ),
        Target::Branch(name) => (
            format!(
                "it would move or delete branch {}, which {who} has checked out in {}",
                esc(name),
                esc(&o.worktree)
            ),
            "Work on a branch of your own (`git switch -c <new-branch>`, or a worktree of your own).",
        ),
        Target::Stash => (
            format!(
                "it would take the top entry of the repository's one stash, which every session shares ({who} works in {})",
                esc(&o.worktree)
            ),
            "Keep work with a commit on a branch of your own instead of a stash; to take back an entry you made, name it (`git stash list` shows them).",
        ),
        Target::Worktree(root) => (
            format!(
                "it would remove the worktree {}, where {who} is working",
                esc(root)
            ),
            "Leave that worktree to its session; remove it once that session has ended.",
        ),
    };
    format!(
        "baton refused this command ({}): {harm}. {instead} If a person wants it done anyway, they run `baton guard allow {}` in a terminal of their own, which lets one refused command of this session through.",
        refusal.rule.id(),
        crate::text::shell_quote(&esc(me))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    fn session(id: &str, worktree: &str, branch: &str) -> Checkout {
        Checkout {
            client: "claude".into(),
            session: id.into(),
            host: "h".into(),
            boot_id: None,
            pid: Some(1),
            pid_start: Some(2),
            worktree: worktree.into(),
            branch: Some(branch.into()),
            head: None,
            index: format!("{worktree}/.git/index"),
            owned: Vec::new(),
            refreshed: "2026-12-05T10:00:00Z".into(),
        }
    }

    #[test]
    fn a_target_another_live_session_holds_is_refused() {
        let a = session("aaaaaaaa-1111-2222-3333-444444444444", "/r", "main");
        let b = session("bbbbbbbb-1111-2222-3333-444444444444", "/r-wt", "feature");
        let others = [a.clone(), b.clone()];
        let refused = |t: Target| decide(&[t], &others).map(|r| (r.rule, r.other.session));
        assert_eq!(
            refused(Target::Tree("/r".into())),
            Some((Rule::GuardSharedTree, a.session.clone()))
        );
        assert_eq!(refused(Target::Tree("/elsewhere".into())), None);
        assert_eq!(
            refused(Target::Branch("feature".into())),
            Some((Rule::GuardHeldBranch, b.session.clone()))
        );
        assert_eq!(refused(Target::Branch("mine".into())), None);
        assert_eq!(
            refused(Target::Stash),
            Some((Rule::GuardSharedStash, a.session.clone()))
        );
        assert_eq!(
            refused(Target::Worktree("/r-wt".into())),
            Some((Rule::GuardSharedTree, b.session.clone()))
        );
        // Alone in the repository: nothing is refused.
        assert_eq!(
            decide(&[Target::Stash, Target::Tree("/r".into())], &[]),
            None
        );
    }

    #[test]
    fn the_reason_names_the_other_session_and_the_safe_way_not_the_command() {
        let a = session("aaaaaaaa-1111-2222-3333-444444444444", "/r", "main");
        let r = decide(&[Target::Tree("/r".into())], &[a]).unwrap();
        let now: Timestamp = "2026-12-05T10:02:30Z".parse().unwrap();
        let text = reason(&r, "me-1", now);
        assert!(
            text.contains("session aaaaaaaa… (claude, on branch main, last seen 2 min ago)"),
            "{text}"
        );
        assert!(text.contains("guard.shared-tree"), "{text}");
        assert!(
            text.contains("git worktree add <dir> -b <new-branch>"),
            "{text}"
        );
        assert!(text.contains("`baton guard allow me-1`"), "{text}");
        assert!(!text.contains("stash"), "{text}");
    }
}
