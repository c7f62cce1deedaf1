//! The agent clients baton works with, one module each: what a client is
//! (`definition::Definition`) and the definitions of Claude Code (`claude`), Codex (`codex`) and
//! Gemini CLI (`gemini`), Copilot CLI (`copilot`) and OpenCode (`opencode`), and Cursor
//! (`cursor`) and Antigravity CLI (`antigravity`), these two built from their published hooks
//! references. A new client is a module implementing `Definition`, a variant of `Client`, its
//! payloads as fixtures and an end-to-end test with the real client.

pub mod antigravity;
pub mod argv;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod definition;
pub mod gemini;
pub mod opencode;

pub use definition::{
    Action, AgentCommandError, ClientGoal, Definition, Dialect, Disabling, Evidence, Files,
    GoalSource, HookSwitch, Instructions, PayloadKeys, SessionSource, SettingsScope, SettingsShape,
    SwitchFile, TranscriptEnd, UserDir,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Antigravity,
    Copilot,
    OpenCode,
}

impl Client {
    pub const ALL: [Client; 7] = [
        Client::Claude,
        Client::Codex,
        Client::Gemini,
        Client::Cursor,
        Client::Antigravity,
        Client::Copilot,
        Client::OpenCode,
    ];
    /// The clients' names, as baton's command line takes them.
    pub const NAMES: [&'static str; 7] = [
        "claude",
        "codex",
        "gemini",
        "cursor",
        "antigravity",
        "copilot",
        "opencode",
    ];

    /// The client's definition.
    pub fn def(self) -> &'static dyn Definition {
        match self {
            Client::Claude => &claude::ClaudeCode,
            Client::Codex => &codex::Codex,
            Client::Gemini => &gemini::GeminiCli,
            Client::Cursor => &cursor::Cursor,
            Client::Antigravity => &antigravity::Antigravity,
            Client::Copilot => &copilot::CopilotCli,
            Client::OpenCode => &opencode::OpenCode,
        }
    }

    pub fn parse(raw: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.as_str() == raw)
    }

    /// The client whose process goes by the program name `program` (a path's last component).
    pub fn of_program(program: &str) -> Option<Client> {
        let base = program.rsplit('/').next().unwrap_or(program);
        Client::ALL
            .into_iter()
            .find(|c| c.def().programs().contains(&base))
    }

    pub fn as_str(self) -> &'static str {
        self.def().name()
    }

    /// The task of a command `check_command` accepts (`task` as `supervise --task` gives it).
    pub fn task_of(self, argv: &[String], task: Option<&str>) -> Result<String, AgentCommandError> {
        self.def().task_of(argv, task)
    }

    /// The first option of `argv` that switches the client's hooks off or keeps no session
    /// (`Definition::disabling_options`): the option as written, and why it leaves supervise
    /// nothing to do.
    pub fn disabling_option(self, argv: &[String]) -> Option<(String, &'static str)> {
        let args = argv.get(1..).unwrap_or_default();
        for (i, arg) in args.iter().enumerate() {
            for d in self.def().disabling_options() {
                let (name, inline) = match arg.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None => (arg.as_str(), None),
                };
                if name != d.option {
                    continue;
                }
                let Some(unless) = d.unless else {
                    return Some((arg.clone(), d.why));
                };
                let value = inline.or_else(|| args.get(i + 1).map(String::as_str));
                let keeps =
                    value.is_some_and(|v| v.split(',').any(|part| unless.contains(&part.trim())));
                if !keeps {
                    let shown = match (inline, value) {
                        (None, Some(v)) => format!("{arg} {v}"),
                        _ => arg.clone(),
                    };
                    return Some((shown, d.why));
                }
            }
        }
        None
    }

    /// Checks that `argv` (program and arguments) is a command supervise can relaunch in the
    /// client's resume form.
    pub fn check_command(
        self,
        argv: &[String],
        task: Option<&str>,
    ) -> Result<(), AgentCommandError> {
        self.def()
            .resume_command(argv, task, Some("S"), "p")
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(|w| w.replace('_', " ")).collect()
    }

    #[test]
    fn every_client_is_named_once_and_found_by_its_name_and_program() {
        let names: Vec<&str> = Client::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, Client::NAMES);
        for client in Client::ALL {
            assert_eq!(Client::parse(client.as_str()), Some(client));
            for program in client.def().programs() {
                assert_eq!(
                    Client::of_program(&format!("/usr/bin/{program}")),
                    Some(client)
                );
            }
            let has = |name: &str| {
                client
                    .def()
                    .hook_events()
                    .iter()
                    .any(|e| e.eq_ignore_ascii_case(name))
            };
            // Antigravity and OpenCode have neither event: the first call of a session starts
            // it, and nothing marks the end.
            if client != Client::Antigravity && client != Client::OpenCode {
                assert!(has("SessionStart") && has("SessionEnd"), "{client:?}");
            }
        }
        assert_eq!(Client::parse("Claude"), None);
        assert_eq!(Client::of_program("baton"), None);
    }

    #[test]
    fn hook_timeouts_in_each_clients_unit() {
        assert_eq!(Client::Codex.def().hook_timeout("SessionEnd"), 3);
        assert_eq!(Client::Codex.def().hook_timeout("Stop"), 10);
        assert_eq!(Client::Claude.def().hook_timeout("StopFailure"), 10);
        assert_eq!(Client::Gemini.def().hook_timeout("SessionEnd"), 10_000);
    }

    /// `cmd` relaunched by `c` for session `s` (`_` joins the words of one argument).
    fn relaunch(c: Client, cmd: &str, s: Option<&str>) -> Result<String, AgentCommandError> {
        c.def()
            .resume_command(&words(cmd), None, s, "go_on")
            .map(|v| v.join(" "))
    }

    #[test]
    fn each_client_relaunches_its_own_session_with_every_option_kept() {
        use Client::*;
        // (client, the command as run, the session its hook reported, the relaunch)
        let rows: &[(Client, &str, Option<&str>, &str)] = &[
            // Claude Code: the task anywhere, variadic options, `--`.
            (
                Claude,
                "claude --allowedTools Bash -p do_the_task",
                Some("S1"),
                "claude --allowedTools Bash -p --resume S1 go_on",
            ),
            (
                Claude,
                "claude -p do_the_task --allowedTools Bash Edit",
                Some("S1"),
                "claude -p --allowedTools Bash Edit --resume S1 go_on",
            ),
            (
                Claude,
                "claude do_the_task -p --model opus --permission-mode acceptEdits",
                Some("S1"),
                "claude -p --model opus --permission-mode acceptEdits --resume S1 go_on",
            ),
            (
                Claude,
                "claude -p --allowedTools Bash Edit -- do_the_task",
                Some("S1"),
                "claude -p --allowedTools Bash Edit --resume S1 go_on",
            ),
            (
                Claude,
                "claude --print --allowed-tools=Bash do_the_task --dangerously-skip-permissions",
                Some("S1"),
                "claude --print --allowed-tools=Bash --dangerously-skip-permissions --resume S1 go_on",
            ),
            (
                Claude,
                "claude --continue -r OLD -p task --fork-session --session-id U",
                None,
                "claude -p --continue go_on",
            ),
            (
                Claude,
                "claude -p --max-turns 30 --output-format stream-json --verbose task",
                Some("S2"),
                "claude -p --max-turns 30 --output-format stream-json --verbose --resume S2 go_on",
            ),
            // Codex: exec's options before or after the task, all before `resume`.
            (
                Codex,
                "codex -c x=1 exec --json task",
                Some("T9"),
                "codex -c x=1 exec --json resume T9 go_on",
            ),
            (
                Codex,
                "codex exec task",
                None,
                "codex exec resume --last go_on",
            ),
            (
                Codex,
                "codex exec task -m gpt-5 --full-auto-off",
                Some("T9"),
                "",
            ),
            (
                Codex,
                "codex --search exec do_it -m gpt-5 --skip-git-repo-check",
                Some("T9"),
                "codex --search exec -m gpt-5 --skip-git-repo-check resume T9 go_on",
            ),
            (
                Codex,
                "codex -m exec exec --sandbox workspace-write do_it",
                Some("T9"),
                "codex -m exec exec --sandbox workspace-write resume T9 go_on",
            ),
            (
                Codex,
                "codex exec do_it -i a.png b.png",
                Some("T9"),
                "codex exec --image=a.png --image=b.png resume T9 go_on",
            ),
            (
                Codex,
                "codex e --json -- do_it",
                Some("T9"),
                "codex e --json resume T9 go_on",
            ),
            // Gemini CLI: by the session's id, `latest` only when unknown.
            (
                Gemini,
                "gemini -p task --approval-mode yolo -r 3",
                Some("0b6f7d2e-9c1a-4d3e-8f00-123456789abc"),
                "gemini -p go_on --approval-mode yolo -r 0b6f7d2e-9c1a-4d3e-8f00-123456789abc",
            ),
            // No session to resume: a new one, never `latest` (another supervisor's, maybe).
            (
                Gemini,
                "gemini --prompt=task",
                None,
                "gemini --prompt=go_on",
            ),
            (
                Gemini,
                "gemini --allowed-tools glob ls -p task -m gemini-2.5-pro",
                Some("G"),
                "gemini --allowed-tools glob ls -p go_on -m gemini-2.5-pro -r G",
            ),
            (
                Gemini,
                "gemini -y true --session-id U -p task --include-directories=a b",
                Some("G"),
                "gemini -y true -p go_on --include-directories=a b -r G",
            ),
            // Copilot CLI: by the session's id, a new session when unknown.
            (
                Copilot,
                "copilot -p task --allow-all-tools --model gpt-4.1",
                Some("C1"),
                "copilot -p go_on --allow-all-tools --model gpt-4.1 --resume=C1",
            ),
            (
                Copilot,
                "copilot --continue --prompt=task -s",
                None,
                "copilot --prompt=go_on -s",
            ),
            (
                Copilot,
                "copilot --allow-tool shell(git) write -p task --resume OLD -n x",
                Some("C1"),
                "copilot --allow-tool shell(git) write -p go_on --resume=C1",
            ),
            // OpenCode: the message's words replaced by one prompt, by the session's id.
            (
                OpenCode,
                "opencode run fix the bug --model fake/m",
                Some("ses_1"),
                "opencode run --session ses_1 go_on --model fake/m",
            ),
            (
                OpenCode,
                "opencode --print-logs run -c --format json -f a.txt b.txt -- do_it",
                Some("ses_1"),
                "opencode --print-logs run --session ses_1 --format json -f a.txt b.txt -- go_on",
            ),
            (
                OpenCode,
                "opencode run --session ses_0 --fork do_it",
                None,
                "opencode run go_on",
            ),
            // OpenCode 2.x: a private server, or another one, kept for the relaunch.
            (
                OpenCode,
                "opencode run --standalone --server http://127.0.0.1:4096 do it",
                Some("ses_1"),
                "opencode run --session ses_1 --standalone --server http://127.0.0.1:4096 go_on",
            ),
        ];
        for (c, cmd, s, want) in rows {
            let got = relaunch(*c, cmd, *s);
            if want.is_empty() {
                assert!(got.is_err(), "{cmd}: {got:?}");
            } else {
                assert_eq!(got.as_deref(), Ok(*want), "{cmd}");
            }
        }
        assert!(!Gemini.def().keeps_unanswered_sessions());
        assert!(
            Claude.def().keeps_unanswered_sessions() && Codex.def().keeps_unanswered_sessions()
        );
        // Each client's relaunch names the session it is given, never another.
        for c in [Claude, Codex, Gemini, Copilot, OpenCode] {
            let cmd = match c {
                Claude => "claude -p task",
                OpenCode => "opencode run task",
                Codex => "codex exec task",
                Copilot => "copilot -p task --allow-all-tools",
                _ => "gemini -p task",
            };
            let a = relaunch(c, cmd, Some("SESSION-A")).unwrap();
            let b = relaunch(c, cmd, Some("SESSION-B")).unwrap();
            assert!(a.contains("SESSION-A") && !a.contains("SESSION-B"), "{a}");
            assert!(b.contains("SESSION-B") && !b.contains("SESSION-A"), "{b}");
        }
    }

    #[test]
    fn the_task_is_found_as_each_client_finds_it() {
        use Client::*;
        let rows: &[(Client, &str, &str)] = &[
            (Claude, "claude -p the_task", "the task"),
            (Claude, "claude the_task -p", "the task"),
            (
                Claude,
                "claude -p the_task --allowedTools Bash Edit",
                "the task",
            ),
            (Claude, "claude --add-dir a b -p -- the_task", "the task"),
            (Claude, "claude -p --model=opus the_task", "the task"),
            (Claude, "claude -p --resume the_task", ""),
            (Codex, "codex exec --json the_task", "the task"),
            (Codex, "codex exec the_task --json -o out.txt", "the task"),
            (
                Codex,
                "codex -a never exec -s danger-full-access the_task",
                "the task",
            ),
            (Gemini, "gemini -m x -p the_task", "the task"),
            (Gemini, "gemini -p the_task --yolo", "the task"),
            (Gemini, "gemini -p=the_task", "the task"),
            (Copilot, "copilot -p the_task --allow-all-tools", "the task"),
            (OpenCode, "opencode run fix the bug -m x", "fix the bug"),
            (OpenCode, "opencode run --title the_task", ""),
            (
                Copilot,
                "copilot --model gpt-4.1 --prompt=the_task",
                "the task",
            ),
        ];
        for (c, cmd, want) in rows {
            let got = c.task_of(&words(cmd), None);
            if want.is_empty() {
                assert!(got.is_err(), "{cmd}: {got:?}");
            } else {
                assert_eq!(got.as_deref(), Ok(*want), "{cmd}");
            }
        }
    }

    #[test]
    fn commands_baton_cannot_read_are_refused_with_the_fix() {
        use Client::*;
        // (client, command, a word of the message)
        let rows: &[(Client, &str, &str)] = &[
            (
                Claude,
                "claude -p --allowedTools Bash Edit the_task",
                "before `--allowedTools`",
            ),
            (Claude, "claude task", "headless"),
            (Claude, "claude -p --verbose", "cannot find the task"),
            (Claude, "claude -p two words", "one prompt"),
            (Claude, "claude -p --frobnicate task", "--task"),
            (Claude, "claude -p mcp", "subcommand"),
            (Claude, "claude -p --model", "no value"),
            (Codex, "codex task", "headless"),
            (Codex, "codex exec resume --last task", "resume form itself"),
            (Codex, "codex exec review", "does not start a task"),
            (Codex, "codex exec -i a.png the_task", "before `-i`"),
            (Codex, "codex exec -", "stdin"),
            (Codex, "codex exec --new-flag task", "--task"),
            (Codex, "codex exec", "cannot find the task"),
            (Gemini, "gemini task", "headless"),
            (Gemini, "gemini -p", "no value"),
            (Gemini, "gemini -i task", "interactively"),
            (Gemini, "gemini -p task extra", "both as an argument"),
            (Gemini, "gemini -p a -p b", "more than once"),
            (Gemini, "gemini --allowed-tools a b -p", "no value"),
            (Copilot, "copilot task", "headless"),
            (Copilot, "copilot -i task", "interactively"),
            (Copilot, "copilot --frobnicate -p task", "--task"),
            (Copilot, "copilot --allow-tool a b -p", "no value"),
            (Copilot, "copilot -p a -p b", "more than once"),
            (OpenCode, "opencode task", "message of `run`"),
            (OpenCode, "opencode run -i task", "interactively"),
            (OpenCode, "opencode run --frobnicate task", "--task"),
            (OpenCode, "opencode run", "no message"),
        ];
        for (c, cmd, word) in rows {
            let err = c.check_command(&words(cmd), None).unwrap_err();
            assert!(err.0.contains(word), "{cmd}: {}", err.0);
        }
        assert!(Claude.check_command(&[], None).is_err());
        // Cursor's reference gives no headless resume form: refused, whatever the command.
        let err = Cursor
            .check_command(&words("cursor-agent -p the_task"), None)
            .unwrap_err();
        assert!(err.0.contains("supervise does not run Cursor"), "{}", err.0);
        assert!(
            Cursor
                .task_of(&words("cursor-agent -p t"), Some("t"))
                .is_err()
        );
        let err = Antigravity
            .check_command(&words("agy -p the_task"), None)
            .unwrap_err();
        assert!(
            err.0.contains("supervise does not run Antigravity"),
            "{}",
            err.0
        );
    }

    #[test]
    fn a_task_given_with_task_is_the_one_replaced() {
        use Client::*;
        let r = |c: Client, cmd: &str, task: &str| {
            c.def()
                .resume_command(&words(cmd), Some(task), Some("S"), "go_on")
                .map(|v| v.join(" "))
        };
        // A wrapper's own option baton does not know: the task named is replaced, every other
        // word kept, the session options dropped.
        assert_eq!(
            r(
                Claude,
                "my-claude --team x -p the_task --resume OLD",
                "the task"
            )
            .unwrap(),
            "my-claude --team x -p --resume S go_on"
        );
        assert_eq!(
            r(Gemini, "my-gemini --team x --prompt=the_task", "the task").unwrap(),
            "my-gemini --team x --prompt=go_on -r S"
        );
        assert_eq!(
            r(Codex, "codex exec --new-flag the_task", "the task").unwrap(),
            "codex exec --new-flag resume S go_on"
        );
        // A task that is not the client's own reading, or not one word, is refused.
        assert!(r(Claude, "claude -p the_task", "other").is_err());
        assert!(r(Claude, "claude -p --allowedTools Bash the_task", "the task").is_err());
        assert!(r(Claude, "my-claude --x the_task the_task -p", "the task").is_err());
        assert!(r(Gemini, "my-gemini --x the_task", "the task").is_err());
    }
}
