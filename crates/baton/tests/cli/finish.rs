//! What a command-line tool is expected to have: shell completions and a manual page from the
//! command definitions, the commit in `--version`, `--color` and `NO_COLOR`, and progress
//! lines on a terminal only.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Run, T0, TestEnv, to_run};

// `store.rs` has its own copy, private to it.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../../baton-store/tests/support/pg_server.rs"]
mod pg_server;

/// `baton` outside any project, with nothing of the caller's environment but `PATH`.
fn baton(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    to_run(
        Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap(),
    )
}

/// `program`, or `None` (after saying why) where it is not installed; under `CI`, which
/// installs it, its absence fails the test.
fn installed(program: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{program}` is not installed: CI must install the Debian package {package}"
        );
        crate::common::skipped(&format!(
            "`{program}` is not installed (apt-get install {package})"
        ));
    }
    found
}

const ESC: &str = "\x1b[";

// ---------------------------------------------------------------------------------------------
// Completions

/// The self-contained bash script registers a completion for `baton`, and completing
/// `baton re` offers `resume` (a command) and `baton loop s` offers `set` (a command of a
/// group).
#[test]
fn static_bash_completion_registers_baton_and_completes_its_commands() {
    let Some(bash) = installed("bash", "bash") else {
        return;
    };
    let script = baton(&["completions", "bash", "--static"]);
    script.assert_code(0);
    assert!(script.stderr.is_empty(), "{}", script.stderr);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baton.bash");
    std::fs::write(&file, &script.stdout).unwrap();

    let registered = to_run(
        Command::new(&bash)
            .args([
                "--norc",
                "-c",
                r#"source "$1" && complete -p baton"#,
                "bash",
            ])
            .arg(&file)
            .output()
            .unwrap(),
    );
    registered.assert_code(0);
    let line = registered.stdout.trim();
    assert!(
        line.starts_with("complete ") && line.ends_with(" baton") && line.contains("-F _baton"),
        "{line}"
    );

    // What the shell would offer after `baton re<TAB>` and `baton loop s<TAB>`.
    let offered = |words: &str| bash_offers(Command::new(&bash), &file, "_baton", words);
    let top = offered("baton re");
    assert!(top.contains(&"resume".to_string()), "{top:?}");
    assert!(!top.contains(&"loop".to_string()), "{top:?}");
    let group = offered("baton loop s");
    assert!(group.contains(&"set".to_string()), "{group:?}");
    assert!(group.contains(&"show".to_string()), "{group:?}");
}

/// What bash offers after `words` (a trailing space completes a new word), with the script
/// `file` sourced and its completion function `function` called as bash calls it.
fn bash_offers(mut bash: Command, file: &Path, function: &str, words: &str) -> Vec<String> {
    let program = r#"source "$1"
        read -r -a COMP_WORDS <<< "$2"
        [[ "$2" == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="$2"
        COMP_POINT=${#COMP_LINE}
        "$3" baton "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}""#;
    let run = to_run(
        bash.args(["--norc", "-c", program, "bash"])
            .arg(file)
            .arg(words)
            .arg(function)
            .output()
            .unwrap(),
    );
    run.assert_code(0);
    run.stdout
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The bash script asks `baton` at each TAB, so it completes what the project holds: its
/// ticket ids, its run ids and its plan directories, and `log` takes any of them.
#[test]
fn bash_completion_offers_the_projects_tickets_runs_and_plans() {
    let Some(bash) = installed("bash", "bash") else {
        return;
    };
    let env = TestEnv::new();
    env.baton("s1", 0, &["loop", "init", "PROJ-12"])
        .assert_code(0);
    env.baton("s1", 0, &["loop", "init", "PROJ-3"])
        .assert_code(0);
    let run = env.baton("s1", 0, &["run", "new"]);
    run.assert_code(0);
    let run_id = run.stdout.trim().to_string();
    std::fs::create_dir_all(env.repo.join("plans/auth")).unwrap();
    env.baton("s1", 0, &["ledger", "init", "plans/auth"])
        .assert_code(0);
    let script = env.baton("s1", 0, &["completions", "bash"]);
    script.assert_code(0);
    assert!(
        script.stdout.contains("COMPLETE=\"bash\""),
        "{}",
        script.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baton.bash");
    std::fs::write(&file, &script.stdout).unwrap();

    // `baton` on PATH, as an installed one is, with the environment the runs above had.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_baton")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let offered_in = |cwd: &Path, words: &str| {
        let mut cmd = crate::common::like(&env.command(None, T0), &bash);
        cmd.current_dir(cwd).env("PATH", &path);
        bash_offers(cmd, &file, "_clap_complete_baton", words)
    };
    let offered = |words: &str| offered_in(&env.repo, words);
    let tickets = offered("baton loop show ");
    let at = |name: &str| tickets.iter().position(|t| t == name);
    assert!(
        at("PROJ-3").is_some() && at("PROJ-3") < at("PROJ-12"),
        "{tickets:?}"
    );
    assert_eq!(offered("baton resume accept PROJ-1"), ["PROJ-12"]);
    assert!(offered("baton run show ").contains(&run_id));
    assert_eq!(offered("baton ledger derive pl"), ["plans/auth"]);
    let any = offered("baton log ");
    for target in ["batch", run_id.as_str(), "plans/auth", "PROJ-12"] {
        assert!(any.iter().any(|t| t == target), "{target}: {any:?}");
    }
    // Commands still complete, and `-C` names the project the candidates come from.
    assert!(offered("baton re").contains(&"resume".to_string()));
    let words = format!("baton -C {} loop show P", env.repo.display());
    let elsewhere = offered_in(dir.path(), &words);
    assert!(elsewhere.contains(&"PROJ-3".to_string()), "{elsewhere:?}");
    assert!(offered_in(dir.path(), "baton loop show P").is_empty());
}

/// Every other shell gets a script that registers `baton` and asks it at each TAB, or with
/// `--static` one that names the commands; an unknown shell is refused.
#[test]
fn zsh_fish_powershell_and_elvish_scripts_name_the_commands() {
    for (shell, marker, fixed_marker) in [
        ("zsh", "#compdef baton", "#compdef baton"),
        ("fish", "--command baton", "complete -c baton"),
        (
            "powershell",
            "-CommandName baton",
            "Register-ArgumentCompleter",
        ),
        (
            "elvish",
            "edit:completion:arg-completer[baton]",
            "edit:completion:arg-completer[baton]",
        ),
    ] {
        let script = baton(&["completions", shell]);
        script.assert_code(0);
        assert!(script.stdout.contains(marker), "{shell}: no {marker:?}");
        assert!(
            script.stdout.contains("COMPLETE"),
            "{shell}: the script does not ask baton for candidates:\n{}",
            script.stdout
        );
        let script = baton(&["completions", shell, "--static"]);
        script.assert_code(0);
        assert!(
            script.stdout.contains(fixed_marker),
            "{shell}: no {fixed_marker:?}"
        );
        for command in ["loop", "resume", "ledger", "color"] {
            assert!(
                script.stdout.contains(command),
                "{shell}: the script does not name {command}"
            );
        }
    }
    let unknown = baton(&["completions", "tcsh"]);
    unknown.assert_code(2);
    assert!(unknown.stdout.is_empty(), "{}", unknown.stdout);
    assert!(unknown.stderr.contains("powershell"), "{}", unknown.stderr);
}

/// `--help` says where each shell's script goes.
#[test]
fn completions_help_says_how_to_install_each_script() {
    let help = baton(&["completions", "--help"]);
    help.assert_code(0);
    for place in [
        "~/.local/share/bash-completion/completions/baton",
        "_baton",
        "fpath",
        "~/.config/fish/completions/baton.fish",
        "Out-String | Invoke-Expression",
        "$PROFILE",
    ] {
        assert!(
            help.stdout.contains(place),
            "no {place:?}:\n{}",
            help.stdout
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The manual page

/// What `man` renders of the page in `file`, 80 columns wide, with no pager.
fn render_man(man: &Path, file: &Path) -> Run {
    to_run(
        Command::new(man)
            .arg("-l")
            .arg(file)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "")
            .output()
            .unwrap(),
    )
}

/// `baton man` is a page `man` renders: its name, its commands and its options; `--dir`
/// writes one page per command, each one `man` renders too.
#[test]
fn the_man_page_renders_with_man() {
    let Some(man) = installed("man", "man-db") else {
        return;
    };
    let page = baton(&["man"]);
    page.assert_code(0);
    assert!(
        page.stdout.starts_with(".ie"),
        "not roff: {}",
        &page.stdout[..80]
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baton.1");
    std::fs::write(&file, &page.stdout).unwrap();
    let shown = render_man(&man, &file);
    shown.assert_code(0);
    // Without the escapes of bold and underline that some versions keep.
    let text = strip_overstrike(&shown.stdout);
    for expected in [
        "baton(1)",
        "NAME",
        "SYNOPSIS",
        "Durable state for coding-agent runs",
        "resume",
        "supervise",
        "completions",
        "--color <WHEN>",
        "Print exactly one JSON object on stdout",
    ] {
        assert!(text.contains(expected), "no {expected:?} in\n{text}");
    }

    let pages = dir.path().join("man1");
    let written = baton(&["--json", "man", "--dir", pages.to_str().unwrap()]);
    written.assert_code(0);
    let names: Vec<String> = written.json()["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    for name in [
        "baton.1",
        "baton-loop.1",
        "baton-loop-set.1",
        "baton-completions.1",
    ] {
        assert!(names.contains(&name.to_string()), "{names:?}");
        assert!(pages.join(name).is_file(), "{name} is not written");
    }
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    let set = render_man(&man, &pages.join("baton-loop-set.1"));
    set.assert_code(0);
    let set = strip_overstrike(&set.stdout);
    assert!(set.contains("baton-loop-set"), "{set}");
    assert!(set.contains("--phase"), "{set}");
}

/// Text as `man` prints it with `cat` as the pager may be overstruck (`b\bb` for bold,
/// `_\bb` for underline); this keeps the letters.
fn strip_overstrike(text: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in text.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.into_iter().collect::<String>().replace('\u{2010}', "-")
}

// ---------------------------------------------------------------------------------------------
// The version

/// Built in a checkout, `--version` names the commit and its date: `baton 0.1.0 (6e94406
/// 2026-12-01)`, a commit this repository holds.
#[test]
fn version_names_the_commit_it_was_built_from() {
    let run = baton(&["--version"]);
    run.assert_code(0);
    let line = run.stdout.trim_end();
    let rest = line
        .strip_prefix(&format!("baton {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `baton X.Y.Z (<commit> <date>)`: {line:?}"));
    let (commit, date) = rest
        .split_once(' ')
        .unwrap_or_else(|| panic!("no commit date: {line:?}"));
    assert!(
        commit.len() == 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "not seven hex digits: {line:?}"
    );
    assert!(
        date.len() == 10 && date.parse::<jiff::civil::Date>().is_ok(),
        "not a date: {line:?}"
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = Command::new("git")
        .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(
        known.status.success(),
        "{commit} is no commit of this repository"
    );
    // `-V` says the same.
    assert_eq!(baton(&["-V"]).stdout, run.stdout);
}

// ---------------------------------------------------------------------------------------------
// Colour

/// `baton status` colours its verdicts with `--color always`, even into a pipe and with
/// NO_COLOR set, and never otherwise when piped.
#[test]
fn status_is_coloured_only_when_asked_or_on_a_terminal() {
    let env = TestEnv::new();
    env.baton("A", 0, &["loop", "init", "PROJ-1"])
        .assert_code(0);
    let status = |args: &[&str], no_color: Option<&str>| {
        let mut cmd = env.command(Some("A"), &crate::common::at(1));
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let run = to_run(cmd.args(args).output().unwrap());
        run.assert_code(0);
        assert!(run.stdout.contains("PROJ-1"), "{}", run.stdout);
        run.stdout
    };
    let always = status(&["--color", "always", "status"], None);
    assert!(always.contains(ESC), "{always:?}");
    assert!(always.contains("\x1b[0m"), "{always:?}");
    let over_no_color = status(&["--color=always", "status"], Some("1"));
    assert!(over_no_color.contains(ESC), "{over_no_color:?}");
    for (args, no_color) in [
        (&["--color", "never", "status"][..], None),
        (&["status"], None),
        (&["--color", "auto", "status"], None),
        (&["status"], Some("1")),
        (&["--color", "never", "status"], Some("")),
    ] {
        let out = status(args, no_color);
        assert!(
            !out.contains('\x1b'),
            "{args:?} NO_COLOR={no_color:?}: {out:?}"
        );
    }
    // `--json` is never coloured.
    let json = status(&["--json", "--color", "always", "status"], None);
    assert!(!json.contains('\x1b'), "{json:?}");
}

/// clap's help and errors, and baton's own `error:` and `warning:`, follow `--color` too.
#[test]
fn help_and_errors_follow_the_color_choice() {
    let help = |args: &[&str], no_color: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        to_run(cmd.output().unwrap())
    };
    let always = help(&["--color", "always", "--help"], None);
    always.assert_code(0);
    assert!(always.stdout.contains(ESC), "{:?}", always.stdout);
    // After the command too, and over NO_COLOR.
    let late = help(&["loop", "set", "--help", "--color=always"], Some("1"));
    assert!(late.stdout.contains(ESC), "{:?}", late.stdout);
    for (args, no_color) in [
        (&["--color", "never", "--help"][..], None),
        (&["--help"], None),
        (&["--help"], Some("1")),
    ] {
        let run = help(args, no_color);
        run.assert_code(0);
        assert!(run.stdout.contains("Usage:"), "{}", run.stdout);
        assert!(!run.stdout.contains('\x1b'), "{args:?}: {:?}", run.stdout);
    }

    // clap's own errors.
    let bad = help(&["--color", "always", "nosuch"], None);
    bad.assert_code(2);
    assert!(bad.stderr.contains(ESC), "{:?}", bad.stderr);
    let plain = help(&["--color", "never", "nosuch"], None);
    plain.assert_code(2);
    assert!(plain.stderr.starts_with("error: "), "{:?}", plain.stderr);
    // Under `--json` the error is one plain JSON object.
    let json = help(&["--json", "--color", "always", "nosuch"], None);
    json.assert_code(2);
    assert!(!json.stdout.contains('\x1b'), "{:?}", json.stdout);
    assert!(json.stdout.starts_with("{\"error\""), "{:?}", json.stdout);
    let value = help(&["--color", "sometimes", "status"], None);
    value.assert_code(2);
    assert!(value.stderr.contains("always"), "{}", value.stderr);

    // baton's own errors: a loop that does not exist.
    let env = TestEnv::new();
    let missing = |args: &[&str]| {
        let run = env.baton("A", 0, args);
        run.assert_code(2);
        run.stderr
    };
    let red = missing(&["--color", "always", "loop", "show", "NOPE-1"]);
    assert!(red.starts_with("\x1b[1;31merror:\x1b[0m "), "{red:?}");
    for args in [
        &["--color", "never", "loop", "show", "NOPE-1"][..],
        &["loop", "show", "NOPE-1"],
    ] {
        let plain = missing(args);
        assert!(plain.starts_with("error: "), "{plain:?}");
        assert!(!plain.contains('\x1b'), "{plain:?}");
    }
    // `--color` before `hook` is a global option, not the command's name.
    let hook = env.baton("A", 0, &["--color", "never", "hook", "claude", "nosuch"]);
    hook.assert_code(0);
}

// ---------------------------------------------------------------------------------------------
// Progress

/// `program` run on a terminal (`script` gives it one), with `inner`'s environment and
/// directory and `BATON` naming the binary: what the terminal showed, stdout and stderr
/// together.
fn on_a_terminal(inner: &Command, shell_line: &str) -> Option<String> {
    let script = installed("script", "bsdutils")?;
    let mut cmd = crate::common::like(inner, script);
    cmd.env("BATON", env!("CARGO_BIN_EXE_baton"))
        .env("SHELL", "/bin/sh")
        .args(["-qefc", shell_line, "/dev/null"]);
    let run = to_run(cmd.output().unwrap());
    run.assert_code(0);
    Some(run.stdout)
}

/// `baton store import` and `export` show a progress line on a terminal, erased at the end,
/// and print nothing more than before into a pipe.
#[test]
fn store_import_and_export_show_progress_on_a_terminal_only() {
    crate::files_only!("it starts a server of its own");
    let Some(server) =
        pg_server::PgServer::start("store_import_and_export_show_progress_on_a_terminal_only")
    else {
        return;
    };
    let env = TestEnv::new();
    let url = server.url();
    // The state is made in the file store; only `baton store` names the server.
    let command = || {
        let mut cmd = env.command(Some("A"), T0);
        cmd.env("URL", &url);
        cmd
    };
    let run = |args: &[&str]| {
        let mut args = args.to_vec();
        if args[0] == "store" {
            args.extend(["--store", &url]);
        }
        to_run(command().args(args).output().unwrap())
    };
    run(&["store", "migrate"]).assert_code(0);
    for n in 1..=30 {
        run(&["loop", "init", &format!("T-{n}")]).assert_code(0);
    }

    // Into a pipe: the one line on stdout, nothing on stderr.
    let imported = run(&["store", "import", "--project", "piped"]);
    imported.assert_code(0);
    assert!(
        imported.stdout.starts_with("imported 30 state files"),
        "{}",
        imported.stdout
    );
    assert_eq!(imported.stderr, "");

    let Some(shown) = on_a_terminal(
        &command(),
        r#""$BATON" store import --project shown --store "$URL""#,
    ) else {
        return;
    };
    assert!(shown.contains("\rimporting "), "{shown:?}");
    assert!(shown.contains(" records…"), "{shown:?}");
    // The last count drawn is the whole, then the line is blanked and the cursor returned.
    let last = shown.rfind("\rimporting ").unwrap();
    let tail = &shown[last..];
    assert!(tail.contains("/"), "{tail:?}");
    let (done, total) = tail["\rimporting ".len()..]
        .split_once(' ')
        .unwrap()
        .0
        .split_once('/')
        .unwrap();
    assert_eq!(done, total, "{tail:?}");
    assert!(
        tail.contains(&format!("\r{}\r", " ".repeat(tail.find('…').unwrap()))),
        "the progress line is not erased: {tail:?}"
    );
    assert!(shown.contains("imported 30 state files"), "{shown:?}");

    // Export: into an empty state directory each time.
    std::fs::rename(env.state_dir(), env.repo.join("original")).unwrap();
    let exported = run(&["store", "export", "--project", "piped"]);
    exported.assert_code(0);
    assert!(
        exported.stdout.starts_with("exported 30 state files"),
        "{}",
        exported.stdout
    );
    assert_eq!(exported.stderr, "");
    std::fs::rename(env.state_dir(), env.repo.join("exported-piped")).unwrap();
    let shown = on_a_terminal(
        &command(),
        r#""$BATON" store export --project shown --store "$URL""#,
    )
    .unwrap();
    assert!(shown.contains("\rexporting "), "{shown:?}");
    assert!(shown.contains(" files…"), "{shown:?}");
    assert!(shown.contains("exported 30 state files"), "{shown:?}");
}

/// `baton ledger derive` names the phase whose gates it is re-running on a terminal, and
/// prints nothing of it into a pipe.
#[test]
fn ledger_derive_shows_the_phase_it_is_checking_on_a_terminal_only() {
    let env = TestEnv::new();
    env.write("plans/p/plan.md", "# Plan p\n\nTwo phases.\n");
    env.write(
        "plans/p/phase-1.md",
        "# Phase 1\n\n```gates\ntests: test -f phase1.ok -> exit 0\n```\n",
    );
    env.write(
        "plans/p/phase-2.md",
        "# Phase 2\n\n```gates\ntests: test -f phase2.ok -> exit 0\n```\n",
    );
    env.git(&["add", "plans"]);
    env.git(&["commit", "--quiet", "-m", "plan p"]);
    env.baton("s", 0, &["ledger", "init", "plans/p"])
        .assert_code(0);
    for n in ["1", "2"] {
        env.baton("s", 1, &["ledger", "start", "plans/p", "--phase", n])
            .assert_code(0);
        let marker = format!("phase{n}.ok");
        env.write(&marker, "done\n");
        env.git(&["add", &marker]);
        env.git(&["commit", "--quiet", "-m", &format!("phase {n}")]);
        env.baton(
            "s",
            1,
            &[
                "ledger", "complete", "plans/p", "--phase", n, "--tests", "1/1",
            ],
        )
        .assert_code(0);
    }

    let piped = env.baton("s", 2, &["ledger", "derive", "plans/p"]);
    piped.assert_code(0);
    assert!(
        piped
            .stdout
            .contains("2 · complete · tests PASS · CONFIRMED"),
        "{}",
        piped.stdout
    );
    assert!(!piped.stderr.contains("re-running"), "{}", piped.stderr);
    assert!(!piped.stderr.contains('\r'), "{:?}", piped.stderr);

    let cmd = env.command(Some("s"), &crate::common::at(2));
    let Some(shown) = on_a_terminal(&cmd, r#""$BATON" ledger derive plans/p"#) else {
        return;
    };
    assert!(
        shown.contains("\rre-running gates, phase 1/2 (1)…"),
        "{shown:?}"
    );
    assert!(
        shown.contains("\rre-running gates, phase 2/2 (2)…"),
        "{shown:?}"
    );
    assert!(
        shown.contains("2 · complete · tests PASS · CONFIRMED"),
        "{shown:?}"
    );
}

/// `COMPLETE=bash` exported by a profile reaches every baton a client or a hook runs: a command
/// with arguments of its own does its work, and a failure hook records its failure, as if the
/// variable were not set; only the shell's own forms (`baton -- <words>`, a bare `baton`) are
/// answered.
#[test]
fn a_stray_complete_variable_changes_no_command_and_no_hook() {
    let env = TestEnv::new();
    let set = env
        .command(Some("s1"), T0)
        .env("COMPLETE", "bash")
        .args(["loop", "init", "PROJ-1"])
        .output()
        .unwrap();
    assert_eq!(set.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&set.stdout).contains("COMPLETE"),
        "the completion script instead of the command's answer"
    );
    assert_eq!(env.read_loop("PROJ-1")["status"], "active");
    let mut failure: serde_json::Value = serde_json::from_slice(&crate::hooks::fixture(
        "claude-code-2.1.332/StopFailure.after-429.json",
    ))
    .unwrap();
    failure["session_id"] = "s1".into();
    failure["cwd"] = env.repo.to_string_lossy().into_owned().into();
    let hook = crate::hooks::run_hook(
        &env,
        &["hook", "claude", "StopFailure"],
        &serde_json::to_vec(&failure).unwrap(),
        T0,
        &[("COMPLETE", "bash".as_ref())],
    );
    hook.assert_code(0);
    assert_eq!(
        env.read_loop("PROJ-1")["status"],
        "interrupted",
        "{}",
        hook.stderr
    );
    // The shell's own question is still answered.
    let script = env
        .command(None, T0)
        .env("COMPLETE", "bash")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&script.stdout).contains("COMPLETE"));
}
