//! A session's failure or end: what it owns is interrupted, here and now with the file store,
//! or, with a shared store, recorded in this machine's outbox by the hook and applied on the
//! server by `forward` (the process the hook starts for it, or the next command that connects;
//! `baton_store::outbox` says why and how each entry is applied once).

use jiff::Timestamp;

use crate::env::Ctx;
use crate::error::{CommandError, ExitStatus};
use crate::owned::{Interrupted, interrupt_owned, owned};
use baton_core::model::InterruptReason;
use baton_core::time::{format_ts, parse_ts};
use baton_store::Layout;
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
    /// Note a failure's interrupted tickets for the session's next prompt, making the note. A
    /// forwarded failure adds them only to the (empty) note its hook made, while it is there: a
    /// session that has ended since forgot its notes, as it would have forgotten them written
    /// at once.
    pub note: bool,
}

/// What interrupting a session's work did, and what went wrong without stopping it.
#[derive(Debug, Default)]
pub struct Stopped {
    pub interrupted: Interrupted,
    pub warnings: Vec<String>,
}

/// Interrupts what `stop.session` owns, as that session (`ctx.session` is set to it): its
/// active loops and run leases, the feature for a rate limit of a session on it, and on a
/// session end its active batch, unless a pause covers the batch. A failure notes the tickets
/// it interrupted in the session's files, for its next prompt to take back.
pub fn interrupt_session(ctx: &Ctx, stop: &Stop) -> (Stopped, Result<(), CommandError>) {
    let mut ctx = ctx.clone();
    ctx.session = Some(stop.session.clone());
    let mut done = Stopped::default();
    let store = match ctx.store() {
        Ok(store) => store,
        Err(e) => return (done, Err(e)),
    };
    let held = match owned(&*store, &stop.session) {
        Ok(held) => held,
        Err(e) => return (done, Err(e)),
    };
    let (interrupted, result) =
        interrupt_owned(&ctx, &held, stop.reason, &stop.evidence, stop.resume_after);
    if !stop.end && !interrupted.tickets.is_empty() {
        let files = SessionFiles::new(store.layout(), &stop.client, &stop.session);
        let noted = if stop.note {
            files.note_interrupted(&interrupted.tickets)
        } else {
            files
                .note_interrupted_if_kept(&interrupted.tickets)
                .map(drop)
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
                crate::batch::interrupt(&ctx, stop.reason).map(|_| ())
            }
        }
        _ => Ok(()),
    };
    (done, result.and(batch))
}

/// The server `ctx`'s store URL names, as shown (no password); `None` with the file store.
pub fn shared_server(ctx: &Ctx, layout: &Layout) -> Result<Option<String>, CommandError> {
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

/// Records `stop` in this machine's outbox for `server`, synced, without a round trip.
pub fn record(ctx: &Ctx, layout: &Layout, server: &str, stop: &Stop) -> Result<(), CommandError> {
    let pending = Pending {
        server: server.to_string(),
        project: ctx.settings.project.clone(),
        client: stop.client.clone(),
        session: stop.session.clone(),
        event: stop.event.clone(),
        end: stop.end,
        reason: stop.reason.as_str().to_string(),
        evidence: stop.evidence.clone(),
        resume_after: stop.resume_after.map(format_ts),
        at: format_ts(ctx.now),
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
    pub unreachable: Option<CommandError>,
}

/// Applies every entry of this project's outbox on the server, oldest first, each under its
/// lock, and removes it once applied. What one entry meets on the server (a record that cannot
/// be read, work taken over since) is a warning naming the entry, as the hook's own line would
/// have been, and the entry is done. A server that cannot be reached stops the pass: the entry
/// it was on and those after it stay for the next try (`unreachable`). An error is a setting to
/// fix: no server configured for the entries there are.
pub fn forward(ctx: &Ctx) -> Result<Forwarded, CommandError> {
    let layout = ctx.layout()?;
    let mut done = Forwarded::default();
    outbox::clear_orphans(&layout);
    let entries = outbox::pending(&layout);
    if entries.is_empty() {
        return Ok(done);
    }
    let outbox_dir = layout.state_dir.join(outbox::OUTBOX_DIR);
    let Some(server) = shared_server(ctx, &layout)? else {
        return Err(CommandError::new(
            ExitStatus::Failure,
            format!(
                "{} holds {} interrupts recorded for a PostgreSQL store, and none is configured now",
                outbox_dir.display(),
                entries.len()
            ),
        )
        .hint("set BATON_STORE (or the project's .baton.toml) to the server they were recorded for, then run `baton store forward`"));
    };
    done.server = Some(server.clone());
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
        if pending.server != server || pending.project != ctx.settings.project {
            done.left += 1;
            done.other_store.push(pending);
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
            note: false,
        };
        // Stamped by the server's clock now: the interrupt is written now. No answer: the
        // server is out of reach, and this entry and the rest wait. A fixed clock (`BATON_NOW`:
        // a test, a replay) stamps it with the time its hook recorded, whoever forwards it.
        let at = match ctx.at_write() {
            Ok(mut at) => {
                if ctx.fixed_clock
                    && let Some(recorded) = parse_ts(Some(&pending.at))
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
        };
        let (stopped, result) = interrupt_session(&at, &stop);
        done.warnings.extend(stopped.warnings);
        if let Err(e) = result {
            // Lost on the way (the server answered before and not now): it waits too.
            if ctx.clock().is_err() {
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
                "applied on the server, but {} could not be removed ({e}); the next pass applies it again with nothing left to change",
                path.display()
            ));
        }
        done.applied.push((pending, stopped.interrupted));
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

/// Whether this project's outbox holds anything to forward or clean (one directory read; no
/// round trip).
pub fn anything_pending(layout: &Layout) -> bool {
    outbox::anything(layout)
}
