//! Operations on ticket loops that more than one command (and the session-start survey) needs:
//! adopting a legacy `loop-state.json`, the ownership record of a loop, and the working tree as
//! a loop sees it.

use baton_core::journal::JournalEvent;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::env::Ctx;
use crate::error::OpError;
use crate::journal;
use crate::project::stored_path_in_project;
use baton_core::decide::loop_resume::last_write;
use baton_core::decide::ownership::{GateOutcome, OwnerRecord, Writer, gate};
use baton_core::key::{KeySource, loop_file_name, loop_key};
use baton_core::model::{LoopState, LoopStatus, SCHEMA_VERSION};
use baton_core::text::{esc, esc_or};
use baton_core::time::is_live;
use baton_core::{Decision, Reason};
use baton_store::git::{self, TreeStatus};
use baton_store::layout::LEGACY_LOOP_FILE;
use baton_store::{Expect, RecordKey, Versioned};
use baton_store::{Layout, LockScope, StateStore};

/// What the gate sees of a loop's owner. An interrupt is the owner's own release of the loop, so
/// an interrupted loop's last write no longer makes it live: otherwise the offer of the resume
/// check could not be accepted for 10 minutes after the owner's last transition.
pub fn owner_record(state: &LoopState, now: jiff::Timestamp) -> OwnerRecord<'_> {
    OwnerRecord {
        session: state.session_id.as_deref(),
        liveness: state.liveness(now),
        batch_active: None,
        released: state.status == LoopStatus::Interrupted,
        epoch: state.owner_epoch,
    }
}

/// What legacy adoption did: notes to print first, and a legacy loop it left in place because
/// a live session still writes it.
#[derive(Default)]
pub struct Adoption {
    pub notes: Vec<String>,
    pub held: Option<(String, Versioned<LoopState>)>,
}

impl Adoption {
    /// The legacy loop left in place for `key`, if that is the key asked about.
    pub fn held_for(&self, key: &str) -> Option<&Versioned<LoopState>> {
        self.held.as_ref().filter(|(k, _)| k == key).map(|(_, l)| l)
    }
}

/// Adopts a legacy `.agentic/loop-state.json` onto its keyed file, under the locks of both.
///
/// The keyed file is written first and the legacy one removed second, so a crash in between
/// leaves both; the next run sees the keyed file equal to what adoption would write and only
/// removes the legacy one. A keyed file that differs wins, and the legacy file is archived
/// rather than deleted. An unreadable legacy file is reported and left alone, and so is one
/// that another session is still writing: moving it would lose that session's next write.
pub fn adopt_legacy(store: &dyn StateStore, ctx: &Ctx) -> Result<Adoption, OpError> {
    let mut adoption = Adoption::default();
    // Most projects have no legacy file; seeing that takes no lock.
    if !store.exists()? || !store.contains(&RecordKey::LegacyLoop)? {
        return Ok(adoption);
    }
    let _legacy_lock = store.lock(LockScope::LegacyLoop)?;
    let legacy = match store.read_legacy_loop() {
        Ok(None) => return Ok(adoption),
        Ok(Some(loaded)) => loaded,
        Err(e) => {
            adoption.notes.push(format!(
                "warning: legacy state skipped: {}",
                esc(&e.to_string())
            ));
            return Ok(adoption);
        }
    };
    if let Err(e) = legacy.writable() {
        adoption.notes.push(format!(
            "warning: legacy state skipped: {}",
            esc(&e.to_string())
        ));
        return Ok(adoption);
    }
    let mut adopted = legacy.state.clone();
    let key = legacy_key(&adopted);
    let legacy_name = store.name(&RecordKey::LegacyLoop);
    let legacy_read = legacy.expect();
    // The ownership gate, whatever the status: the originating Stop hook marks the legacy file
    // `interrupted` at the end of every turn of a session that goes on working, so a recent
    // write by another session (or by no session, for a caller that has one) is live state.
    let mine = adopted.owner() == ctx.session();
    if !mine && is_live(ctx.now, adopted.liveness(ctx.now)) {
        adoption.notes.push(format!(
            "note: legacy {} is held by live session {} ({}); left in place",
            legacy_name.display(),
            esc_or(adopted.owner(), "(no session id)"),
            last_write(&adopted, ctx.now)
        ));
        adoption.held = Some((key, legacy));
        return Ok(adoption);
    }
    adopted.loop_key = Some(key.clone());
    adopted.schema_version = SCHEMA_VERSION;
    let _key_lock = store.lock(LockScope::Loop(&key))?;
    let note = match store.read_loop(&key) {
        Err(e) => format!(
            "warning: legacy state not adopted, its keyed file is unreadable: {}",
            esc(&e.to_string())
        ),
        Ok(Some(keyed)) if keyed.state == adopted => {
            store.remove(&RecordKey::LegacyLoop, &legacy_read)?;
            format!(
                "note: finished adopting legacy {} onto {} (removed the leftover)",
                legacy_name.display(),
                loop_file_name(&key)
            )
        }
        Ok(Some(keyed))
            if keyed.state.status.is_terminal()
                && matches!(
                    gate(owner_record(&keyed.state, ctx.now), Writer { session: ctx.session(), epoch: None, force: false }, ctx.now, &loop_file_name(&key), "baton resume"),
                    GateOutcome::Refused(ref d) if d.rules() == ["gate.foreign-live-owner"]
                ) =>
        {
            // A finished loop that a live session still holds is that session's to clear.
            format!(
                "note: legacy {} not adopted yet: {} is finished but still held by live session {}",
                legacy_name.display(),
                loop_file_name(&key),
                esc_or(keyed.state.owner(), "(no session id)")
            )
        }
        Ok(Some(keyed)) if keyed.state.status.is_terminal() => {
            // Only a resumable (or live) keyed file wins; a finished one gives way.
            let archived = store.archive_loop(&key, &keyed.expect(), ctx.now)?;
            write_adopted(
                store,
                ctx,
                &key,
                &adopted,
                Some(&archived),
                &mut adoption.notes,
            )?;
            store.remove(&RecordKey::LegacyLoop, &legacy_read)?;
            format!(
                "note: adopted legacy {} onto {}; the finished keyed loop was moved to {}",
                legacy_name.display(),
                loop_file_name(&key),
                archived.display()
            )
        }
        Ok(Some(_)) => {
            let archived = store.archive(&RecordKey::LegacyLoop, &legacy_read, ctx.now)?;
            format!(
                "note: {} already exists and wins over legacy {}; the legacy file was moved to {}",
                loop_file_name(&key),
                legacy_name.display(),
                archived.display()
            )
        }
        Ok(None) => {
            write_adopted(store, ctx, &key, &adopted, None, &mut adoption.notes)?;
            store.remove(&RecordKey::LegacyLoop, &legacy_read)?;
            format!(
                "note: adopted legacy {} onto {}",
                legacy_name.display(),
                loop_file_name(&key)
            )
        }
    };
    adoption.notes.push(note);
    Ok(adoption)
}

/// Writes a legacy loop adopted onto its keyed file, with its `adopt` event (one transaction
/// on a server), under the key's lock; an event that could not be appended is a note, like
/// the rest of what adoption says. The legacy file is removed after: a crash between leaves
/// both, and the next adoption finds them the same and removes the leftover.
fn write_adopted(
    store: &dyn StateStore,
    ctx: &Ctx,
    key: &str,
    adopted: &LoopState,
    archived: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<(), OpError> {
    let event = journal::event(
        ctx,
        JournalEvent::Adopt,
        Some(adopted.owner_epoch),
        json!({
            "from": LEGACY_LOOP_FILE,
            "ticket": adopted.ticket_id,
            "owner": adopted.session_id,
            "status": adopted.status.as_str(),
            "archived": archived.map(|p| p.display().to_string()),
        }),
    );
    if let Some(w) = journal::write_loop(store, key, adopted, &Expect::Absent, &[event])? {
        notes.push(format!("warning: {w}"));
    }
    Ok(())
}

/// The key a legacy loop is adopted under: from its `ticket_id`, else `session-<sid>`, else
/// `legacy`.
pub fn legacy_key(state: &LoopState) -> String {
    let ticket = state.ticket_id.clone().unwrap_or_default();
    let (key, source) = loop_key(ticket.as_bytes(), state.session_id.as_deref(), String::new);
    if source == KeySource::NoSession {
        "legacy".to_string()
    } else {
        key
    }
}

/// What is said of a ticket whose legacy `loop-state.json` another live session still writes:
/// `live` to a check, `refused` (exit 3) to a write.
pub fn legacy_held(ctx: &Ctx, held: &LoopState, verdict: baton_core::Verdict, t: &str) -> Decision {
    let owner = esc_or(held.owner(), "(no session id)");
    Decision::new(
        verdict,
        Reason::new(
            baton_core::Rule::LoopLegacyHeld,
            format!(
                "session {owner} still writes the legacy {LEGACY_LOOP_FILE} for {t} ({}, {}): it is left in place",
                held.status.as_str(),
                last_write(held, ctx.now)
            ),
        ),
        Some(format!(
            "leave {t} to session {owner} (`baton loop show {t}`); once its last write is 10 minutes old, `baton resume {t}` adopts it"
        )),
    )
}

/// Whether the loop's branch (its recorded one when it exists, else HEAD) has commits beyond
/// its base (`origin/<base>` when that exists); `None` when there is no base or git cannot say.
pub fn work_committed(root: &Path, state: &LoopState) -> Option<bool> {
    let base = git::base_ref(root, state.base_branch.as_deref()?);
    let tip = state
        .branch
        .as_deref()
        .filter(|b| git::ref_exists(root, &format!("refs/heads/{b}")).unwrap_or(false))
        .unwrap_or("HEAD");
    git::commits_beyond(root, &base, tip).ok()?.map(|n| n > 0)
}

/// What never counts as a loop's partial work: baton's state directory, and the governing
/// Brief and Plan the loop points to (a conductor authors them; setting them aside in a stash
/// would take them out of the next worker's context).
///
/// The two paths come from the state file, so each is left out only when it passes the checks a
/// path argument passes (inside the project, no link, a file and a directory): a hostile path
/// must not hide real work from the tree check or from a stash.
pub fn not_work(layout: &Layout, state: &LoopState) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = layout.state_dir_in_tree().into_iter().collect();
    let artifacts = [
        (&state.brief_path, "brief_path", false),
        (&state.plan_path, "plan_path", true),
    ];
    for (path, what, dir) in artifacts {
        let Some(path) = path else { continue };
        if let Ok(checked) = stored_path_in_project(&layout.root, path, what, dir)
            && let Ok(rel) = checked.strip_prefix(&layout.root)
            && !rel.as_os_str().is_empty()
        {
            out.push(rel.to_path_buf());
        }
    }
    out
}

/// The working tree as a loop sees it: its branch, and whether anything that counts as work
/// changed.
pub fn loop_tree(layout: &Layout, state: &LoopState) -> Result<TreeStatus, OpError> {
    let excluded = not_work(layout, state);
    let refs: Vec<&Path> = excluded.iter().map(PathBuf::as_path).collect();
    Ok(git::tree_status(&layout.root, &refs)?)
}
