//! What a git command does to work another session may hold: the table of SPEC section 10, read
//! from one simple command's words (`shell::Simple`), through the wrappers a command line puts
//! before git (`env`, `command`, `nohup`, `timeout`, `sudo`, a shell's `-c`).

use super::shell::{Simple, Word};

/// What a git command would do to work a session may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Rewrites the working tree or the index it runs in, or moves its HEAD.
    Tree,
    /// Moves (resets, renames, overwrites) or deletes a branch.
    Branch(Branch),
    /// Takes the top entry of the repository's one stash (`stash pop|drop` without a stash
    /// named, `stash clear`).
    SharedStash,
    /// Removes a linked worktree and its files.
    RemovesWorktree(String),
}

/// A branch a command moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Branch {
    Named(String),
    /// The branch checked out where the command runs (`git branch -m <new>`).
    Current,
}

/// Where a git command works, as its own options and variables say, relative to the directory
/// it starts in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// `-C <dir>`, in order (each relative to the one before).
    pub dirs: Vec<String>,
    /// `--git-dir` or `GIT_DIR`.
    pub git_dir: Option<String>,
    /// `--work-tree` or `GIT_WORK_TREE`.
    pub work_tree: Option<String>,
    /// `env -C <dir>`, before all of them.
    pub env_dir: Option<String>,
}

/// A git command that touches work a session may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitCall {
    pub location: Location,
    /// What it is, as a refusal names it without repeating the command: `git stash pop`,
    /// `git reset --hard`, `git branch -D`.
    pub what: String,
    pub effects: Vec<Effect>,
}

/// What one simple command is to the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// Not git, or git that holds no one's work at risk.
    Harmless,
    Git(GitCall),
    /// A shell run on a command line of its own (`bash -c '…'`), to read in turn.
    Script(String),
}

/// The shells whose `-c` runs a command line.
const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "mksh"];

/// Reads one simple command.
pub fn read(cmd: &Simple) -> Read {
    let mut location = Location::default();
    for a in &cmd.assignments {
        assign(&mut location, a);
    }
    let mut words: &[Word] = &cmd.words;
    // Wrappers that run the rest of the line as a command.
    loop {
        let Some(first) = words.first() else {
            return Read::Harmless;
        };
        if first.dynamic {
            return Read::Harmless;
        }
        let name = first.text.rsplit('/').next().unwrap_or_default();
        let rest = &words[1..];
        words = match name {
            "env" => {
                let mut i = 0;
                while let Some(w) = rest.get(i) {
                    if w.is("-i") || w.is("--ignore-environment") || w.is("-0") {
                        i += 1;
                    } else if w.is("-u") || w.is("--unset") {
                        i += 2;
                    } else if w.is("-C") || w.is("--chdir") {
                        location.env_dir = rest.get(i + 1).map(|d| d.text.clone());
                        i += 2;
                    } else if w.text.contains('=') && !w.text.starts_with('=') {
                        assign(&mut location, w);
                        i += 1;
                    } else {
                        break;
                    }
                }
                &rest[i.min(rest.len())..]
            }
            "command" | "builtin" | "exec" | "nohup" | "setsid" | "chronic" => {
                skip_options(rest, &["-a"])
            }
            "time" => skip_options(rest, &[]),
            "nice" | "ionice" => skip_options(rest, &["-n", "-c", "-p", "--adjustment"]),
            "stdbuf" => skip_options(rest, &["-i", "-o", "-e"]),
            "sudo" | "doas" => {
                skip_options(rest, &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t"])
            }
            "timeout" => {
                let after = skip_options(rest, &["-s", "--signal", "-k", "--kill-after"]);
                after.get(1..).unwrap_or_default()
            }
            "xargs" => skip_options(
                rest,
                &[
                    "-a",
                    "-d",
                    "-E",
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "--delimiter",
                    "--max-args",
                ],
            ),
            shell if SHELLS.contains(&shell) => {
                return match rest.iter().position(|w| {
                    !w.dynamic
                        && w.text.starts_with('-')
                        && !w.text.starts_with("--")
                        && w.text.contains('c')
                }) {
                    Some(i) => match rest.get(i + 1) {
                        Some(script) if !script.dynamic => Read::Script(script.text.clone()),
                        _ => Read::Harmless,
                    },
                    None => Read::Harmless,
                };
            }
            "eval" => {
                if rest.iter().any(|w| w.dynamic) {
                    return Read::Harmless;
                }
                let line: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
                return Read::Script(line.join(" "));
            }
            "git" => return git(rest, location),
            _ => return Read::Harmless,
        };
    }
}

fn assign(location: &mut Location, w: &Word) {
    if let Some((name, value)) = w.text.split_once('=') {
        match name {
            "GIT_DIR" => location.git_dir = Some(value.to_string()),
            "GIT_WORK_TREE" => location.work_tree = Some(value.to_string()),
            _ => {}
        }
    }
}

/// The words after a wrapper's options (`with_value` take the next word as theirs).
fn skip_options<'a>(words: &'a [Word], with_value: &[&str]) -> &'a [Word] {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if w.is("--") {
            return &words[i + 1..];
        }
        if !w.text.starts_with('-') || w.text == "-" {
            break;
        }
        i += if with_value.contains(&w.text.as_str()) {
            2
        } else {
            1
        };
    }
    &words[i.min(words.len())..]
}

/// git's own options before its command, then the command.
fn git(words: &[Word], mut location: Location) -> Read {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if w.dynamic {
            return Read::Harmless;
        }
        let t = w.text.as_str();
        let value = || words.get(i + 1).map(|v| v.text.clone());
        match t {
            "-C" => {
                location.dirs.extend(value());
                i += 2;
            }
            "--git-dir" => {
                location.git_dir = value();
                i += 2;
            }
            "--work-tree" => {
                location.work_tree = value();
                i += 2;
            }
            "-c" | "--namespace" | "--config-env" => i += 2,
            _ if t.starts_with("--git-dir=") => {
                location.git_dir = Some(t["--git-dir=".len()..].to_string());
                i += 1;
            }
            _ if t.starts_with("--work-tree=") => {
                location.work_tree = Some(t["--work-tree=".len()..].to_string());
                i += 1;
            }
            _ if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = words.get(i) else {
        return Read::Harmless;
    };
    let args = &words[i + 1..];
    if args.iter().any(|a| a.is("-h") || a.is("--help")) {
        return Read::Harmless;
    }
    let call = |what: &str, effects: Vec<Effect>| {
        if effects.is_empty() {
            Read::Harmless
        } else {
            Read::Git(GitCall {
                location: location.clone(),
                what: what.to_string(),
                effects,
            })
        }
    };
    let a = Args(args);
    match sub.text.as_str() {
        "checkout" => {
            if args.is_empty() {
                return Read::Harmless;
            }
            let mut effects = vec![Effect::Tree];
            if let Some(name) = a.value_of(&["-B"]) {
                effects.push(Effect::Branch(Branch::Named(name)));
            }
            call("git checkout", effects)
        }
        "switch" => {
            if args.is_empty() {
                return Read::Harmless;
            }
            let mut effects = vec![Effect::Tree];
            if let Some(name) = a.value_of(&["-C", "--force-create"]) {
                effects.push(Effect::Branch(Branch::Named(name)));
            }
            call("git switch", effects)
        }
        "restore" => call("git restore", vec![Effect::Tree]),
        "reset" => match ["--hard", "--merge", "--keep"]
            .into_iter()
            .find(|m| a.has(m))
        {
            Some(mode) => call(&format!("git reset {mode}"), vec![Effect::Tree]),
            None => Read::Harmless,
        },
        "clean" => {
            let dry = a.has("-n") || a.has("--dry-run") || a.short('n');
            if (a.has("--force") || a.short('f')) && !dry {
                call("git clean -f", vec![Effect::Tree])
            } else {
                Read::Harmless
            }
        }
        "stash" => stash(args, call),
        "branch" => branch(&a, call),
        "update-ref" => {
            let refs: Vec<&Word> = a.positional();
            match refs.first() {
                Some(r) => match ref_effect(&r.text) {
                    Some(e) => call("git update-ref", vec![e]),
                    None => Read::Harmless,
                },
                // `--stdin`: the refs come later; the reference-transaction hook sees them.
                None => Read::Harmless,
            }
        }
        "symbolic-ref" => {
            let pos = a.positional();
            if pos.len() >= 2 && pos[0].text == "HEAD" {
                call("git symbolic-ref HEAD", vec![Effect::Tree])
            } else {
                Read::Harmless
            }
        }
        "worktree" => {
            let pos = a.positional();
            match pos.as_slice() {
                [verb, path, ..] if verb.text == "remove" => call(
                    "git worktree remove",
                    vec![Effect::RemovesWorktree(path.text.clone())],
                ),
                _ => Read::Harmless,
            }
        }
        _ => Read::Harmless,
    }
}

fn ref_effect(name: &str) -> Option<Effect> {
    if let Some(branch) = name.strip_prefix("refs/heads/") {
        Some(Effect::Branch(Branch::Named(branch.to_string())))
    } else if name == "refs/stash" {
        Some(Effect::SharedStash)
    } else if name == "HEAD" {
        Some(Effect::Tree)
    } else {
        None
    }
}

fn stash(args: &[Word], call: impl Fn(&str, Vec<Effect>) -> Read) -> Read {
    let verb = args.first().filter(|w| !w.text.starts_with('-'));
    let rest = if verb.is_some() { &args[1..] } else { args };
    let named = Args(rest).positional().into_iter().next().is_some();
    match verb.map(|w| w.text.as_str()) {
        // Bare `git stash`, `git stash -u`, `git stash -- <paths>`: a push.
        None | Some("push" | "save") => call("git stash", vec![Effect::Tree]),
        Some("pop") => {
            let mut effects = vec![Effect::Tree];
            if !named {
                effects.push(Effect::SharedStash);
            }
            call("git stash pop", effects)
        }
        Some("apply") => call("git stash apply", vec![Effect::Tree]),
        Some("drop") => {
            if named {
                Read::Harmless
            } else {
                call("git stash drop", vec![Effect::SharedStash])
            }
        }
        Some("clear") => call("git stash clear", vec![Effect::SharedStash]),
        Some("branch") => call("git stash branch", vec![Effect::Tree]),
        _ => Read::Harmless,
    }
}

fn branch(a: &Args, call: impl Fn(&str, Vec<Effect>) -> Read) -> Read {
    let names: Vec<String> = a.positional().iter().map(|w| w.text.clone()).collect();
    let named = |n: &String| Effect::Branch(Branch::Named(n.clone()));
    if a.has("-d") || a.has("-D") || a.has("--delete") || a.short('d') || a.short('D') {
        return call("git branch -d", names.iter().map(named).collect());
    }
    if a.has("-m") || a.has("-M") || a.has("--move") || a.short('m') || a.short('M') {
        let moved = match names.as_slice() {
            [_new] => vec![Effect::Branch(Branch::Current)],
            [old, new, ..] if a.has("-M") || a.short('M') || a.has("--force") => {
                vec![named(old), named(new)]
            }
            [old, ..] => vec![named(old)],
            [] => Vec::new(),
        };
        return call("git branch -m", moved);
    }
    if a.has("-C") || a.short('C') {
        // A forced copy overwrites its target.
        return match names.last() {
            Some(target) => call("git branch -C", vec![named(target)]),
            None => Read::Harmless,
        };
    }
    if a.has("-f") || a.has("--force") || a.short('f') {
        return match names.first() {
            Some(name) => call("git branch -f", vec![named(name)]),
            None => Read::Harmless,
        };
    }
    Read::Harmless
}

/// A git command's arguments.
struct Args<'a>(&'a [Word]);

impl Args<'_> {
    fn has(&self, flag: &str) -> bool {
        self.0
            .iter()
            .take_while(|w| !w.is("--"))
            .any(|w| w.is(flag))
    }

    /// A cluster of short options holding `c` (`-fdx` holds `f`).
    fn short(&self, c: char) -> bool {
        self.0.iter().take_while(|w| !w.is("--")).any(|w| {
            !w.dynamic
                && w.text.len() > 2
                && w.text.starts_with('-')
                && !w.text.starts_with("--")
                && w.text[1..].contains(c)
        })
    }

    /// The value of the first of `flags` given (`-B name`, `-Bname`, `--flag=name`).
    fn value_of(&self, flags: &[&str]) -> Option<String> {
        let words = self.0;
        for (i, w) in words.iter().enumerate() {
            for flag in flags {
                if w.text == *flag {
                    return words.get(i + 1).map(|v| v.text.clone());
                }
                if let Some(v) = w.text.strip_prefix(&format!("{flag}=")) {
                    return Some(v.to_string());
                }
                if !flag.starts_with("--") && w.text.len() > 2 && w.text.starts_with(flag) {
                    return Some(w.text[flag.len()..].to_string());
                }
            }
        }
        None
    }

    /// The arguments that are no option (every one after `--`).
    fn positional(&self) -> Vec<&Word> {
        let mut out = Vec::new();
        let mut after = false;
        for w in self.0 {
            if !after && w.is("--") {
                after = true;
            } else if after || !w.text.starts_with('-') || w.dynamic {
                out.push(w);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::shell::commands;

    /// What the guard reads of each command of `line`: `-` for a harmless one, the call's
    /// name and effects, or the script a shell runs.
    fn seen(line: &str) -> Vec<String> {
        commands(line)
            .unwrap()
            .iter()
            .map(|c| match read(c) {
                Read::Harmless => "-".to_string(),
                Read::Script(s) => format!("script: {s}"),
                Read::Git(call) => {
                    let effects: Vec<String> = call
                        .effects
                        .iter()
                        .map(|e| match e {
                            Effect::Tree => "tree".to_string(),
                            Effect::SharedStash => "stash".to_string(),
                            Effect::Branch(Branch::Named(b)) => format!("branch {b}"),
                            Effect::Branch(Branch::Current) => "branch (current)".to_string(),
                            Effect::RemovesWorktree(p) => format!("worktree {p}"),
                        })
                        .collect();
                    format!("{}: {}", call.what, effects.join(", "))
                }
            })
            .collect()
    }

    fn one(line: &str) -> String {
        let all = seen(line);
        assert_eq!(all.len(), 1, "{line}: {all:?}");
        all[0].clone()
    }

    /// Every row of the table: what rewrites a shared tree, moves a held branch, or takes the
    /// shared stash.
    #[test]
    fn each_row_of_the_table_is_read() {
        for (line, expected) in [
            ("git checkout main", "git checkout: tree"),
            ("git checkout -b x", "git checkout: tree"),
            (
                "git checkout -B main origin/main",
                "git checkout: tree, branch main",
            ),
            ("git checkout -- src/a.rs", "git checkout: tree"),
            ("git checkout HEAD~1 -- .", "git checkout: tree"),
            ("git switch feature", "git switch: tree"),
            ("git switch -C main", "git switch: tree, branch main"),
            ("git reset --hard HEAD~1", "git reset --hard: tree"),
            ("git reset --merge", "git reset --merge: tree"),
            ("git reset --keep HEAD^", "git reset --keep: tree"),
            ("git restore .", "git restore: tree"),
            ("git restore --staged a", "git restore: tree"),
            ("git clean -fd", "git clean -f: tree"),
            ("git clean --force -x", "git clean -f: tree"),
            ("git stash", "git stash: tree"),
            ("git stash -u", "git stash: tree"),
            ("git stash push -m wip -- a", "git stash: tree"),
            ("git stash save wip", "git stash: tree"),
            ("git stash pop", "git stash pop: tree, stash"),
            ("git stash pop --index stash@{2}", "git stash pop: tree"),
            ("git stash apply", "git stash apply: tree"),
            ("git stash drop", "git stash drop: stash"),
            ("git stash clear", "git stash clear: stash"),
            ("git stash branch b", "git stash branch: tree"),
            ("git branch -D a b", "git branch -d: branch a, branch b"),
            ("git branch --delete a", "git branch -d: branch a"),
            ("git branch -m new", "git branch -m: branch (current)"),
            ("git branch -m old new", "git branch -m: branch old"),
            (
                "git branch -M old new",
                "git branch -m: branch old, branch new",
            ),
            ("git branch -f main HEAD~2", "git branch -f: branch main"),
            ("git branch -C a b", "git branch -C: branch b"),
            (
                "git update-ref refs/heads/main HEAD~1",
                "git update-ref: branch main",
            ),
            ("git update-ref -d refs/stash", "git update-ref: stash"),
            (
                "git symbolic-ref HEAD refs/heads/x",
                "git symbolic-ref HEAD: tree",
            ),
            (
                "git worktree remove ../wt",
                "git worktree remove: worktree ../wt",
            ),
        ] {
            assert_eq!(one(line), expected, "{line}");
        }
    }

    #[test]
    fn what_holds_no_work_at_risk_passes() {
        for line in [
            "git status",
            "git checkout",
            "git checkout --help",
            "git switch -h",
            "git reset",
            "git reset --soft HEAD~1",
            "git reset HEAD a.rs",
            "git clean -n -f",
            "git clean -fdn",
            "git clean -d",
            "git stash list",
            "git stash show -p",
            "git stash drop stash@{1}",
            "git branch",
            "git branch new-one",
            "git branch -v",
            "git commit -am x",
            "git log --oneline",
            "git $CMD",
            "$GIT stash",
            "git update-ref --stdin",
            "git worktree list",
            "echo git stash",
            "grep -r 'git reset --hard' .",
        ] {
            assert_eq!(seen(line), ["-"], "{line}");
        }
    }

    #[test]
    fn wrappers_and_gits_own_options_are_seen_through() {
        assert_eq!(one("/usr/bin/git stash"), "git stash: tree");
        assert_eq!(one("env -i A=1 git stash"), "git stash: tree");
        assert_eq!(one("command git stash"), "git stash: tree");
        assert_eq!(one("nohup nice -n 5 git stash"), "git stash: tree");
        assert_eq!(one("timeout -s KILL 10 git stash"), "git stash: tree");
        assert_eq!(one("sudo -u me git stash"), "git stash: tree");
        assert_eq!(
            one("git -c core.x=1 --no-pager -C sub stash"),
            "git stash: tree"
        );
        assert_eq!(one("bash -lc 'git stash pop'"), "script: git stash pop");
        assert_eq!(
            one("sh -c \"cd x && git reset --hard\""),
            "script: cd x && git reset --hard"
        );
        assert_eq!(one("eval git stash"), "script: git stash");
        let cmds = commands("GIT_DIR=/r/.git git -C a -C b --work-tree=/w stash").unwrap();
        let Read::Git(call) = read(&cmds[0]) else {
            panic!()
        };
        assert_eq!(
            call.location,
            Location {
                dirs: vec!["a".into(), "b".into()],
                git_dir: Some("/r/.git".into()),
                work_tree: Some("/w".into()),
                env_dir: None,
            }
        );
        let cmds = commands("env -C /r git stash").unwrap();
        let Read::Git(call) = read(&cmds[0]) else {
            panic!()
        };
        assert_eq!(call.location.env_dir.as_deref(), Some("/r"));
    }
}
