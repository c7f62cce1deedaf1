//! `baton window`: the account's window (SPEC section 11, docs/window.md), as a conductor asks
//! before each launch and as a person reopens it.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::Report;
use baton_core::breaker::Gate;
use baton_core::client::Client;
use baton_ops::env::Ctx;

#[derive(Debug, Subcommand)]
pub enum WindowCommand {
    /// Exit 0 when an agent may launch now, 3 while its window is closed
    ///
    /// Before each launch of an agent, a conductor asks whether the account the client is
    /// logged in with may spend now. It prints `open` (exit 0), or one line saying which window
    /// is closed and until when (exit 3): while a window of the account is closed, until its
    /// reset; after the reset, while the one launch that probes the window has not run a turn;
    /// then, for a few seconds each, while the launches before this one in the stagger go. The
    /// first check after a reset is that probe: it prints `open`, and the launch it allows
    /// opens the window for the rest with its first turn.
    ///
    /// The account is read from the client's own files, never a credential (docs/window.md);
    /// `BATON_ACCOUNT` names it instead. `baton supervise` asks the same before each launch.
    Check(WindowArgs),
    /// Say the account's window is open again (a person's decision)
    ///
    /// More usage bought, or a reset misread: the account's breakers are removed, and every
    /// supervisor and conductor waiting on them launches.
    Reopen(WindowArgs),
}

/// Which client's account.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// The client whose account it is [default: the agent client this runs under].
    #[arg(long, value_parser = Client::NAMES, value_name = "CLIENT")]
    client: Option<String>,
}

pub fn dispatch(ctx: &Ctx, cmd: WindowCommand) -> Result<Report, CommandError> {
    match cmd {
        WindowCommand::Check(args) => cmd_check(ctx, args),
        WindowCommand::Reopen(args) => cmd_reopen(ctx, args),
    }
}

fn client_of(args: &WindowArgs) -> Result<Client, CommandError> {
    if let Some(name) = &args.client {
        return Ok(Client::parse(name).expect("clap checked the name"));
    }
    baton_store::process::agent_ancestor_named()
        .map(|(_, client)| client)
        .ok_or_else(|| {
            CommandError::usage("no agent client runs this, and none is named")
                .hint(format!("name it: `--client <{}>`", Client::NAMES.join("|")))
        })
}

fn cmd_check(ctx: &Ctx, args: WindowArgs) -> Result<Report, CommandError> {
    let client = client_of(&args)?;
    let store = ctx.store()?;
    let account = baton_ops::window::ctx_account(ctx, client);
    let host = baton_store::process::host();
    let me = baton_ops::window::who(&format!("check:{host}:{}", std::process::id()), ctx.now);
    let gate = baton_ops::window::gate(&*store, &account, &me, ctx.now, false, true)?;
    let shown = |t| baton_core::time::format_ts(t);
    let (open, line, until, why) = match &gate {
        Gate::Open => (true, "open".to_string(), None, None),
        Gate::Probing { me: true, .. } => (
            true,
            "open".to_string(),
            None,
            Some(
                "the reset has passed: this launch probes the window, and the rest follow its first turn",
            ),
        ),
        Gate::Closed {
            until,
            window,
            label,
        } => (
            false,
            format!(
                "closed: the {window} window of {label} until {}",
                shown(*until)
            ),
            Some(*until),
            Some("the window is closed until its reset"),
        ),
        Gate::Probing { by, .. } => (
            false,
            format!(
                "closed: {} is being probed by {} on {} after its reset; ask again in a minute",
                account.label, by.id, by.host
            ),
            None,
            Some("one launch probes the window after its reset; the rest wait for its first turn"),
        ),
        Gate::Follow { at } => (
            false,
            format!(
                "closed: {} opens for this launch at {}",
                account.label,
                shown(*at)
            ),
            Some(*at),
            Some("the launches that follow a good probe are staggered"),
        ),
        Gate::Unprobed => (false, format!("closed: {}", account.label), None, None),
    };
    let status = if open {
        ExitStatus::Success
    } else {
        ExitStatus::Refused
    };
    let report = Report::new(
        status,
        json!({
            "open": open,
            "client": client.as_str(),
            "account": account.label,
            "basis": account.basis,
            "until": until.map(shown),
            "why": why,
        }),
        line,
    );
    let report = match (open, why) {
        (true, Some(why)) => report.note(why),
        _ => report,
    };
    Ok(machine_note(report, &account))
}

/// A note, when nothing identifies the account, that the window is this machine's.
fn machine_note(report: Report, account: &baton_core::breaker::Account) -> Report {
    if account.basis != baton_core::breaker::Basis::Machine {
        return report;
    }
    report.note(format!(
        "no account of {} is identified here: the window is this machine's (name the account with BATON_ACCOUNT)",
        account.client
    ))
}

fn cmd_reopen(ctx: &Ctx, args: WindowArgs) -> Result<Report, CommandError> {
    let client = client_of(&args)?;
    let store = ctx.store()?;
    let account = baton_ops::window::ctx_account(ctx, client);
    let removed = baton_ops::window::reopen(&*store, &account)?;
    let text = match removed {
        0 => format!("no window of {} was closed", account.label),
        n => format!(
            "reopened {n} window{} of {}: every waiter launches",
            if n == 1 { "" } else { "s" },
            account.label
        ),
    };
    Ok(machine_note(
        Report::ok(
            json!({ "client": client.as_str(), "account": account.label, "reopened": removed }),
            text,
        ),
        &account,
    ))
}
