//! `baton supervise`: after each run of the agent, whether to relaunch it and when, or to stop
//! and say why. Only a rate limit is waited out; everything a person must see stops it.

use jiff::{SignedDuration, Timestamp};

/// How one run of the agent left the work, as the state and the hooks recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing of the work is left unfinished.
    Finished,
    /// Interrupted by a rate limit, with the reset time when one is known.
    RateLimited { reset: Option<Timestamp> },
    /// Interrupted in a way a person must see: a crash, a timeout, a state no rule covers,
    /// partial work in the tree. Never retried blindly.
    NeedsPerson { why: String },
    /// Another live session runs the work now.
    TakenOver { by: String },
    /// The supervisor was told to stop (SIGINT, SIGTERM).
    Signalled,
}

/// What the supervisor does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Relaunch the agent in its resume form at this time.
    Relaunch { at: Timestamp, why: String },
    /// Stop with this exit status (0 finished, 3 taken over, 4 a person must decide, 1 a
    /// signal or the restarts used up) and say why.
    Stop { status: u8, why: String },
}

/// The wait before relaunching when a rate limit named no reset time: `first`, doubling with
/// each attempt, never above `cap`, times a jitter factor between 0.8 and 1.2 from `jitter`
/// (a number in [0, 1)) so that many supervisors do not all retry at one moment.
pub fn backoff(
    attempt: u32,
    first: SignedDuration,
    cap: SignedDuration,
    jitter: f64,
) -> SignedDuration {
    let doubled = first
        .checked_mul(1i32.checked_shl(attempt.min(30)).unwrap_or(i32::MAX))
        .unwrap_or(cap)
        .min(cap);
    let jitter = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    let factor = 0.8 + 0.4 * jitter;
    SignedDuration::try_from_secs_f64(doubled.as_secs_f64() * factor)
        .unwrap_or(cap)
        .min(cap)
}

/// The default backoff: 1 minute doubling to 30.
pub const BACKOFF_FIRST: SignedDuration = SignedDuration::from_secs(60);
pub const BACKOFF_CAP: SignedDuration = SignedDuration::from_secs(30 * 60);

/// The next step after a run that left `outcome`, with `restarts` relaunches done so far out
/// of at most `max_restarts`.
pub fn next_step(
    outcome: &Outcome,
    restarts: u32,
    max_restarts: u32,
    now: Timestamp,
    (first, cap): (SignedDuration, SignedDuration),
    jitter: f64,
) -> Next {
    match outcome {
        Outcome::Finished => Next::Stop {
            status: 0,
            why: "the work is finished".into(),
        },
        Outcome::NeedsPerson { why } => Next::Stop {
            status: 4,
            why: format!("a person must see this before it goes on: {why}"),
        },
        Outcome::TakenOver { by } => Next::Stop {
            status: 3,
            why: format!("another live session runs the work now ({by})"),
        },
        Outcome::Signalled => Next::Stop {
            status: 1,
            why: "stopped by a signal; the work is recorded as interrupted".into(),
        },
        Outcome::RateLimited { .. } if restarts >= max_restarts => Next::Stop {
            status: 1,
            why: format!(
                "a rate limit again, after {restarts} relaunches: the limit of {max_restarts} is used up"
            ),
        },
        Outcome::RateLimited { reset: Some(t) } if *t > now => Next::Relaunch {
            at: *t,
            why: format!("the rate limit resets at {}", crate::time::format_ts(*t)),
        },
        Outcome::RateLimited { reset: Some(_) } => Next::Relaunch {
            at: now,
            why: "the rate limit has reset".into(),
        },
        Outcome::RateLimited { reset: None } => {
            let wait = backoff(restarts, first, cap, jitter);
            Next::Relaunch {
                at: now.checked_add(wait).unwrap_or(now),
                why: format!(
                    "the rate limit named no reset time: backing off {}",
                    crate::time::human_age(wait)
                ),
            }
        }
    }
}

/// How the agent process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// One piece of work the attempt's sessions touched, as it stands after the agent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// How it is named to a person: `loop T-1`.
    pub name: String,
    /// Its interrupt reason, when it is interrupted.
    pub interrupted: Option<String>,
    /// What waiting for it gives (`decide_wait`), when it is interrupted or owned elsewhere.
    pub wait: Option<super::wait::Wait>,
    /// Still active in a session of this attempt after the agent ended: nothing recorded how
    /// it stopped.
    pub left_active: bool,
}

/// Everything known about one run of the agent once it has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub exit: Exit,
    /// Whether the agent's hooks told the supervisor anything (a session start at least).
    pub heard: bool,
    /// The signal the supervisor itself was sent while the agent ran.
    pub signalled: Option<i32>,
    /// Whether the hooks saw a rate limit end a turn, and when the evidence they read said it
    /// resets (a reset recorded on the work by an earlier attempt is old news).
    pub hook_rate_limit: bool,
    pub hook_resets: Vec<Timestamp>,
    /// The hooks recorded a turn that died with nothing known (`unknown`); a session that
    /// simply ended (`session_expiry`) is not this.
    pub hook_other: Option<String>,
    pub carried: Vec<Carried>,
}

/// The outcome of an attempt, checked in this order: a signal to the supervisor; work now run
/// by another live session; the agent killed by a signal (a crash); a rate limit (unless a
/// piece of work then needs a person first); any other interrupt; a failing exit with nothing
/// recorded; else finished.
pub fn outcome(a: &Attempt) -> Outcome {
    use super::wait::Wait;
    if a.signalled.is_some() {
        return Outcome::Signalled;
    }
    if !a.heard {
        return Outcome::NeedsPerson {
            why: "the agent's hooks never reported, so nothing tells how it ended: check them with `baton init <client> --dry-run` (Codex also needs `--trust-project`)".into(),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.wait == Some(Wait::TakenOver)) {
        return Outcome::TakenOver {
            by: format!("{} is owned by another live session", c.name),
        };
    }
    if let Exit::Signal(sig) = a.exit {
        return Outcome::NeedsPerson {
            why: format!("the agent was killed by signal {sig} (a crash), so it is not retried"),
        };
    }
    let rate_limited = a.hook_rate_limit
        || a.carried
            .iter()
            .any(|c| c.interrupted.as_deref() == Some("rate_limit"));
    if rate_limited {
        if let Some(c) = a.carried.iter().find(|c| c.wait == Some(Wait::HumanFirst)) {
            return Outcome::NeedsPerson {
                why: format!(
                    "{} was stopped by a rate limit, but its resume needs a person first (`baton resume` says why)",
                    c.name
                ),
            };
        }
        return Outcome::RateLimited {
            reset: a.hook_resets.iter().copied().max(),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.interrupted.is_some()) {
        let reason = c.interrupted.as_deref().unwrap_or_default();
        let what = match reason {
            "session_expiry" => "the agent ended its run before the work was finished".to_string(),
            "unknown" => "a turn died and nothing says it was a rate limit".to_string(),
            other => format!("interrupted ({other})"),
        };
        return Outcome::NeedsPerson {
            why: format!("{} is interrupted: {what}", c.name),
        };
    }
    if let Some(c) = a.carried.iter().find(|c| c.left_active) {
        return Outcome::NeedsPerson {
            why: format!(
                "the agent ended with {} still active and nothing recorded why",
                c.name
            ),
        };
    }
    match (a.exit, &a.hook_other) {
        (Exit::Code(0), None) => Outcome::Finished,
        (Exit::Code(code), Some(reason)) => Outcome::NeedsPerson {
            why: format!(
                "the agent exited {code} and its hooks recorded `{reason}`, not a rate limit"
            ),
        },
        (Exit::Code(code), None) => Outcome::NeedsPerson {
            why: format!("the agent exited {code} and no rate limit was recorded"),
        },
        (Exit::Signal(_), _) => unreachable!("handled above"),
    }
}

/// A relaunch is never earlier than the carried work itself may resume (a rate limit recorded
/// without a reset time waits the loop protocol's default): relaunched sooner, the agent would
/// only be told to wait.
pub fn not_before(next: Next, carried: &[Carried]) -> Next {
    use super::wait::Wait;
    match next {
        Next::Relaunch { at, why } => {
            let work = carried
                .iter()
                .filter_map(|c| match c.wait {
                    Some(Wait::Until(t)) if t > at => Some(t),
                    _ => None,
                })
                .max();
            match work {
                Some(t) => Next::Relaunch {
                    at: t,
                    why: format!(
                        "{why}; the work itself may resume at {}",
                        crate::time::format_ts(t)
                    ),
                },
                None => Next::Relaunch { at, why },
            }
        }
        stop => stop,
    }
}

/// The prompt a relaunched agent is given: the packet its session-start hook injects says
/// where the work stands.
pub const CONTINUE_PROMPT: &str = "Continue the work from where it stopped. The resume packet \
above (from baton) says where each piece of work stands: follow its steps, taking the work \
back with `baton resume accept` first.";

/// The relaunch prompt for a task: the continue prompt, then the task as first given. A client
/// may keep no trace of a prompt whose first request was refused (Gemini CLI resumes such a
/// session without it), and the packet says where work stands, not what the task was.
pub fn continue_prompt(task: &str) -> String {
    format!("{CONTINUE_PROMPT}\n\nThe task, as first given:\n{task}")
}

/// The task prompt of a command `check_command` accepts.
pub fn task_of(client: crate::hook::Client, argv: &[String]) -> Option<String> {
    use crate::hook::Client;
    let args = argv.get(1..)?;
    match client {
        Client::Claude | Client::Codex => args.last().cloned(),
        Client::Gemini => args.iter().enumerate().find_map(|(i, a)| {
            if a == "-p" || a == "--prompt" {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix("--prompt=").map(str::to_string)
            }
        }),
    }
}

/// Why an agent command cannot be supervised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError(pub String);

/// Options of Claude Code and Codex that take a value: the word after one is its value, never
/// the task.
const VALUE_OPTIONS: [&str; 24] = [
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--tools",
    "--model",
    "--fallback-model",
    "--permission-mode",
    "--output-format",
    "--input-format",
    "--settings",
    "--setting-sources",
    "--add-dir",
    "--mcp-config",
    "--append-system-prompt",
    "--system-prompt",
    "--max-turns",
    "--agents",
    "--session-id",
    "--resume",
    "-m",
    "-c",
    "--config",
    "--profile",
];

/// The task prompt of a Claude Code or Codex command: its last word, which must not be an
/// option or an option's value.
fn last_prompt<'a>(args: &'a [String], client: &str) -> Result<&'a str, CommandError> {
    let fail = || {
        CommandError(format!(
            "cannot find the task in the {client} command: put the prompt last (`{}`)",
            match client {
                "codex" => "codex exec [OPTIONS] \"<task>\"",
                _ => "claude [OPTIONS] -p \"<task>\"",
            }
        ))
    };
    let (last, before) = args.split_last().ok_or_else(fail)?;
    let after_value_option = before
        .last()
        .is_some_and(|b| VALUE_OPTIONS.contains(&b.as_str()));
    if last.starts_with('-') || after_value_option || before.is_empty() {
        return Err(fail());
    }
    Ok(last)
}

/// Checks that `argv` (program and arguments) is a command supervise can relaunch in the
/// client's resume form.
pub fn check_command(client: crate::hook::Client, argv: &[String]) -> Result<(), CommandError> {
    resume_command(client, argv, Some("S"), "p").map(|_| ())
}

/// The command that resumes the agent's session `session` (the latest in the project when it
/// is not known) with `prompt` in place of the task: `claude … --resume <session> -p <prompt>`,
/// `codex … exec … resume <session>|--last <prompt>`, `gemini … -r latest -p <prompt>`.
/// Options that picked a session in the original command are dropped.
pub fn resume_command(
    client: crate::hook::Client,
    argv: &[String],
    session: Option<&str>,
    prompt: &str,
) -> Result<Vec<String>, CommandError> {
    use crate::hook::Client;
    let Some((program, args)) = argv.split_first() else {
        return Err(CommandError("no agent command was given".into()));
    };
    let mut out = vec![program.clone()];
    match client {
        Client::Claude => {
            if !args.iter().any(|a| a == "-p" || a == "--print") {
                return Err(CommandError(
                    "supervise runs Claude Code headless: `claude [OPTIONS] -p \"<task>\"`".into(),
                ));
            }
            last_prompt(args, "claude")?;
            let kept = drop_options(
                &args[..args.len() - 1],
                &["--resume", "-r", "--session-id"],
                &["--continue", "-c", "--fork-session"],
            );
            out.extend(kept);
            match session {
                Some(s) => out.extend(["--resume".to_string(), s.to_string()]),
                None => out.push("--continue".into()),
            }
            out.push(prompt.into());
        }
        Client::Codex => {
            let exec = args
                .iter()
                .position(|a| a == "exec" || a == "e")
                .ok_or_else(|| {
                    CommandError(
                        "supervise runs Codex headless: `codex exec [OPTIONS] \"<task>\"`".into(),
                    )
                })?;
            let rest = &args[exec + 1..];
            if rest.first().is_some_and(|a| a == "resume") {
                return Err(CommandError(
                    "give supervise the command that starts the task (`codex exec \"<task>\"`); it writes the resume form itself".into(),
                ));
            }
            last_prompt(rest, "codex").or_else(|e| {
                // `codex exec "<task>"` alone: the task is the only word.
                match rest {
                    [only] if !only.starts_with('-') => Ok(only.as_str()),
                    _ => Err(e),
                }
            })?;
            out.extend(args[..=exec].iter().cloned());
            out.extend(rest[..rest.len() - 1].iter().cloned());
            out.push("resume".into());
            match session {
                Some(s) => out.push(s.to_string()),
                None => out.push("--last".into()),
            }
            out.push(prompt.into());
        }
        Client::Gemini => {
            let mut found = false;
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                if a == "-p" || a == "--prompt" {
                    if i + 1 >= args.len() {
                        break;
                    }
                    out.extend([a.clone(), prompt.to_string()]);
                    found = true;
                    i += 2;
                    continue;
                }
                if a.starts_with("--prompt=") {
                    out.push(format!("--prompt={prompt}"));
                    found = true;
                } else if a == "-r" || a == "--resume" || a == "--session-id" {
                    i += 2;
                    continue;
                } else if !a.starts_with("--resume=") && !a.starts_with("--session-id=") {
                    out.push(a.clone());
                }
                i += 1;
            }
            if !found {
                return Err(CommandError(
                    "supervise runs Gemini CLI headless: `gemini [OPTIONS] -p \"<task>\"`".into(),
                ));
            }
            // Gemini CLI resumes by "latest" or an index, not by the session id.
            out.extend(["-r".to_string(), "latest".to_string()]);
        }
    }
    Ok(out)
}

/// `args` without the options in `valued` (and each one's value) and those in `flags`.
fn drop_options(args: &[String], valued: &[&str], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if valued.contains(&a.as_str()) {
            skip = true;
        } else if !flags.contains(&a.as_str())
            && !valued.iter().any(|v| a.starts_with(&format!("{v}=")))
        {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-03-01T12:00:00Z";

    #[test]
    fn backoff_doubles_from_a_minute_to_thirty_with_jitter() {
        let b = |attempt, jitter| backoff(attempt, BACKOFF_FIRST, BACKOFF_CAP, jitter).as_secs();
        // Without jitter's spread (the middle factor, 1.0).
        let middle: Vec<i64> = (0..8).map(|a| b(a, 0.5)).collect();
        assert_eq!(middle, [60, 120, 240, 480, 960, 1800, 1800, 1800]);
        // The spread is 0.8x to 1.2x, never above the cap.
        assert_eq!(b(0, 0.0), 48);
        assert_eq!(b(0, 0.999_999), 71);
        assert_eq!(b(5, 0.999_999), 1800);
        assert_eq!(b(4, 0.0), 768);
        // Huge attempts and odd jitter stay in range.
        assert_eq!(b(u32::MAX, 0.5), 1800);
        assert_eq!(b(0, f64::NAN), 48);
        assert_eq!(b(0, 7.0), 72);
    }

    #[test]
    fn every_stop_condition_and_every_relaunch() {
        let now: Timestamp = NOW.parse().unwrap();
        let later: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let earlier: Timestamp = "2026-03-01T11:00:00Z".parse().unwrap();
        let step = |outcome: Outcome, restarts| {
            next_step(
                &outcome,
                restarts,
                3,
                now,
                (BACKOFF_FIRST, BACKOFF_CAP),
                0.5,
            )
        };
        let stop = |n: Next| match n {
            Next::Stop { status, .. } => Some(status),
            Next::Relaunch { .. } => None,
        };
        let at = |n: Next| match n {
            Next::Relaunch { at, .. } => Some(at),
            Next::Stop { .. } => None,
        };
        assert_eq!(stop(step(Outcome::Finished, 0)), Some(0));
        let crash = Outcome::NeedsPerson {
            why: "crash: the turn died and nothing says why".into(),
        };
        assert_eq!(stop(step(crash, 0)), Some(4));
        let taken = Outcome::TakenOver { by: "B".into() };
        assert_eq!(stop(step(taken, 0)), Some(3));
        assert_eq!(stop(step(Outcome::Signalled, 0)), Some(1));
        let limited = |reset| Outcome::RateLimited { reset };
        assert_eq!(
            stop(step(limited(Some(later)), 3)),
            Some(1),
            "restarts used up"
        );
        assert_eq!(at(step(limited(Some(later)), 2)), Some(later));
        assert_eq!(at(step(limited(Some(earlier)), 0)), Some(now));
        assert_eq!(
            at(step(limited(None), 1)),
            Some(now.checked_add(SignedDuration::from_secs(120)).unwrap())
        );
    }

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(|w| w.replace('_', " ")).collect()
    }

    #[test]
    fn each_client_is_relaunched_in_its_resume_form() {
        use crate::hook::Client;
        let r = |c, cmd: &str, s| resume_command(c, &words(cmd), s, "go on").map(|v| v.join(" "));
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
            assert!(check_command(c, &words(cmd)).is_err(), "{cmd}");
        }
        assert!(check_command(Client::Claude, &[]).is_err());
        assert_eq!(
            task_of(Client::Gemini, &words("gemini -m x -p the_task")).as_deref(),
            Some("the task")
        );
        assert_eq!(
            task_of(Client::Codex, &words("codex exec --json the_task")).as_deref(),
            Some("the task")
        );
    }

    #[test]
    fn the_outcome_of_an_attempt() {
        use super::super::wait::Wait;
        let t: Timestamp = "2026-03-01T13:00:00Z".parse().unwrap();
        let t2: Timestamp = "2026-03-01T13:30:00Z".parse().unwrap();
        let base = Attempt {
            exit: Exit::Code(0),
            heard: true,
            signalled: None,
            hook_rate_limit: false,
            hook_resets: vec![],
            hook_other: None,
            carried: vec![],
        };
        let item = |interrupted: Option<&str>, wait| Carried {
            name: "loop T-1".into(),
            interrupted: interrupted.map(Into::into),
            wait,
            left_active: false,
        };
        let with = |f: &dyn Fn(&mut Attempt)| {
            let mut a = base.clone();
            f(&mut a);
            outcome(&a)
        };
        let kind = |o: Outcome| match o {
            Outcome::Finished => "finished",
            Outcome::RateLimited { .. } => "rate_limited",
            Outcome::NeedsPerson { .. } => "person",
            Outcome::TakenOver { .. } => "taken_over",
            Outcome::Signalled => "signalled",
        };
        assert_eq!(kind(outcome(&base)), "finished");
        assert_eq!(kind(with(&|a| a.heard = false)), "person", "hooks silent");
        assert_eq!(kind(with(&|a| a.exit = Exit::Code(1))), "person");
        assert_eq!(
            kind(with(&|a| a.hook_other = Some("unknown".into()))),
            "person"
        );
        // A crash is never retried, even with a rate limit on record.
        assert_eq!(
            kind(with(&|a| {
                a.exit = Exit::Signal(9);
                a.hook_rate_limit = true;
            })),
            "person"
        );
        assert_eq!(
            kind(with(&|a| {
                a.exit = Exit::Code(1);
                a.signalled = Some(15);
            })),
            "signalled"
        );
        assert_eq!(
            kind(with(
                &|a| a.carried = vec![item(None, Some(Wait::TakenOver))]
            )),
            "taken_over"
        );
        // A rate limit: the latest reset known, from the work or the hooks.
        assert_eq!(
            with(&|a| {
                a.exit = Exit::Code(1);
                a.carried = vec![item(Some("rate_limit"), Some(Wait::Until(t)))];
                a.hook_resets = vec![t2, t];
            }),
            Outcome::RateLimited { reset: Some(t2) }
        );
        assert_eq!(
            with(&|a| {
                a.exit = Exit::Code(1);
                a.hook_rate_limit = true;
            }),
            Outcome::RateLimited { reset: None }
        );
        // The loop's own default wait (no reset named) is no reset time: the backoff decides,
        // and the relaunch waits for the work.
        let defaulted = item(Some("rate_limit"), Some(Wait::Until(t)));
        let limited = with(&|a| a.carried = vec![defaulted.clone()]);
        assert_eq!(limited, Outcome::RateLimited { reset: None });
        let now: Timestamp = NOW.parse().unwrap();
        let soon = next_step(&limited, 0, 3, now, (BACKOFF_FIRST, BACKOFF_CAP), 0.5);
        assert!(matches!(soon, Next::Relaunch { at, .. } if at < t));
        let moved = not_before(soon, std::slice::from_ref(&defaulted));
        assert!(
            matches!(moved, Next::Relaunch { at, .. } if at == t),
            "{moved:?}"
        );
        let later = Next::Relaunch {
            at: t2,
            why: String::new(),
        };
        assert_eq!(not_before(later.clone(), &[defaulted]), later);
        // ...unless the work then needs a person (`never` or `confirm` mode).
        assert_eq!(
            kind(with(&|a| {
                a.carried = vec![item(Some("rate_limit"), Some(Wait::HumanFirst))];
            })),
            "person"
        );
        assert_eq!(
            kind(with(
                &|a| a.carried = vec![item(Some("session_expiry"), Some(Wait::Ready))]
            )),
            "person"
        );
        assert_eq!(
            kind(with(&|a| {
                a.carried = vec![Carried {
                    left_active: true,
                    ..item(None, None)
                }];
            })),
            "person"
        );
    }
}
