//! The merge rule `baton init` adds to a project's `.gitattributes`: git's union driver for plan
//! ledgers, so appends made on two machines (or two branches) merge without a conflict. Each
//! side's new lines are kept; `ledger derive` reads them in the order of their timestamps, so
//! the verdicts do not depend on which side git put first.

/// The comment baton's rule carries, so a reader knows where it came from.
pub const COMMENT: &str =
    "# baton: a plan's ledger is append-only; appends from two machines merge without conflict";
/// The rule itself.
pub const RULE: &str = "plans/**/STATE.md merge=union";

/// `text` with baton's rule (and its comment) appended, unless the rule is already there.
pub fn upsert(text: Option<&str>) -> String {
    let text = text.unwrap_or_default();
    if text.lines().any(|l| l.trim() == RULE) {
        return text.to_string();
    }
    let sep = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{text}{sep}{COMMENT}\n{RULE}\n")
}

/// `text` without baton's rule and its comment; `None` when nothing else is left.
pub fn remove(text: &str) -> Option<String> {
    let kept: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| {
            let l = l.trim();
            l != RULE && l != COMMENT
        })
        .collect();
    let out = kept.concat();
    (!out.trim().is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_is_added_once_and_removed_whole() {
        let added = upsert(None);
        assert_eq!(added, format!("{COMMENT}\n{RULE}\n"));
        assert_eq!(upsert(Some(&added)), added, "idempotent");
        assert_eq!(remove(&added), None);
        let theirs = "*.png binary";
        let both = upsert(Some(theirs));
        assert_eq!(both, format!("*.png binary\n{COMMENT}\n{RULE}\n"));
        assert_eq!(remove(&both).as_deref(), Some("*.png binary\n"));
        // A rule the user wrote themselves counts as there.
        let own = "plans/**/STATE.md  merge=union\n";
        assert_eq!(upsert(Some(own)), format!("{own}{COMMENT}\n{RULE}\n"));
        let exact = format!("{RULE}\n");
        assert_eq!(upsert(Some(&exact)), exact);
    }
}
