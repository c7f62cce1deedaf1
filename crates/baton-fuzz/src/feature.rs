//! A feature's files: the pointer (`.aspis/current-feature.json`), its `TASKS.md` and a
//! `REVIEW_NEEDED` note.

use baton_core::feature::{
    FeaturePointer, Mark, PointerFacts, ResumeRequest, format_review_needed, parse_review_needed,
    parse_tasks, pointer_problems, resume_point, set_marks,
};

/// The first byte picks the file.
pub fn feature(data: &[u8]) {
    let (which, bytes) = crate::split_selector(data, 3);
    match which {
        0 => pointer(bytes),
        1 => tasks(&String::from_utf8_lossy(bytes)),
        _ => review(&String::from_utf8_lossy(bytes)),
    }
}

/// A pointer written back (as the originating project writes it) reads back as the same
/// object, and writing that again gives the same bytes; checking it and its scope returns.
fn pointer(bytes: &[u8]) {
    let Ok(pointer) = FeaturePointer::parse(bytes) else {
        return;
    };
    let written = pointer.to_bytes();
    let again = FeaturePointer::parse(&written).expect("a written pointer reads back");
    assert_eq!(
        again, pointer,
        "a pointer changed through a write and a read"
    );
    assert_eq!(again.to_bytes(), written, "writing a pointer is not stable");

    for facts in [
        PointerFacts {
            path_is_dir: true,
            path_inside_root: true,
            checked_out: pointer.branch(),
        },
        PointerFacts {
            path_is_dir: false,
            path_inside_root: false,
            checked_out: None,
        },
    ] {
        let _ = pointer_problems(&pointer, facts);
    }
    if let Some(scope) = pointer.scope() {
        for path in ["src/lib.rs", "README.md", "a/b/c", ""] {
            let _ = scope.contains(path);
        }
    }
    let mut moved = pointer.clone();
    moved.set_phase("build");
    let again = FeaturePointer::parse(&moved.to_bytes()).expect("a moved pointer reads back");
    assert_eq!(again.phase(), Some("build"));
    assert_eq!(again.fields().len(), moved.fields().len());
}

/// Setting the marks a task list already has changes no byte; setting a task's mark makes it
/// read with that mark and leaves every other task as it was; a resume point's marks, once
/// set, read back.
fn tasks(text: &str) {
    let list = parse_tasks(text);
    let _ = list.counts();
    let _ = list.duplicate_ids();
    for t in &list.tasks {
        let _ = list.last_checkpoint_before(t.line);
    }

    let same: Vec<(String, Mark)> = list.tasks.iter().map(|t| (t.id.clone(), t.mark)).collect();
    // An id on several lines with different marks is set to the last one asked: unchanged text
    // holds only when every line of an id carries one mark.
    let one_mark_per_id = list.tasks.iter().all(|t| {
        list.tasks
            .iter()
            .filter(|u| u.id == t.id)
            .all(|u| u.mark == t.mark)
    });
    if one_mark_per_id {
        assert_eq!(
            set_marks(text, &same),
            text,
            "setting the marks a list has changed it"
        );
    }

    for t in list.tasks.iter().take(4) {
        for mark in [Mark::Open, Mark::InProgress, Mark::Done] {
            let changed = set_marks(text, &[(t.id.clone(), mark)]);
            let after = parse_tasks(&changed);
            assert_eq!(
                after.tasks.len(),
                list.tasks.len(),
                "a task appeared or vanished"
            );
            assert_eq!(after.checkpoints, list.checkpoints, "a checkpoint changed");
            for (before, now) in list.tasks.iter().zip(&after.tasks) {
                assert_eq!((&now.id, now.line), (&before.id, before.line));
                if now.id == t.id {
                    assert_eq!(
                        now.mark, mark,
                        "task {} set to {mark:?} reads {:?}",
                        now.id, now.mark
                    );
                    assert_eq!(now.blocked, before.blocked, "a blocker changed");
                } else {
                    assert_eq!(now, before, "another task changed");
                }
            }
        }
    }

    for phase in ["plan", "build", "review"] {
        let Ok(point) = resume_point(phase, &list, &ResumeRequest::default()) else {
            continue;
        };
        let after = parse_tasks(&set_marks(text, &point.mark_pairs()));
        for change in &point.marks {
            for t in after.tasks.iter().filter(|t| t.id == change.task) {
                assert_eq!(
                    t.mark, change.to,
                    "task {} did not take its resume mark",
                    t.id
                );
            }
        }
    }
}

/// A note written by baton reads back as the note it wrote.
fn review(text: &str) {
    let note = parse_review_needed(text);
    let _ = note.headline();
    let written = format_review_needed(&note);
    let again = parse_review_needed(&written);
    let written_again = format_review_needed(&again);
    assert_eq!(
        written_again, written,
        "a note changed through a read and a write"
    );
}
