use clap::Args;
use serde_json::json;

use crate::output::Report;
use baton_core::model::{BatchState, LoopState};
use baton_ops::env::Ctx;
use baton_ops::error::CommandError;

/// Print the JSON Schemas of the files baton writes: loop-state, batch-state, run-state, the
/// pause marks and the resume-point record.
#[derive(Debug, Args)]
pub struct SchemaArgs {}

pub fn cmd_schema(_ctx: &Ctx, _args: SchemaArgs) -> Result<Report, CommandError> {
    let schemas = json!({
        "loop-state": schemars::schema_for!(LoopState),
        "batch-state": schemars::schema_for!(BatchState),
        "run-state": schemars::schema_for!(baton_core::model::RunState),
        "resume-point": schemars::schema_for!(baton_core::feature::ResumePointRecord),
        "pause": schemars::schema_for!(baton_core::model::Pauses),
    });
    let text = serde_json::to_string_pretty(&schemas).unwrap_or_default();
    Ok(Report::ok(schemas, text))
}
