//! The names of the journal's events, as baton writes them (`"event": "<name>"` in each line
//! of a loop's, the batch's or a run's `.jsonl` journal).
//!
//! The names on disk are strings and stay so: a reader takes the string it finds and compares
//! it with [`JournalEvent::as_str`] (or [`JournalEvent::parse`]s it), so a journal written by
//! an older or newer baton, or by another tool, still reads.

/// An event baton writes to a journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JournalEvent {
    /// A loop started (`loop init`).
    Init,
    /// A loop's phase transition (`loop set`).
    Set,
    /// A loop's governing artifact recorded (`loop artifact`).
    Artifact,
    /// A loop or a run interrupted.
    Interrupt,
    /// A loop, the batch or a run ended.
    Finish,
    /// A loop archived to start over (`resume fresh`).
    Fresh,
    /// Ownership moved from one session and epoch to another.
    Takeover,
    /// A loop, the batch or a run resumed.
    Resume,
    /// Legacy loop state adopted into its keyed file.
    Adopt,
    /// A hook's checkpoint of a running loop's position.
    Checkpoint,
    /// A batch started (`batch start`).
    Start,
    /// A batch ticket's status moved (`batch ticket`).
    Ticket,
    /// A run started (`run new`).
    New,
    /// A run's progress recorded (`run record`).
    Record,
    /// A run's lock released (`run release`).
    Release,
    /// A run imported from its originating file.
    Import,
    /// The supervisor launched the agent again.
    SuperviseRelaunch,
    /// One attempt of the supervised agent ended.
    SuperviseAttempt,
    /// The supervisor waits before a relaunch.
    SuperviseWait,
    /// Supervision ended.
    SuperviseStop,
}

impl JournalEvent {
    pub const ALL: [JournalEvent; 20] = [
        JournalEvent::Init,
        JournalEvent::Set,
        JournalEvent::Artifact,
        JournalEvent::Interrupt,
        JournalEvent::Finish,
        JournalEvent::Fresh,
        JournalEvent::Takeover,
        JournalEvent::Resume,
        JournalEvent::Adopt,
        JournalEvent::Checkpoint,
        JournalEvent::Start,
        JournalEvent::Ticket,
        JournalEvent::New,
        JournalEvent::Record,
        JournalEvent::Release,
        JournalEvent::Import,
        JournalEvent::SuperviseRelaunch,
        JournalEvent::SuperviseAttempt,
        JournalEvent::SuperviseWait,
        JournalEvent::SuperviseStop,
    ];

    /// The name as it is written in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            JournalEvent::Init => "init",
            JournalEvent::Set => "set",
            JournalEvent::Artifact => "artifact",
            JournalEvent::Interrupt => "interrupt",
            JournalEvent::Finish => "finish",
            JournalEvent::Fresh => "fresh",
            JournalEvent::Takeover => "takeover",
            JournalEvent::Resume => "resume",
            JournalEvent::Adopt => "adopt",
            JournalEvent::Checkpoint => "checkpoint",
            JournalEvent::Start => "start",
            JournalEvent::Ticket => "ticket",
            JournalEvent::New => "new",
            JournalEvent::Record => "record",
            JournalEvent::Release => "release",
            JournalEvent::Import => "import",
            JournalEvent::SuperviseRelaunch => "supervise.relaunch",
            JournalEvent::SuperviseAttempt => "supervise.attempt",
            JournalEvent::SuperviseWait => "supervise.wait",
            JournalEvent::SuperviseStop => "supervise.stop",
        }
    }

    /// The event a name read from a journal names; `None` for a name baton does not write.
    pub fn parse(name: &str) -> Option<JournalEvent> {
        JournalEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl std::fmt::Display for JournalEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name reads back as the event it is, and no two events share one.
    #[test]
    fn every_name_round_trips() {
        for e in JournalEvent::ALL {
            assert_eq!(JournalEvent::parse(e.as_str()), Some(e));
        }
        let mut names: Vec<&str> = JournalEvent::ALL.iter().map(|e| e.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), JournalEvent::ALL.len());
        assert_eq!(JournalEvent::parse("agent-died"), None);
    }

    /// The names on disk are the ones journals already hold.
    #[test]
    fn names_are_the_written_ones() {
        assert_eq!(JournalEvent::Takeover.as_str(), "takeover");
        assert_eq!(JournalEvent::SuperviseStop.as_str(), "supervise.stop");
        assert_eq!(JournalEvent::Set.to_string(), "set");
    }
}
