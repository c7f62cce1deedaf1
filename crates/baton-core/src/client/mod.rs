//! The agent clients baton works with, one module each: what a client is
//! (`definition::Definition`) and the definitions of Claude Code (`claude`), Codex (`codex`) and
//! Gemini CLI (`gemini`). A new client is a module implementing `Definition`, a variant of
//! `Client`, its payloads as fixtures and an end-to-end test with the real client.

pub mod claude;
pub mod codex;
pub mod definition;
pub mod gemini;

pub use definition::{
    Action, AgentCommandError, Definition, Dialect, Evidence, Files, Instructions, SessionSource,
    SettingsScope, TranscriptEnd, UserDir,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    Claude,
    Codex,
    Gemini,
}

impl Client {
    pub const ALL: [Client; 3] = [Client::Claude, Client::Codex, Client::Gemini];
    /// The clients' names, as baton's command line takes them.
    pub const NAMES: [&'static str; 3] = ["claude", "codex", "gemini"];

    /// The client's definition.
    pub fn def(self) -> &'static dyn Definition {
        match self {
            Client::Claude => &claude::ClaudeCode,
            Client::Codex => &codex::Codex,
            Client::Gemini => &gemini::GeminiCli,
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

    /// The task prompt of a command `check_command` accepts.
    pub fn task_of(self, argv: &[String]) -> Option<String> {
        self.def().task_of(argv)
    }

    /// Checks that `argv` (program and arguments) is a command supervise can relaunch in the
    /// client's resume form.
    pub fn check_command(self, argv: &[String]) -> Result<(), AgentCommandError> {
        self.def().resume_command(argv, Some("S"), "p").map(|_| ())
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
            assert!(client.def().hook_events().contains(&"SessionStart"));
            assert!(client.def().hook_events().contains(&"SessionEnd"));
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

    #[test]
    fn each_client_is_relaunched_in_its_resume_form() {
        let r = |c: Client, cmd: &str, s| {
            c.def()
                .resume_command(&words(cmd), s, "go on")
                .map(|v| v.join(" "))
        };
        assert_eq!(
            r(
                Client::Claude,
                "claude --allowedTools Bash -p do_the_task",
                Some("S1")
            )
            .unwrap(),
            "claude --allowedTools Bash -p --resume S1 go on"
        );
        assert_eq!(
            r(Client::Claude, "claude --continue -r OLD -p task", None).unwrap(),
            "claude -p --continue go on"
        );
        assert_eq!(
            r(Client::Codex, "codex -c x=1 exec --json task", Some("T9")).unwrap(),
            "codex -c x=1 exec --json resume T9 go on"
        );
        assert_eq!(
            r(Client::Codex, "codex exec task", None).unwrap(),
            "codex exec resume --last go on"
        );
        assert_eq!(
            r(
                Client::Gemini,
                "gemini -p task --approval-mode yolo -r 3",
                Some("G")
            )
            .unwrap(),
            "gemini -p go on --approval-mode yolo -r latest"
        );
        assert_eq!(
            r(Client::Gemini, "gemini --prompt=task", None).unwrap(),
            "gemini --prompt=go on -r latest"
        );
        // What cannot be relaunched is refused before anything runs.
        for (c, cmd) in [
            (Client::Claude, "claude -p task --allowedTools Bash"),
            (Client::Claude, "claude task"),
            (Client::Claude, "claude -p --verbose"),
            (Client::Codex, "codex task"),
            (Client::Codex, "codex exec resume --last task"),
            (Client::Codex, "codex exec task -m gpt"),
            (Client::Gemini, "gemini task"),
            (Client::Gemini, "gemini -p"),
        ] {
            assert!(c.check_command(&words(cmd)).is_err(), "{cmd}");
        }
        assert!(Client::Claude.check_command(&[]).is_err());
        assert_eq!(
            Client::Gemini
                .task_of(&words("gemini -m x -p the_task"))
                .as_deref(),
            Some("the task")
        );
        assert_eq!(
            Client::Codex
                .task_of(&words("codex exec --json the_task"))
                .as_deref(),
            Some("the task")
        );
    }
}
