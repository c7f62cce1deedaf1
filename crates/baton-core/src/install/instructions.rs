//! The short text that tells the agent when to call baton: a whole skill file for Claude Code,
//! a marked block in `AGENTS.md` (Codex) or `GEMINI.md` (Gemini CLI) for the others.

pub const BEGIN: &str = "<!-- baton:begin -->";
pub const END: &str = "<!-- baton:end -->";

/// What the agent needs to know, whichever client runs it: the one source of every client's
/// copy (Claude Code's skill, the block in `AGENTS.md` or `GEMINI.md`).
pub const GUIDE: &str = "\
baton keeps this project's run state in `.agentic/`, so an interrupted run resumes where it
stopped. Call it from the shell; the session id is found automatically.

- At session start: read the resume packet the session-start hook gave you; if there is none,
  run `baton resume` and follow its `next:` line.
- To take over an offered resume: `baton resume accept <ticket>`; to start over instead:
  `baton resume fresh <ticket>`.
- Stopping on purpose: commit, then `baton pause --reason \"<why>\"`.
- Where things stand: `baton status`.

Record the work in the form it takes here (one of these):

- A ticket loop: `baton loop init <ticket>` to start; at every phase transition
  `baton loop set <ticket> --phase <phase> --action <action>`; at the end
  `baton loop finish <ticket> --status complete` (or `stalled`).
- A pipeline run: `baton run new --plan <plan-file>` prints the run id; after each agent
  `baton run record <run-id> --agent <name>`; after an interruption `baton run resume <run-id>`
  says whether to replan, ratify or restore; at the end `baton run finish <run-id>`.
- A plan's ledger (`plans/<plan>/STATE.md`): `baton ledger start <plan> --phase <n>` before a
  phase, `baton gate run <plan> --phase <n>` for its exit gates, then
  `baton ledger complete <plan> --phase <n> --tests <x/y>`; after a compaction or a new
  session, `baton ledger derive <plan>` says where the plan stands. A phase is done only when
  `baton verdict <plan> --phase <n>` says `verified` (its gates passed on the tree as it is):
  claim completion only through baton's ledger, never in prose, and when a stop is
  refused with baton's reason, do what it says. For a goal (`/goal`, Codex's goal), take the
  condition `baton goal <plan> --phase <n>` prints.
- A feature worked task by task: `baton continue` shows the active feature, the task to
  resume and its resume packet; `baton continue --set-resume-point --done <task>` moves the
  markers when a task is done.

- Never edit the files under `.agentic/` by hand: baton writes them atomically and checks who
  owns them.
- A refusal (exit 3) or a question for a human (exit 4) prints the reason and the next step:
  follow it instead of working around it.
";

/// Claude Code's skill file: frontmatter with `name` and `description`, then the guide.
pub fn skill_file() -> String {
    format!(
        "---\nname: baton\ndescription: When and how to record this project's run state with baton: at session start, at every phase transition, when pausing. Use it whenever you start, resume, advance or stop work on a ticket, a pipeline run, a plan's phase or a feature's task.\n---\n\n# baton\n\n{GUIDE}"
    )
}

/// The marked block for `AGENTS.md` or `GEMINI.md`.
pub fn block() -> String {
    format!("{BEGIN}\n## baton\n\n{GUIDE}{END}\n")
}

/// `text` with the block in it: replaced in place when there, else appended after a blank line.
pub fn upsert_block(text: Option<&str>) -> String {
    let block = block();
    let text = text.unwrap_or_default();
    if let Some((start, end)) = find_block(text) {
        return format!("{}{block}{}", &text[..start], &text[end..]);
    }
    if text.is_empty() {
        return block;
    }
    let sep = if text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{sep}{block}")
}

/// `text` without the block and the blank line before it; `None` when nothing else is left.
pub fn remove_block(text: &str) -> Option<String> {
    let Some((start, end)) = find_block(text) else {
        return Some(text.to_string());
    };
    let before = &text[..start];
    let before = before
        .strip_suffix("\n\n")
        .map_or(before, |b| &before[..b.len() + 1]);
    let out = format!("{before}{}", &text[end..]);
    (!out.trim().is_empty()).then_some(out)
}

/// The byte range of the block, from its begin marker to the end of its end marker's line.
fn find_block(text: &str) -> Option<(usize, usize)> {
    let start = text.find(BEGIN)?;
    let end = start + text[start..].find(END)? + END.len();
    let end = if text[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_stays_short() {
        assert!(skill_file().lines().count() < 60, "{}", skill_file());
        assert!(block().lines().count() < 60);
    }

    #[test]
    fn the_guide_covers_the_four_protocols() {
        for command in [
            "baton loop set",
            "baton run record",
            "baton ledger complete",
            "baton continue",
        ] {
            assert!(GUIDE.contains(command), "{command}");
        }
    }

    #[test]
    fn the_block_is_appended_replaced_in_place_and_removed() {
        let user = "# Project\n\nRules.\n";
        let once = upsert_block(Some(user));
        assert!(once.starts_with(user));
        assert_eq!(upsert_block(Some(&once)), once);
        assert_eq!(remove_block(&once).as_deref(), Some(user));
        let outdated = once.replace("## baton\n", "## baton (old)\n");
        assert_eq!(upsert_block(Some(&outdated)), once);
    }

    #[test]
    fn a_file_holding_only_the_block_goes() {
        assert_eq!(remove_block(&upsert_block(None)), None);
    }

    #[test]
    fn text_after_the_block_stays() {
        let text = format!("a\n\n{}b\n", block());
        assert_eq!(remove_block(&text).as_deref(), Some("a\nb\n"));
    }
}
