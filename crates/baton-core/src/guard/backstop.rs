//! The backstop under the pre-tool hooks: git's `reference-transaction` hook sees every ref
//! update of a transaction before it is committed (`prepared`), whatever ran git (an alias, a
//! script, a tool call no hook saw). An agent's update that would move another live session's
//! branch or stash is refused there, where refusing it leaves things as they were
//! (docs/guard.md).

use super::{Checkout, Refusal, Target, decide};

/// One line a `reference-transaction` hook reads: `<old> <new> <ref>`; a symbolic ref's value
/// is `ref:<target>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub old: String,
    pub new: String,
    pub name: String,
}

/// The lines of a `reference-transaction` hook's input; a line that is no update is skipped.
pub fn updates(input: &str) -> Vec<RefUpdate> {
    input
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            Some(RefUpdate {
                old: parts.next()?.to_string(),
                new: parts.next()?.to_string(),
                name: parts.next()?.trim_end().to_string(),
            })
        })
        .collect()
}

fn zero(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b == b'0')
}

/// What the backstop knows beyond the updates.
pub struct Facts<'a> {
    /// The worktree git runs in (its root), and the branch checked out there.
    pub worktree: &'a str,
    pub branch: Option<&'a str>,
    /// Whether `old` is an ancestor of `new` (the update only adds commits).
    pub fast_forward: &'a dyn Fn(&str, &str) -> bool,
    /// Whether `id` is an entry of the stash already (the update pops or drops to it).
    pub stash_entry: &'a dyn Fn(&str) -> bool,
    /// A ref's value before the transaction: git reports an update whose caller gave no old
    /// value (`git update-ref <ref> <new>`) with an old value of zeros, as it does a new ref.
    pub current: &'a dyn Fn(&str) -> Option<String>,
}

/// The first update of a transaction that would move work `others` (the live sessions other
/// than the one running git) hold, where refusing it leaves things as they were:
///
/// - a branch deleted or moved other than forward where another session has it checked out
///   and git runs in another worktree (`update-ref`, a script's `branch -f`);
/// - a new stash entry pushed (its ref is written before its files are reset) in a worktree
///   another session works in;
/// - HEAD of a worktree another session works in switched to another branch at the commit HEAD
///   is at (`checkout -b`, `switch -c`): no file changes, so refusing leaves the worktree on
///   the other session's branch.
///
/// Git rewrites the files of the worktree it runs in before it moves that worktree's HEAD and
/// branch (`checkout` of another commit, `reset --hard`), and takes an entry out of the stash's log before it
/// moves the stash's ref (`stash drop`, `pop`), so refusing those updates would leave the files
/// of one commit under the HEAD of another, or an entry hidden: they pass here, and the
/// pre-tool hooks refuse the commands before they run. A branch made, a commit added, anything
/// else (ORIG_HEAD, tags, remotes) passes.
pub fn decide_refs(updates: &[RefUpdate], facts: &Facts, others: &[Checkout]) -> Option<Refusal> {
    let targets: Vec<Target> = updates
        .iter()
        .filter_map(|u| {
            if let Some(branch) = u.name.strip_prefix("refs/heads/") {
                if Some(branch) == facts.branch {
                    return None;
                }
                let old = if zero(&u.old) {
                    (facts.current)(&u.name)?
                } else {
                    u.old.clone()
                };
                let moved = zero(&u.new) || !(facts.fast_forward)(&old, &u.new);
                return moved.then(|| Target::Branch(branch.to_string()));
            }
            if u.name == "HEAD" {
                let to = u.new.strip_prefix("ref:")?.trim();
                let switch = Some(to.trim_start_matches("refs/heads/")) != facts.branch
                    && (facts.current)("HEAD").is_some_and(|at| (facts.current)(to) == Some(at));
                return switch.then(|| Target::Tree(facts.worktree.to_string()));
            }
            if u.name == "refs/stash" {
                let push = !zero(&u.new) && !(facts.stash_entry)(&u.new);
                return push.then(|| Target::Tree(facts.worktree.to_string()));
            }
            None
        })
        .collect();
    decide(&targets, others)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    const Z: &str = "0000000000000000000000000000000000000000";
    const C1: &str = "1111111111111111111111111111111111111111";
    const C2: &str = "2222222222222222222222222222222222222222";

    fn other(worktree: &str, branch: &str) -> Checkout {
        Checkout {
            client: "claude".into(),
            session: "A".into(),
            host: "h".into(),
            boot_id: None,
            pid: None,
            pid_start: None,
            worktree: worktree.into(),
            branch: Some(branch.into()),
            head: None,
            index: String::new(),
            owned: Vec::new(),
            refreshed: String::new(),
        }
    }

    /// The rule each transaction (as git 2.47 reports it) meets, with session A live in `/r`
    /// on `main`, B running git in `at` on `branch`.
    fn rule(input: &str, at: &str, branch: Option<&str>) -> Option<Rule> {
        let facts = Facts {
            worktree: at,
            branch,
            // C1 is the parent of C2.
            fast_forward: &|old, new| old == C1 && new == C2,
            stash_entry: &|id| id == C1,
            current: &|name| match name {
                "refs/heads/main" | "HEAD" | "refs/heads/x" => Some(C2.to_string()),
                "refs/heads/y" => Some(C1.to_string()),
                _ => None,
            },
        };
        decide_refs(&updates(input), &facts, &[other("/r", "main")]).map(|r| r.rule)
    }

    #[test]
    fn each_transaction_meets_its_rule() {
        let shared = |input: &str| rule(input, "/r", Some("main"));
        let own = |input: &str| rule(input, "/wt", Some("feature"));
        // A commit: HEAD through main, main forward.
        let commit = format!("{Z} {C2} HEAD\n{C1} {C2} refs/heads/main\n");
        assert_eq!(shared(&commit), None);
        // `reset --hard HEAD~1` and `checkout` where A works: git has rewritten the files
        // already, so the refs pass (the pre-tool hooks refuse the commands).
        let back = format!("{Z} {C1} HEAD\n{C2} {C1} refs/heads/main\n");
        assert_eq!(shared(&back), None);
        // A new branch at HEAD's commit: nothing rewritten yet. Another branch's commit: the
        // files are rewritten already.
        assert_eq!(
            shared(&format!("{Z} ref:refs/heads/x HEAD\n")),
            Some(Rule::GuardSharedTree)
        );
        assert_eq!(shared(&format!("{Z} ref:refs/heads/y HEAD\n")), None);
        assert_eq!(shared(&format!("{Z} ref:refs/heads/main HEAD\n")), None);
        assert_eq!(own(&format!("{Z} ref:refs/heads/x HEAD\n")), None);
        assert_eq!(shared(&format!("{Z} {C2} refs/heads/x\n")), None);
        // Deleting or moving main, held by A, from another worktree.
        assert_eq!(own(&back), Some(Rule::GuardHeldBranch));
        assert_eq!(
            own(&format!("{C2} {Z} refs/heads/main\n")),
            Some(Rule::GuardHeldBranch)
        );
        assert_eq!(own(&format!("{C1} {C2} refs/heads/main\n")), None);
        assert_eq!(own(&format!("{C2} {C1} refs/heads/feature\n")), None);
        // `update-ref refs/heads/main <commit>` gives no old value: main's is looked up.
        assert_eq!(
            own(&format!("{Z} {C1} refs/heads/main\n")),
            Some(Rule::GuardHeldBranch)
        );
        assert_eq!(own(&format!("{Z} {C2} refs/heads/new\n")), None);
        // The stash: a push, before it resets the files where A works; a pop, a drop or a clear
        // has taken the entry out of the stash's log already.
        assert_eq!(
            shared(&format!("{Z} {C2} refs/stash\n")),
            Some(Rule::GuardSharedTree)
        );
        assert_eq!(
            shared(&format!("{C1} {C2} refs/stash\n")),
            Some(Rule::GuardSharedTree)
        );
        assert_eq!(own(&format!("{Z} {C2} refs/stash\n")), None);
        assert_eq!(own(&format!("{C2} {Z} refs/stash\n")), None);
        assert_eq!(shared(&format!("{C2} {C1} refs/stash\n")), None);
        // Refs no session holds.
        assert_eq!(
            shared(&format!("{Z} {C2} ORIG_HEAD\n{Z} {Z} AUTO_MERGE\n")),
            None
        );
        // Alone in the repository: nothing.
        let facts = Facts {
            worktree: "/wt",
            branch: Some("feature"),
            fast_forward: &|_, _| false,
            stash_entry: &|_| true,
            current: &|_| None,
        };
        assert_eq!(decide_refs(&updates(&back), &facts, &[]), None);
    }
}
