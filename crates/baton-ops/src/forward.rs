//! A session's failure or end, applied from its record. The hook's first durable act is one
//! record of the failure in this machine's outbox (`baton_store::outbox`, a fixed number of
//! syncs whatever the session owns); what it implies for each loop, lease, batch and feature is
//! applied from that record afterwards, exactly once: with the file store by the hook itself
//! while it lives, with a PostgreSQL store by a process the hook starts (`baton store forward`),
//! and in both cases by whatever command or hook of this project reads the state next, which
//! applies every record here first (`anything_pending`, then `forward`).
//!
//! A session whose client died with a turn open and no hook heard it is recorded the same way
//! by the reader that finds it, from the evidence the client left (`record_dead_turns`).

use jiff::Timestamp;

use crate::env::Ctx;
use crate::error::OpError;
use crate::owned::{Interrupted, interrupt_owned, owned};
use baton_core::model::InterruptReason;
use baton_core::time::{format_ts, parse_ts};
use baton_store::Layout;
use baton_store::StateStore;
use baton_store::outbox::{self, Pending};
use baton_store::sessions::SessionFiles;

/// A session's work stopping, as its hook saw it.
#[derive(Debug, Clone)]
pub struct Stop {
    pub client: String,
    pub session: String,
    /// The client's event (`StopFailure`, `SessionEnd`).
    pub event: String,
    /// A session end (the session's active batch is interrupted too), not a failure the
    /// session goes on after.
    pub end: bool,
    pub reason: InterruptReason,
    pub evidence: String,
    pub resume_after: Option<Timestamp>,
    /// What the limit said, as the client passed it: the window of the account it closes.
    pub message: Option<String>,
    /// The failure's time by its evidence, for a failure a reader found (`Pending::before`):
    /// work written after it is not this failure's.
    pub before: Option<Timestamp>,
}

/// What interrupting a session's work did, and what went wrong without stopping it.
#[derive(Debug, Default)]
pub struct Stopped {
    pub interrupted: Interrupted,
    pub warnings: Vec<String>,
}

/// Interrupts what `stop.session` owns, as that session (`ctx.session` is set to it): its
/// active loops and run leases, the feature for a rate limit of a session on it, and on a
/// session end its active batch, unless a pause covers the batch. Work written after
/// `stop.before` is left as it is. A failure adds the tickets it interrupted to the session's
/// note, for its next prompt to take back, unless the session has ended since (its record and
/// its note are gone: it forgot them).
pub fn interrupt_session(
    ctx: &Ctx,
    store: &dyn StateStore,
    stop: &Stop,
) -> (Stopped, Result<(), OpError>) {
    let mut ctx = ctx.clone();
    ctx.session = Some(stop.session.clone());
    let mut done = Stopped::default();
    let mut held = match owned(store, &stop.session) {
        Ok(held) => held,
        Err(e) => return (done, Err(e)),
    };
    if let Some(before) = stop.before {
        let now = ctx.now;
        let after = |t: Option<Timestamp>| t.is_some_and(|t| t > before);
        held.loops.retain(|(_, s)| !after(s.liveness(now)));
        held.runs.retain(|r| {
            !after(
                r.lease
                    .as_ref()
                    .and_then(|l| parse_ts(Some(&l.heartbeat_at))),
            )
        });
        if held.batch.as_ref().is_some_and(|b| after(b.liveness(now))) {
            held.batch = None;
        }
    }
    let (interrupted, result) = interrupt_owned(
        &ctx,
        store,
        &held,
        stop.reason,
        &stop.evidence,
        stop.resume_after,
    );
    // A limit that names its reset closes the account's window for everyone on it, whether or
    // not this session owned any work: after the work's own interrupt, which the client's
    // deadline for the hook is for (the account is read from the client's files).
    if let (InterruptReason::RateLimit, Some(reset), Some(client)) = (
        stop.reason,
        stop.resume_after,
        baton_core::client::Client::parse(&stop.client),
    ) {
        // The limit's own words name its window; baton's evidence line is the fallback.
        let text = stop.message.as_deref().unwrap_or(&stop.evidence);
        let account = crate::window::ctx_account(&ctx, client);
        let by = crate::window::who(&stop.session, ctx.now);
        if let Err(e) = crate::window::trip(store, &account, text, reset, by, ctx.now) {
            done.warnings.push(format!(
                "the account's window was not recorded closed: {}",
                e.message
            ));
        }
    }
    if !stop.end && !interrupted.tickets.is_empty() {
        // The hook makes the note right after its record; one killed in between left none,
        // and the session (its record still there: it has not ended) gets one all the same.
        let files = SessionFiles::new(store.layout(), &stop.client, &stop.session);
        let noted = match files.read_record() {
            Some(_) => files.note_interrupted(&interrupted.tickets),
            None => files
                .note_interrupted_if_kept(&interrupted.tickets)
                .map(drop),
        };
        if let Err(e) = noted {
            done.warnings.push(e.to_string());
        }
    }
    done.interrupted = interrupted;
    let batch = match (&held.batch, stop.end) {
        (Some(batch), true) => {
            let last = batch.liveness(ctx.now);
            let paused = match store.read_pause() {
                Ok(found) => {
                    found.is_some_and(|p| p.state.covering(Some(&stop.session), last).is_some())
                }
                Err(e) => {
                    done.warnings.push(e.to_string());
                    false
                }
            };
            if paused {
                Ok(())
            } else {
                crate::batch::interrupt(&ctx, store, stop.reason).map(|_| ())
            }
        }
        _ => Ok(()),
    };
    (done, result.and(batch))
}

/// The server `ctx`'s store URL names, as shown (no password); `None` with the file store.
pub fn shared_server(ctx: &Ctx, layout: &Layout) -> Result<Option<String>, OpError> {
    #[cfg(feature = "postgres")]
    {
        Ok(ctx
            .store_url(Some(&layout.root))?
            .map(|url| baton_store::pg::config::redact(&url)))
    }
    #[cfg(not(feature = "postgres"))]
    {
        let _ = (ctx, layout);
        Ok(None)
    }
}

/// Records `stop` in this machine's outbox for `server` (`None`: the file store), synced,
/// without a round trip and without reading any state first.
pub fn record(
    ctx: &Ctx,
    layout: &Layout,
    server: Option<&str>,
    stop: &Stop,
) -> Result<(), OpError> {
    let pending = Pending {
        server: server.map(str::to_string),
        project: ctx.settings.project.clone().filter(|_| server.is_some()),
        client: stop.client.clone(),
        session: stop.session.clone(),
        event: stop.event.clone(),
        end: stop.end,
        reason: stop.reason.as_str().to_string(),
        evidence: stop.evidence.clone(),
        resume_after: stop.resume_after.map(format_ts),
        message: stop.message.clone(),
        at: format_ts(ctx.now),
        before: stop.before.map(format_ts),
    };
    outbox::record(layout, &pending)?;
    Ok(())
}

/// What `forward` did.
#[derive(Debug, Default)]
pub struct Forwarded {
    /// The server the entries went to, as shown.
    pub server: Option<String>,
    /// Each entry applied: its session, its event and what it interrupted.
    pub applied: Vec<(Pending, Interrupted)>,
    /// Entries left for another store than the one configured now.
    pub other_store: Vec<Pending>,
    /// Entries still in the outbox (not applied, or failed).
    pub left: usize,
    pub warnings: Vec<String>,
    /// What stopped it short: the server could not be reached. The entry it was on and those
    /// after it stay for the next try.
    pub unreachable: Option<OpError>,
}

/// Applies every entry of this project's outbox to the store it was recorded for, oldest
/// first, each under its lock, and removes it once applied: an entry of the file store here, an
/// entry of a server on that server. What one entry meets (a record that cannot be read, work
/// taken over since) is a warning naming the entry, as the hook's own line would have been, and
/// the entry is done. A server that cannot be reached stops the pass: the entry it was on and
/// those after it stay for the next try (`unreachable`). An error is a setting to fix: entries
/// recorded for a server, and none configured now. The store is opened (`open`) only when an
/// entry is to be applied: a pass with nothing of its own to apply makes no round trip.
pub fn forward(
    ctx: &Ctx,
    open: &dyn Fn() -> Result<std::rc::Rc<dyn StateStore>, OpError>,
) -> Result<Forwarded, OpError> {
    let layout = ctx.layout()?;
    let mut done = Forwarded::default();
    outbox::clear_orphans(&layout);
    let entries = outbox::pending(&layout);
    if entries.is_empty() {
        return Ok(done);
    }
    let configured = shared_server(ctx, &layout)?;
    done.server = configured.clone();
    let mut for_no_server = 0;
    for (i, path) in entries.iter().enumerate() {
        let claim = match outbox::claim(path, ctx.lock_wait) {
            Ok(Some(claim)) => claim,
            Ok(None) => continue,
            Err(e) => {
                done.left += 1;
                done.warnings.push(e.to_string());
                continue;
            }
        };
        let pending = claim.pending.clone();
        let ours = match (&pending.server, &configured) {
            (None, None) => true,
            (Some(recorded), Some(now)) => {
                recorded == now && pending.project == ctx.settings.project
            }
            _ => false,
        };
        if !ours {
            done.left += 1;
            if pending.server.is_some() && configured.is_none() {
                for_no_server += 1;
            } else {
                done.other_store.push(pending);
            }
            continue;
        }
        let Some(reason) = InterruptReason::parse(&pending.reason) else {
            done.left += 1;
            done.warnings.push(format!(
                "{}: unknown interrupt reason {:?}; left in place",
                path.display(),
                pending.reason
            ));
            continue;
        };
        let stop = Stop {
            client: pending.client.clone(),
            session: pending.session.clone(),
            event: pending.event.clone(),
            end: pending.end,
            reason,
            evidence: pending.evidence.clone(),
            resume_after: parse_ts(pending.resume_after.as_deref()),
            message: pending.message.clone(),
            before: parse_ts(pending.before.as_deref()),
        };
        let recorded = parse_ts(Some(&pending.at));
        let at = if pending.server.is_none() {
            // The files are kept by this machine's clock, which stamped the record: the
            // interrupt is stamped with the time of the failure, whoever applies it, so that
            // applying it again finds it (and its journal event) already there.
            let mut at = ctx.clone();
            at.now = recorded.unwrap_or(ctx.now);
            at
        } else {
            // Stamped by the server's clock now: the interrupt is written now. No answer: the
            // server is out of reach, and this entry and the rest wait. A fixed clock
            // (`BATON_NOW`: a test, a replay) stamps it with the time its hook recorded,
            // whoever forwards it.
            match open().and_then(|_| ctx.at_write()) {
                Ok(mut at) => {
                    if ctx.fixed_clock
                        && let Some(recorded) = recorded
                    {
                        at.now = recorded;
                    }
                    at
                }
                Err(e) => {
                    done.left += entries.len() - i;
                    done.unreachable = Some(e);
                    break;
                }
            }
        };
        let store = match open() {
            Ok(store) => store,
            Err(e) => {
                done.left += entries.len() - i;
                done.unreachable = Some(e);
                break;
            }
        };
        let (stopped, result) = interrupt_session(&at, &*store, &stop);
        done.warnings.extend(stopped.warnings);
        if let Err(e) = result {
            // Lost on the way (the server answered before and not now): it waits too.
            if pending.server.is_some() && ctx.clock().is_err() {
                done.left += entries.len() - i;
                done.unreachable = Some(e);
                break;
            }
            done.warnings.push(format!(
                "{}: {} (the rest of the session's work was interrupted)",
                path.display(),
                e.message
            ));
        }
        // Applied: a crash from here to the removal leaves the entry, which the next pass
        // applies again before anything else here acts on the state, with nothing left to
        // change.
        let removed = baton_store::faults::point("outbox.before-remove")
            .map_err(|e| baton_store::StoreError::io("remove", path)(e))
            .and_then(|()| claim.done());
        if let Err(e) = removed {
            done.warnings.push(format!(
                "applied, but {} could not be removed ({e}); the next pass applies it again with nothing left to change",
                path.display()
            ));
        }
        done.applied.push((pending, stopped.interrupted));
    }
    if for_no_server > 0 {
        let outbox_dir = layout.state_dir.join(outbox::OUTBOX_DIR);
        let e = OpError::broken(format!(
                "{} holds {for_no_server} interrupts recorded for a PostgreSQL store, and none is configured now",
                outbox_dir.display(),
            ),
        )
        .hint("set BATON_STORE (or the project's .baton.toml) to the server they were recorded for, then run `baton store forward`");
        if done.applied.is_empty() {
            return Err(e);
        }
        done.warnings
            .push(format!("{} ({})", e.message, e.hints.join("; ")));
    }
    Ok(done)
}

impl Forwarded {
    /// Every warning, with what stopped it short, as one line each.
    pub fn all_warnings(self) -> Vec<String> {
        let mut warnings = self.warnings;
        if let Some(e) = self.unreachable {
            warnings.push(format!(
                "{} interrupts recorded on this machine have not reached the server yet ({}): `baton store forward` sends them",
                self.left, e.message
            ));
        }
        warnings
    }
}

/// How many of the most recently opened turns a reader looks at for a client that died unheard.
const OPEN_TURNS_LOOKED_AT: usize = 16;

/// Whether anything recorded on this machine waits to be applied before the state is read: the
/// outbox holds an entry or a killed writer's temp file. Turns whose client died unheard are
/// recorded first (`record_dead_turns`). No round trip; a directory read or two.
pub fn anything_pending(ctx: &Ctx, layout: &Layout) -> bool {
    record_dead_turns(ctx, layout);
    outbox::anything(layout)
}

/// Records, as a failure of its session, each turn left open in this project whose client
/// process has gone with no hook to hear how the turn ended (the client killed, the machine
/// too busy to run its failure hook in time), when the evidence the client left (its
/// transcript, as the turn's prompt hook named it, or its error reports) shows a rate limit
/// ended the turn (or that a person stopped it: the work was left, not lost to a crash). The failure is dated by the evidence (its file's last write): work the
/// session wrote after it is not the failure's. The turn is then closed. A turn whose evidence
/// says nothing is left as it is: the survey offers its work as a crash, from the owner's
/// process being gone. Nothing here is an error: a record that cannot be written leaves the
/// turn open for the next reader.
pub fn record_dead_turns(ctx: &Ctx, layout: &Layout) {
    use baton_core::client::{Client, Evidence, TranscriptEnd};
    for mark in baton_store::sessions::open_turns(layout, OPEN_TURNS_LOOKED_AT) {
        let session = &mark.record;
        let (Some(pid), Some(start)) = (session.client_pid, session.client_pid_start) else {
            continue;
        };
        if baton_store::process::is_alive(pid, start) {
            continue;
        }
        let Some(client) = Client::parse(&session.client) else {
            continue;
        };
        let def = client.def();
        let (end, written, whose) = match def.evidence() {
            Evidence::ErrorReports { .. } => (
                crate::evidence::report_evidence(def, layout, mark.opened, ctx.now),
                None,
                "error report",
            ),
            _ => {
                // Where the client writes it, as the prompt hook found it in the client's own
                // surroundings (the payload, or the client's user directory).
                match mark.transcript.as_ref().map(std::path::PathBuf::from) {
                    Some(path) => (
                        crate::evidence::read_transcript(
                            def,
                            &path,
                            ctx.now,
                            std::time::Duration::ZERO,
                            &baton_store::local_zone::local_zone,
                        ),
                        std::fs::metadata(&path).and_then(|m| m.modified()).ok(),
                        "transcript",
                    ),
                    None => (TranscriptEnd::Unknown, None, "transcript"),
                }
            }
        };
        let (reason, resume_after, what) = match end {
            TranscriptEnd::RateLimit { resets } => (
                InterruptReason::RateLimit,
                resets,
                "shows a rate limit ended that turn",
            ),
            // A person stopped the turn and closed the client: left on purpose, not a crash.
            TranscriptEnd::PersonStopped => (
                InterruptReason::SessionExpiry,
                None,
                "shows a person stopped that turn",
            ),
            TranscriptEnd::Unknown => continue,
        };
        let at = written
            .and_then(|t| Timestamp::try_from(t).ok())
            .filter(|t| *t <= ctx.now)
            .unwrap_or(ctx.now);
        let stop = Stop {
            client: client.as_str().to_string(),
            session: session.session_id.clone(),
            event: "ClientGone".into(),
            end: true,
            reason,
            evidence: format!(
                "the client's process (pid {pid}) is gone with a turn open, and its {whose} {what}; no hook recorded it"
            ),
            resume_after,
            message: None,
            before: Some(at),
        };
        let mut dated = ctx.clone();
        dated.now = at;
        let recorded = shared_server(ctx, layout)
            .and_then(|server| record(&dated, layout, server.as_deref(), &stop));
        if recorded.is_ok() {
            let files = SessionFiles::new(layout, &session.client, &session.session_id);
            let _ = files.close_turn();
        }
    }
}
