//! Moving a project's state between the file store and a PostgreSQL server (`store import`,
//! `store export`), and the server a command names.

use std::path::PathBuf;

use crate::env::Ctx;
use crate::error::OpError;
use baton_store::pg::{self, config};

/// The server named by `--store`, `BATON_STORE` or the project's setting, with what the URL
/// leaves out taken from PostgreSQL's own variables and password file.
pub fn settings(ctx: &Ctx) -> Result<config::Settings, OpError> {
    let root = ctx.layout().ok().map(|l| l.root);
    let url = ctx.store_url(root.as_deref())?.ok_or_else(|| {
        OpError::usage("no PostgreSQL server is named")
            .hint("pass `--store postgres://USER@HOST:PORT/DB`, or set BATON_STORE to that URL")
    })?;
    config::resolve(&url, ctx.store_surroundings()).map_err(|e| {
        OpError::usage(e).hint("a store URL reads like `postgres://user@db.internal:5432/baton`")
    })
}

/// The project's name on the server: `project`, else as every command names it.
fn project(ctx: &Ctx, project: Option<&str>) -> Result<String, OpError> {
    match project.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => Ok(p.to_string()),
        None => ctx.project_name(&ctx.layout()?.root),
    }
}

/// The project on the server, each round trip bounded as a state command's, and a call that
/// makes `round_trips` of them (an import's one transaction) `ROUND_TRIP` more for each.
fn records(
    ctx: &Ctx,
    name: Option<&str>,
    round_trips: usize,
) -> Result<pg::records::Records, OpError> {
    let settings = settings(ctx)?;
    let server = pg::connect_bounded(&settings, ctx.lock_wait)?;
    let extra = ROUND_TRIP.saturating_mul(u32::try_from(round_trips).unwrap_or(u32::MAX));
    Ok(pg::records::Records::new(
        server.client,
        settings,
        &project(ctx, name)?,
        &baton_store::process::host(),
    )
    .watched(server.dog, server.bound + extra, server.statement_timeout))
}

/// What one more round trip of a transfer may take on a healthy path, for its bound: ten times
/// a 20 ms network's round trip.
const ROUND_TRIP: std::time::Duration = std::time::Duration::from_millis(400);

/// How much state moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub state: usize,
    pub journal_events: usize,
    pub archived: usize,
}

impl Counts {
    fn of(moved: &pg::transfer::Moved) -> Counts {
        Counts {
            state: moved.state.len(),
            journal_events: moved.events(),
            archived: moved.archive.len(),
        }
    }
}

/// What `store import` did.
#[derive(Debug)]
pub enum StoreImport {
    /// The project already holds `held` records on the server: nothing was imported.
    Refused {
        project: String,
        held: i64,
    },
    Imported {
        project: String,
        counts: Counts,
    },
}

/// What `store export` did.
#[derive(Debug)]
pub enum StoreExport {
    /// The project's state directory already holds state: nothing was exported.
    Refused {
        state_dir: PathBuf,
    },
    Exported {
        project: String,
        counts: Counts,
    },
}

/// Copies this project's file store to the server (`project`, else the project's own name),
/// byte for byte, in one transaction, calling `progress(done, total)` after each record.
pub fn import(
    ctx: &Ctx,
    project: Option<&str>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<StoreImport, OpError> {
    let layout = ctx.layout()?;
    let moved = pg::transfer::collect(&layout)?;
    let records = records(ctx, project, moved.records())?;
    let project = records.project.clone();
    Ok(match pg::transfer::import(&records, &moved, progress)? {
        Some(held) => StoreImport::Refused { project, held },
        None => StoreImport::Imported {
            project,
            counts: Counts::of(&moved),
        },
    })
}

/// Writes the project's state on the server into this project's file store, byte for byte,
/// calling `progress(done, total)` after each file.
pub fn export(
    ctx: &Ctx,
    project: Option<&str>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<StoreExport, OpError> {
    let layout = ctx.layout()?;
    let records = records(ctx, project, 0)?;
    let moved = pg::transfer::fetch(&records)?;
    Ok(if pg::transfer::export(&layout, &moved, progress)? {
        StoreExport::Exported {
            project: records.project.clone(),
            counts: Counts::of(&moved),
        }
    } else {
        StoreExport::Refused {
            state_dir: layout.state_dir.clone(),
        }
    })
}
