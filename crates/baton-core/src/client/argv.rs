//! Reading an agent's command line the way the client's own parser reads it, so that supervise
//! finds the task the client would run and relaunches with every other option kept. Each client
//! module lists its options (from the client's `--help` and its hidden options) with what each
//! takes; this module walks the words with the rules those parsers share:
//!
//! - an option that takes a value takes the next word, whatever it is, or the text after `=`;
//! - an option with an optional value takes the next word unless it looks like an option;
//! - a variadic option (Claude Code's `--allowedTools <tools...>`, Codex's `--image <FILE>...`,
//!   Gemini CLI's array options) takes every following word up to the next one that looks like
//!   an option (commander, clap and yargs all read them so), which swallows a prompt written
//!   after it;
//! - `--` ends the options: every word after it is an argument.
//!
//! An option baton does not know is refused: whether it takes the next word decides where the
//! task is, and a guess could relaunch the agent with a different task.

use super::definition::AgentCommandError;

/// What an option takes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// Nothing: a flag.
    Nothing,
    /// One value: the next word, or the text after `=`.
    Value,
    /// An optional value: the next word unless it looks like an option, or the text after `=`.
    Optional,
    /// One or more values: every following word up to the next that looks like an option.
    Values,
}

/// A client's command-line grammar: its options, each under every name it has, in one or more
/// tables (a subcommand shares its parent's common options).
#[derive(Debug)]
pub struct Grammar {
    /// The client as a person names it, for messages.
    pub client: &'static str,
    pub options: &'static [&'static [(&'static str, Takes)]],
    /// Whether `--name=value` of a variadic option goes on taking the words after it (yargs
    /// does; commander and clap end the option there).
    pub inline_values_continue: bool,
    /// Whether a flag takes a following `true` or `false` (yargs does).
    pub flags_take_bools: bool,
}

/// What one word of a command line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// An option (`--model`, `-p`, or `--model=x` with its value inline), by the name written.
    Option(String),
    /// A value of the option before it, by that option's name.
    Value(String),
    /// An argument: a prompt, a subcommand.
    Argument,
    /// `--`, which ends the options.
    EndOfOptions,
}

/// Whether a word looks like an option to these parsers.
fn optionish(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-')
}

impl Grammar {
    fn takes(&self, name: &str) -> Option<Takes> {
        self.options
            .iter()
            .flat_map(|table| table.iter())
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }

    /// Whether `name` is an option that takes every word up to the next option.
    pub fn takes_values(&self, name: &str) -> bool {
        self.takes(name) == Some(Takes::Values)
    }

    /// Whether `name` is one of the options.
    pub fn knows(&self, name: &str) -> bool {
        self.takes(name).is_some()
    }

    /// What each word of `args` is, up to the first argument when `to_first_argument` (a
    /// subcommand, whose own options follow). An option the grammar does not know is an error.
    pub fn scan(
        &self,
        args: &[String],
        to_first_argument: bool,
    ) -> Result<Vec<Word>, AgentCommandError> {
        let mut out: Vec<Word> = Vec::with_capacity(args.len());
        // The variadic option still taking words, if any.
        let mut taking: Option<String> = None;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            if a == "--" {
                out.push(Word::EndOfOptions);
                out.extend(args[i + 1..].iter().map(|_| Word::Argument));
                break;
            }
            if let Some(name) = &taking {
                if !optionish(a) {
                    out.push(Word::Value(name.clone()));
                    i += 1;
                    continue;
                }
                taking = None;
            }
            if !optionish(a) {
                out.push(Word::Argument);
                if to_first_argument {
                    break;
                }
                i += 1;
                continue;
            }
            let (name, inline) = match a.split_once('=') {
                Some((n, _)) if n.starts_with("--") || n.len() == 2 => (n, true),
                _ => (a, false),
            };
            let Some(takes) = self.takes(name) else {
                return Err(AgentCommandError(format!(
                    "baton does not know the {} option `{name}`, so it cannot tell whether the word after it is the task",
                    self.client
                )));
            };
            out.push(Word::Option(name.to_string()));
            i += 1;
            match (takes, inline) {
                (Takes::Nothing, true) => {
                    return Err(AgentCommandError(format!(
                        "the {} option `{name}` takes no value",
                        self.client
                    )));
                }
                (Takes::Nothing, false) => {
                    if self.flags_take_bools
                        && args.get(i).is_some_and(|v| v == "true" || v == "false")
                    {
                        out.push(Word::Value(name.to_string()));
                        i += 1;
                    }
                }
                (Takes::Value, false) => {
                    if i >= args.len() {
                        return Err(AgentCommandError(format!(
                            "the {} option `{name}` has no value",
                            self.client
                        )));
                    }
                    out.push(Word::Value(name.to_string()));
                    i += 1;
                }
                (Takes::Optional, false) => {
                    if args.get(i).is_some_and(|v| !optionish(v) && v != "--") {
                        out.push(Word::Value(name.to_string()));
                        i += 1;
                    }
                }
                (Takes::Values, false) => taking = Some(name.to_string()),
                (Takes::Values, true) if self.inline_values_continue => {
                    taking = Some(name.to_string());
                }
                (_, true) => {}
            }
        }
        Ok(out)
    }
}

/// Where a command's task is: the word at `at`, the whole word or after `prefix`
/// (`--prompt=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAt {
    pub at: usize,
    pub prefix: String,
    pub task: String,
}

/// The word of `args` that is `task` given by `supervise --task`, for a command baton cannot
/// read itself (a wrapper script's own options): it must be one word, once, whole or after one
/// of `prefixes` (`--prompt=`).
pub fn given_task(
    args: &[String],
    task: &str,
    prefixes: &[&str],
    client: &str,
) -> Result<TaskAt, AgentCommandError> {
    let mut found = args.iter().enumerate().filter_map(|(i, a)| {
        if a == task {
            return Some(TaskAt {
                at: i,
                prefix: String::new(),
                task: task.to_string(),
            });
        }
        prefixes
            .iter()
            .find(|p| a.strip_prefix(**p) == Some(task))
            .map(|p| TaskAt {
                at: i,
                prefix: (*p).to_string(),
                task: task.to_string(),
            })
    });
    match (found.next(), found.next()) {
        (Some(at), None) => Ok(at),
        (None, _) => Err(AgentCommandError(format!(
            "the task given with `--task` is not a word of the {client} command: give the prompt exactly as the command passes it"
        ))),
        (Some(_), Some(_)) => Err(AgentCommandError(format!(
            "the task given with `--task` is more than one word of the {client} command, so baton cannot tell which to replace"
        ))),
    }
}

/// `why` baton cannot read a command, with the fix: name its task by hand.
pub fn needs_task(why: AgentCommandError) -> AgentCommandError {
    AgentCommandError(format!(
        "{}: pass the task with `supervise --task \"<task>\"`",
        why.0
    ))
}

/// The indices of `args` that set a session (the options in `session_options` and their
/// values), by name alone: for a command read with `--task`, whose other options baton may not
/// know.
pub fn session_words(args: &[String], valued: &[&str], flags: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            break;
        }
        if valued.contains(&a) {
            out.push(i);
            if args.get(i + 1).is_some_and(|v| !optionish(v)) {
                out.push(i + 1);
                i += 1;
            }
        } else if flags.contains(&a) || valued.iter().any(|v| a.starts_with(&format!("{v}="))) {
            out.push(i);
        }
        i += 1;
    }
    out
}

/// A client whose headless task is the value of `-p` / `--prompt` (Gemini CLI, Copilot CLI):
/// what `locate_prompt` needs to know of it.
pub struct PromptCli {
    /// As messages name it: `Gemini CLI`.
    pub title: &'static str,
    /// Its program, for `given_task`.
    pub program: &'static str,
    pub usage: &'static str,
    pub grammar: &'static Grammar,
    /// The spellings of `-p` with its value in the same word (`--prompt=`).
    pub inline: &'static [&'static str],
    /// The options that run it interactively instead.
    pub interactive: &'static [&'static str],
    /// The options that pick a session, with a value and without: the relaunch names its own.
    pub session_valued: &'static [&'static str],
    pub session_flags: &'static [&'static str],
    /// Why words that are neither options nor their values are refused.
    pub stray: &'static str,
}

impl PromptCli {
    /// The error of a command that is not `<program> [OPTIONS] -p "<task>"`.
    pub fn not_headless(&self) -> AgentCommandError {
        AgentCommandError(format!(
            "supervise runs {} headless, with the task as the value of `-p`: `{}`",
            self.title, self.usage
        ))
    }
}

/// Where the task of `<program> [OPTIONS] -p "<task>"` is (the value of `-p`, `--prompt` or
/// `--prompt=`), and the words the relaunch drops (the session options and their values).
pub fn locate_prompt(
    cli: &PromptCli,
    args: &[String],
    task: Option<&str>,
) -> Result<(TaskAt, Vec<usize>), AgentCommandError> {
    let is_prompt = |o: &str| o == "-p" || o == "--prompt";
    let words = match cli.grammar.scan(args, false) {
        Ok(words) => words,
        Err(e) => {
            let Some(task) = task else {
                return Err(needs_task(e));
            };
            let found = given_task(args, task, cli.inline, cli.program)?;
            let after_p = found.at > 0 && is_prompt(&args[found.at - 1]);
            if found.prefix.is_empty() && !after_p {
                return Err(cli.not_headless());
            }
            let dropped = session_words(args, cli.session_valued, cli.session_flags);
            return Ok((found, dropped));
        }
    };
    let mut prompts = Vec::new();
    for (i, w) in words.iter().enumerate() {
        match w {
            Word::Value(o) if is_prompt(o) => prompts.push(TaskAt {
                at: i,
                prefix: String::new(),
                task: args[i].clone(),
            }),
            Word::Option(o) if is_prompt(o) => {
                if let Some((name, value)) = args[i].split_once('=') {
                    prompts.push(TaskAt {
                        at: i,
                        prefix: format!("{name}="),
                        task: value.to_string(),
                    });
                }
            }
            Word::Option(o) if cli.interactive.contains(&o.as_str()) => {
                return Err(AgentCommandError(format!(
                    "`{o}` runs {} interactively: supervise runs it headless, `{}`",
                    cli.title, cli.usage
                )));
            }
            _ => {}
        }
    }
    let found = match prompts.len() {
        1 => prompts.remove(0),
        0 => return Err(cli.not_headless()),
        _ => {
            return Err(AgentCommandError(format!(
                "this {} command gives `-p` more than once: give the task once (`{}`)",
                cli.title, cli.usage
            )));
        }
    };
    if words.contains(&Word::Argument) {
        return Err(AgentCommandError(format!(
            "{}: quote the task as the one value of `-p` (`{}`)",
            cli.stray, cli.usage
        )));
    }
    if let Some(t) = task
        && t != found.task
    {
        return Err(AgentCommandError(format!(
            "{} reads {:?} as the task of this command, not the one `--task` gives",
            cli.title, found.task
        )));
    }
    let session = |o: &str| cli.session_valued.contains(&o) || cli.session_flags.contains(&o);
    let dropped = (0..words.len())
        .filter(|i| match &words[*i] {
            Word::Option(o) | Word::Value(o) => session(o),
            _ => false,
        })
        .collect();
    Ok((found, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Grammar = Grammar {
        client: "test",
        options: &[&[
            ("-p", Takes::Nothing),
            ("--model", Takes::Value),
            ("--resume", Takes::Optional),
            ("--tools", Takes::Values),
        ]],
        inline_values_continue: false,
        flags_take_bools: false,
    };

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    fn kinds(g: &Grammar, s: &str) -> Result<String, AgentCommandError> {
        Ok(g.scan(&words(s), false)?
            .iter()
            .map(|w| match w {
                Word::Option(_) => "o",
                Word::Value(_) => "v",
                Word::Argument => "a",
                Word::EndOfOptions => "-",
            })
            .collect())
    }

    #[test]
    fn the_words_as_the_parsers_read_them() {
        let rows = [
            ("-p task", "oa"),
            ("task -p", "ao"),
            ("--model -x task", "ova"),
            ("--model=x task", "oa"),
            ("--resume task", "ov"),
            ("--resume -p task", "ooa"),
            ("--tools a b task", "ovvv"),
            ("--tools a b -p task", "ovvoa"),
            ("--tools=a task", "oa"),
            ("--tools a -- task", "ov-a"),
            ("-- -p --model", "-aa"),
        ];
        for (line, want) in rows {
            assert_eq!(kinds(&G, line).unwrap(), want, "{line}");
        }
        let yargs = Grammar {
            inline_values_continue: true,
            flags_take_bools: true,
            ..G
        };
        assert_eq!(kinds(&yargs, "--tools=a b task").unwrap(), "ovv");
        assert_eq!(kinds(&yargs, "-p true task").unwrap(), "ova");
        for bad in ["--nope task", "-p=1 task", "task --model"] {
            assert!(kinds(&G, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_task_given_by_hand_is_one_word_once() {
        let args = words("--x 1 --prompt=go");
        assert_eq!(given_task(&args, "go", &["--prompt="], "c").unwrap().at, 2);
        assert_eq!(given_task(&args, "1", &[], "c").unwrap().at, 1);
        assert!(given_task(&words("go go"), "go", &[], "c").is_err());
        assert!(given_task(&args, "gone", &[], "c").is_err());
        assert_eq!(
            session_words(
                &words("-a --resume S -c x --session-id=Q"),
                &["--resume", "--session-id"],
                &["-c"]
            ),
            [1, 2, 3, 5]
        );
    }
}
