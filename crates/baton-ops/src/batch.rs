//! The batch as more than one command (and the session-start survey) sees it.

use baton_core::model::BatchState;
use baton_core::text::shell_quote;
use baton_core::text::{esc, esc_join};

/// The batch picks the ticket; the ticket's own loop resume picks the phase.
pub fn next_step(state: &BatchState) -> Option<String> {
    if state.status == "stalled" {
        return Some(
            "the batch stalled: ask the human, then resume it (`baton batch resume`) or start a new one (`baton batch start`)"
                .into(),
        );
    }
    if state.is_finished() {
        return None;
    }
    let resume = if state.is_active() {
        ""
    } else {
        "resume the batch with `baton batch resume`, then "
    };
    let blocked = esc_join(state.blocked().map(|t| t.ticket_id.as_str()));
    Some(match state.next_ticket() {
        Some(t) => format!(
            "{resume}ticket {}: `baton resume {}`",
            esc(&t.ticket_id),
            shell_quote(&esc(&t.ticket_id))
        ),
        None if state.blocked().next().is_some() => format!(
            "only blocked tickets are left ({}): replan them (`baton batch ticket <T> --status pending --replan <DETAIL>`), or end the batch with `baton batch finish --status stalled`",
            blocked
        ),
        None => "every ticket is done: `baton batch finish --status complete`".into(),
    })
}

/// The error of a batch command in a project without a batch.
pub fn missing_batch() -> crate::error::CommandError {
    crate::error::CommandError::usage(format!(
        "no {} in this project",
        baton_store::layout::BATCH_FILE
    ))
    .hint("start one with `baton batch start <T1> <T2>…`")
}
