//! `baton store migrate|status|import|export`: the PostgreSQL store's schema, what the server
//! says, and moving a project's state between the file store and the server.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::{CommandError, ExitStatus};
use crate::output::{Progress, Report};
use baton_ops::env::Ctx;
use baton_ops::store_transfer::{self, Counts, StoreExport, StoreImport, settings};
use baton_store::pg;

/// The PostgreSQL store for fleets of machines: its schema and its server.
///
/// The server is `--store`, else `BATON_STORE`, else the project's setting (`store = "…"` in
/// `.baton.toml` at its root): a URL such as `postgres://user@db.internal:5432/baton`. What the URL leaves out comes from the variables
/// PostgreSQL users set (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`,
/// `PGSSLMODE`, `PGCONNECT_TIMEOUT`) and the password file (`PGPASSFILE`, else `~/.pgpass`).
/// No password is ever printed.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Apply the schema migrations the server has not had yet.
    ///
    /// In order, each in its own transaction; running it again changes nothing.
    Migrate,
    /// Show the server, its clock, its schema and how much it holds.
    ///
    /// Show the server, its clock, the schema's version and how much state it holds; writes
    /// nothing.
    Status,
    /// Copy this project's file store to the server.
    ///
    /// Copy this project's file store (`.agentic/`: loops, the batch, runs, pause marks, the
    /// journal, the archive) to the server, byte for byte, in one transaction. Refused (exit
    /// 3) when the project already holds state there; of imports racing into one empty
    /// project, exactly one wins.
    Import(ProjectArgs),
    /// Write the project's state on the server into its file store.
    ///
    /// Write the project's state on the server into this project's file store, byte for byte,
    /// all or nothing: every file is written and synced aside first, then moved into place, so
    /// a failed export leaves nothing and can be run again. Refused (exit 3) when `.agentic/`
    /// already holds state.
    Export(ProjectArgs),
    /// Send the interrupts this machine's hooks recorded to the server.
    ///
    /// Send to the server the interrupts this machine's hooks recorded in the state directory's
    /// `outbox/` (a failure hook has no time for a round trip), each once, oldest first. A hook
    /// starts this itself, and every command that reads the state runs it first; run it by
    /// hand after the server was out of reach.
    Forward(ForwardArgs),
}

/// How long to keep trying.
#[derive(Debug, Args)]
pub struct ForwardArgs {
    /// While the server cannot be reached, try again (after 1 s, then twice as long each
    /// time, at most 30 s apart) until this much time has passed, such as `30s` or `10m`; the
    /// process a hook starts keeps trying for 10m [default: 0, one try]
    #[arg(long, value_name = "DURATION")]
    retry: Option<String>,
}

/// Which project on the server.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The project's name on the server, the same on every machine [default: $BATON_PROJECT,
    /// else the repository's root commit, which every clone shares].
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
}

pub fn dispatch(ctx: &Ctx, cmd: StoreCommand) -> Result<Report, CommandError> {
    match cmd {
        StoreCommand::Migrate => cmd_migrate(ctx),
        StoreCommand::Status => cmd_status(ctx),
        StoreCommand::Import(args) => cmd_import(ctx, &args),
        StoreCommand::Export(args) => cmd_export(ctx, &args),
        StoreCommand::Forward(args) => cmd_forward(ctx, &args),
    }
}

fn counts_json(c: &Counts) -> serde_json::Value {
    json!({
        "state": c.state,
        "journal_events": c.journal_events,
        "archived": c.archived,
    })
}

fn cmd_import(ctx: &Ctx, args: &ProjectArgs) -> Result<Report, CommandError> {
    // One round trip a record: thousands take a while.
    let mut progress = Progress::new("importing");
    let imported = store_transfer::import(ctx, args.project.as_deref(), &mut |done, total| {
        progress.update(done, total, "records");
    });
    progress.finish();
    match imported? {
        StoreImport::Refused { project, held } => Err(CommandError::new(
            ExitStatus::Refused,
            format!(
                "the project {project} already holds {held} records on the server; nothing was imported"
            ),
        )
        .hint(
            "import into a project that has nothing there yet (`--project`), or export it first",
        )),
        StoreImport::Imported { project, counts } => Ok(Report::ok(
            json!({ "project": project, "imported": counts_json(&counts) }),
            format!(
                "imported {} state files, {} journal events and {} archived files into {}",
                counts.state, counts.journal_events, counts.archived, project
            ),
        )),
    }
}

fn cmd_export(ctx: &Ctx, args: &ProjectArgs) -> Result<Report, CommandError> {
    // An fsync'd replace a file.
    let mut progress = Progress::new("exporting");
    let exported = store_transfer::export(ctx, args.project.as_deref(), &mut |done, total| {
        progress.update(done, total, "files");
    });
    progress.finish();
    match exported? {
        StoreExport::Refused { state_dir } => Err(CommandError::new(
            ExitStatus::Refused,
            format!(
                "{} already holds state; nothing was exported",
                state_dir.display()
            ),
        )
        .hint("export into a project whose state directory holds none (move it aside first)")),
        StoreExport::Exported { project, counts } => Ok(Report::ok(
            json!({ "project": project, "exported": counts_json(&counts) }),
            format!(
                "exported {} state files, {} journal events and {} archived files from {}",
                counts.state, counts.journal_events, counts.archived, project
            ),
        )),
    }
}

fn cmd_forward(ctx: &Ctx, args: &ForwardArgs) -> Result<Report, CommandError> {
    let retry = match &args.retry {
        None => std::time::Duration::ZERO,
        Some(raw) => baton_ops::env::parse_wait(raw).ok_or_else(|| {
            CommandError::usage(format!("--retry {raw:?} is not a duration"))
                .hint("pass a duration such as `--retry 30s` or `--retry 10m`")
        })?,
    };
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_secs(1);
    let mut done = baton_ops::forward::forward(ctx, &|| ctx.store())?;
    while done.unreachable.is_some() && started.elapsed() + pause <= retry {
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_secs(30));
        ctx.reconnect_next_time();
        let again = baton_ops::forward::forward(ctx, &|| ctx.store())?;
        let mut applied = std::mem::take(&mut done.applied);
        applied.extend(again.applied);
        let mut warnings = std::mem::take(&mut done.warnings);
        warnings.extend(again.warnings);
        done = baton_ops::forward::Forwarded {
            applied,
            warnings,
            ..again
        };
    }
    if let Some(e) = done.unreachable {
        let outbox = ctx
            .layout()?
            .state_dir
            .join(baton_store::outbox::OUTBOX_DIR);
        return Err(CommandError::from(e).hint(format!(
            "{} interrupts stay in {}; the next baton command here, or `baton store forward`, sends them",
            done.left,
            outbox.display()
        )));
    }
    let applied: Vec<serde_json::Value> = done
        .applied
        .iter()
        .map(|(p, i)| {
            json!({
                "session": p.session,
                "client": p.client,
                "event": p.event,
                "reason": p.reason,
                "recorded_at": p.at,
                "tickets": i.tickets,
                "runs": i.runs,
            })
        })
        .collect();
    let mut lines: Vec<String> = done
        .applied
        .iter()
        .map(|(p, i)| {
            let what: Vec<String> = i
                .tickets
                .iter()
                .chain(&i.runs)
                .map(|t| baton_core::text::esc(t).into_owned())
                .collect();
            let what = if what.is_empty() {
                "nothing active left to interrupt".to_string()
            } else {
                format!("interrupted {}", what.join(", "))
            };
            format!(
                "{} of session {} ({}, {}): {what}",
                baton_core::text::esc(&p.event),
                baton_core::text::esc(&p.session),
                p.reason,
                p.at
            )
        })
        .collect();
    let (server, verb) = match &done.server {
        Some(server) => (server.clone(), "forwarded"),
        None => ("the files".to_string(), "applied"),
    };
    let text = match (lines.len(), done.left) {
        (0, 0) => "nothing to forward".to_string(),
        (n, left) => {
            lines.insert(
                0,
                format!(
                    "{server}: {verb} {n} interrupt{}{}",
                    if n == 1 { "" } else { "s" },
                    if left > 0 {
                        format!("; {left} left in the outbox")
                    } else {
                        String::new()
                    }
                ),
            );
            lines.join("\n")
        }
    };
    let mut report = Report::ok(
        json!({ "server": done.server, "forwarded": applied, "left": done.left }),
        text,
    );
    report.warnings.extend(done.warnings);
    for p in &done.other_store {
        report.warnings.push(format!(
            "an interrupt of session {} recorded for {} is left in the outbox: the store configured now is another",
            baton_core::text::esc(&p.session),
            p.server.as_deref().unwrap_or("the files")
        ));
    }
    Ok(report)
}

fn versions(list: &[pg::Version]) -> serde_json::Value {
    list.iter()
        .map(|v| json!({ "version": v.version, "name": v.name }))
        .collect()
}

fn cmd_migrate(ctx: &Ctx) -> Result<Report, CommandError> {
    let settings = settings(ctx)?;
    let mut server = pg::connect_bounded(&settings, ctx.lock_wait)?;
    // Another machine's migration holds the lock for milliseconds: the whole of it, the wait
    // included, gets a state command's bound.
    let applied = pg::within(&server.dog, server.bound, &settings, "migrate", || {
        pg::migrate(&mut server.client, &settings)
    })?;
    let latest = pg::known().last().map_or(0, |v| v.version);
    let text = if applied.is_empty() {
        format!(
            "{}: the schema is up to date (version {latest})",
            settings.shown
        )
    } else {
        let names: Vec<String> = applied
            .iter()
            .map(|v| format!("V{} {}", v.version, v.name))
            .collect();
        format!(
            "{}: applied {}; the schema is at version {latest}",
            settings.shown,
            names.join(", ")
        )
    };
    Ok(Report::ok(
        json!({
            "server": settings.shown,
            "applied": versions(&applied),
            "version": latest,
        }),
        text,
    ))
}

fn cmd_status(ctx: &Ctx) -> Result<Report, CommandError> {
    let settings = settings(ctx)?;
    let mut server = pg::connect_bounded(&settings, ctx.lock_wait)?;
    let status = pg::within(
        &server.dog,
        server.bound,
        &settings,
        "read the status of",
        || pg::status(&mut server.client, &settings),
    )?;
    let known = pg::known();
    let at = status.applied.last().map_or(0, |v| v.version);
    let latest = known.last().map_or(0, |v| v.version);
    let pending: Vec<pg::Version> = known.into_iter().filter(|v| v.version > at).collect();
    let mut lines = vec![
        format!(
            "{}: PostgreSQL {}, server clock {}",
            settings.shown, status.server_version, status.server_now
        ),
        format!(
            "connection: {}",
            status.tls.as_deref().map_or(
                "not encrypted (over TCP, sslmode=require or verify-full asks for TLS; a Unix socket never uses it)".into(),
                |v| { format!("encrypted ({v})") }
            )
        ),
        format!("schema: version {at} of {latest}"),
    ];
    for (what, n) in &status.counts {
        lines.push(format!("  {what}: {n}"));
    }
    let mut report = Report::new(
        ExitStatus::Success,
        json!({
            "server": settings.shown,
            "server_version": status.server_version,
            "server_now": status.server_now,
            "tls": status.tls,
            "version": at,
            "latest": latest,
            "pending": versions(&pending),
            "counts": status.counts.iter().map(|(k, n)| json!({"kind": k, "count": n})).collect::<Vec<_>>(),
        }),
        lines.join("\n"),
    );
    if !pending.is_empty() {
        report = report.note(format!(
            "note: {} migration(s) to apply: run `baton store migrate`",
            pending.len()
        ));
    }
    if at > latest {
        report = report.warn(format!(
            "the server's schema is at version {at}, newer than this baton knows ({latest}): upgrade baton before writing to it"
        ));
    }
    Ok(report)
}
