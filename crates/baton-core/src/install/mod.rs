//! What `baton init` installs into an agent client, as functions of the files' text: the hook
//! entries merged into the client's hook settings, the trust entries Codex needs before it runs
//! a hook, and the short instruction text for the agent. Nothing here reads or writes a file.

pub mod codex_trust;
pub mod folder_trust;
pub mod gitattributes;
pub mod hook_file;
pub mod instructions;
pub mod opencode_plugin;
pub mod plugin;
pub mod settings;

use crate::client::Client;

/// The command line of baton's handler: `<baton> hook <client> <event>`, `baton` being the
/// program as it should be called (a bare `baton`, or a shell-quoted absolute path).
pub fn hook_command(baton: &str, client: Client, event: &str) -> String {
    format!("{baton} hook {} {event}", client.as_str())
}

/// The event a handler's command runs baton's hook for, when the command is baton's own for
/// `client`: its program is `baton` or a path ending in `/baton`, followed by exactly
/// `hook <client> <event>`. Anything else (a wrapper script, a pipeline, another client's
/// hook) is the user's.
pub fn baton_hook_event(command: &str, client: Client) -> Option<String> {
    let words = shell_words(command)?;
    let [program, hook, named_client, event] = words.as_slice() else {
        return None;
    };
    let is_baton = program == "baton" || program.ends_with("/baton");
    (is_baton && hook == "hook" && named_client == client.as_str() && !event.is_empty())
        .then(|| event.clone())
}

/// Splits a command line the way a POSIX shell splits simple words: blanks separate, single
/// quotes keep everything, double quotes keep everything but `\`-escapes, a backslash outside
/// quotes escapes the next character. A line with any other shell syntax (`;`, `|`, `&`, `$`,
/// redirections, backquotes, globs) is no simple command: `None`.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => w.push(other),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => {
                            let next = chars.next()?;
                            if !matches!(next, '"' | '\\' | '$' | '`') {
                                w.push('\\');
                            }
                            w.push(next);
                        }
                        '$' | '`' => return None,
                        other => w.push(other),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            ';' | '|' | '&' | '$' | '`' | '<' | '>' | '(' | ')' | '*' | '?' | '[' | '#' | '~'
            | '\n' => return None,
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    words.extend(word);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baton_commands_are_recognised_by_program_and_arguments() {
        let cases = [
            ("baton hook claude Stop", Some("Stop")),
            (
                "/usr/local/bin/baton hook claude SessionStart",
                Some("SessionStart"),
            ),
            ("'/home/a b/bin/baton' hook claude Stop", Some("Stop")),
            ("baton hook codex Stop", None),
            ("baton hook claude Stop; rm -rf x", None),
            ("baton hook claude Stop extra", None),
            ("notbaton hook claude Stop", None),
            ("/opt/baton-wrapper hook claude Stop", None),
            ("echo hi", None),
            ("baton 'hook' claude Stop", Some("Stop")),
        ];
        for (command, want) in cases {
            assert_eq!(
                baton_hook_event(command, Client::Claude).as_deref(),
                want,
                "{command}"
            );
        }
    }
}
