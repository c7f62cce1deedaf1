//! The run lock as a lease: who holds it, and whether that holder is provably gone.

use jiff::{SignedDuration, Timestamp};

use crate::model::Lease;
use crate::time::{age, human_age, parse_ts};

/// Where this command runs, and the agent process it acts for.
#[derive(Debug, Clone, Default)]
pub struct Here {
    pub host: String,
    pub boot_id: Option<String>,
    pub session: Option<String>,
    /// The holder process this caller would record: pid and start time.
    pub pid: Option<(u32, u64)>,
    /// The SHA-256 of the lease token this caller passes, if any: it identifies a holder that
    /// has neither a session nor a known process. (An epoch never identifies anyone: it is a
    /// fencing token that anyone can read.)
    pub token_sha256: Option<String>,
    /// The state is on a server every machine shares: a host name then no longer tells one
    /// machine from another (containers, cloned machines), so a lease taken in another boot of
    /// "this" host is another machine's, not one from before a reboot.
    pub shared_store: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    Free,
    /// Held by this caller (same session, or same process on this host and boot).
    Mine,
    /// Held by a holder not provably gone.
    Live(String),
    /// Provably gone: taken over with epoch + 1.
    Stale(String),
}

/// Decides the lease. `holder_alive` is the shell's look at the holder's process: `Some` only
/// when the lease was taken on this host and boot with a known pid and start time. When it is
/// `Some`, it decides: a running holder is live however old its heartbeat, a gone one stale.
/// The heartbeat TTL decides only when the process cannot be checked (another machine, no pid
/// recorded). A lease taken in an earlier boot of this host is stale.
pub fn lease_state(
    lease: Option<&Lease>,
    here: &Here,
    holder_alive: Option<bool>,
    now: Timestamp,
    ttl: SignedDuration,
) -> LeaseState {
    let Some(lease) = lease else {
        return LeaseState::Free;
    };
    let same_machine =
        lease.host == here.host && lease.boot_id.is_some() && lease.boot_id == here.boot_id;
    let same_session = here.session.is_some() && lease.session == here.session;
    // A pid is as public as an epoch (`run show` prints it): it identifies the holder only for a
    // caller whose session does not say it is someone else.
    let other_session = here.session.is_some() && lease.session.is_some() && !same_session;
    let same_process = same_machine
        && !other_session
        && here.pid.is_some()
        && lease.pid.zip(lease.pid_start) == here.pid;
    let same_token = here.token_sha256.is_some() && lease.token_sha256 == here.token_sha256;
    if same_session || same_process || same_token {
        return LeaseState::Mine;
    }
    let holder = describe(lease);
    let beat_age = parse_ts(Some(&lease.heartbeat_at)).map(|t| age(now, t));
    let other_boot = lease.host == here.host
        && lease.boot_id.is_some()
        && here.boot_id.is_some()
        && lease.boot_id != here.boot_id;
    if other_boot && !here.shared_store {
        return LeaseState::Stale(format!("{holder} was taken before this machine rebooted"));
    }
    // The holder's process, when it can be looked at, decides alone: a running holder keeps
    // its lock however long it went without a heartbeat (one long tool call sends none), as a
    // lock held by a process is released only by its death.
    match holder_alive {
        Some(false) => {
            return LeaseState::Stale(format!(
                "{holder}: that process is gone from this host and boot"
            ));
        }
        Some(true) => {
            let pid = lease
                .pid
                .map_or_else(|| "its process".to_string(), |p| format!("pid {p}"));
            let beat = match beat_age {
                Some(a) if a > ttl => format!(
                    "its last heartbeat was {} ago, past the {} TTL: a long tool call sends none",
                    human_age(a),
                    human_age(ttl)
                ),
                Some(a) => format!("its last heartbeat was {} ago", human_age(a)),
                None => "it has no readable heartbeat".to_string(),
            };
            return LeaseState::Live(format!("{holder}: {pid} is still running ({beat})"));
        }
        None => {}
    }
    // The process cannot be checked from here: the heartbeat alone decides.
    let unchecked = if lease.host != here.host || other_boot {
        "is on another machine, whose process cannot be checked from here"
    } else {
        "has no process that can be checked from here"
    };
    match beat_age {
        Some(a) if a <= ttl => {
            if lease.host != here.host || other_boot {
                LeaseState::Live(format!(
                    "{holder} {unchecked}: it lives by its heartbeat alone, sent {} ago, within the {} TTL",
                    human_age(a),
                    human_age(ttl)
                ))
            } else {
                LeaseState::Live(format!(
                    "{holder} {unchecked}: its heartbeat decides, sent {} ago, within the {} TTL",
                    human_age(a),
                    human_age(ttl)
                ))
            }
        }
        Some(a) => LeaseState::Stale(format!(
            "{holder} {unchecked}, and has not sent a heartbeat for {}, past the {} TTL",
            human_age(a),
            human_age(ttl)
        )),
        None => LeaseState::Stale(format!(
            "{holder} {unchecked}, and has no readable heartbeat"
        )),
    }
}

fn describe(lease: &Lease) -> String {
    let who = lease
        .session
        .as_deref()
        .map_or_else(|| "no session".to_string(), |s| format!("session {s}"));
    let pid = lease
        .pid
        .map_or_else(|| "pid unknown".to_string(), |p| format!("pid {p}"));
    format!("the lock holder ({who}, {pid} on {})", lease.host)
}

/// The default TTL of the lease.
pub const DEFAULT_TTL: SignedDuration = SignedDuration::from_secs(600);

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn lease(host: &str, session: &str, beat_minutes_ago: i64) -> Lease {
        let t = crate::time::format_ts(now() - SignedDuration::from_mins(beat_minutes_ago));
        Lease {
            session: Some(session.into()),
            host: host.into(),
            boot_id: Some("boot-1".into()),
            pid: Some(42),
            pid_start: Some(1000),
            pid_source: "flag".into(),
            acquired_at: t.clone(),
            heartbeat_at: t,
            epoch: 3,
            token_sha256: None,
        }
    }

    fn here(session: &str) -> Here {
        Here {
            host: "h1".into(),
            boot_id: Some("boot-1".into()),
            session: Some(session.into()),
            pid: Some((7, 70)),
            token_sha256: None,
            shared_store: false,
        }
    }

    #[test]
    fn another_boot_of_this_host_is_a_reboot_with_files_and_another_machine_with_a_server() {
        let mut taken = lease("h1", "A", 1);
        taken.boot_id = Some("boot-0".into());
        let files = lease_state(Some(&taken), &here("B"), None, now(), DEFAULT_TTL);
        assert!(
            matches!(&files, LeaseState::Stale(why) if why.contains("rebooted")),
            "{files:?}"
        );
        let shared = Here {
            shared_store: true,
            ..here("B")
        };
        let server = lease_state(Some(&taken), &shared, None, now(), DEFAULT_TTL);
        assert!(
            matches!(&server, LeaseState::Live(why) if why.contains("another machine")),
            "{server:?}"
        );
    }

    /// One row per liveness rule of the run lock.
    #[test]
    fn lease_table() {
        let ttl = DEFAULT_TTL;
        let kind = |s: LeaseState| match s {
            LeaseState::Free => "free",
            LeaseState::Mine => "mine",
            LeaseState::Live(_) => "live",
            LeaseState::Stale(_) => "stale",
        };
        assert_eq!(
            kind(lease_state(None, &here("B"), None, now(), ttl)),
            "free"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "B", 1)),
                &here("B"),
                Some(false),
                now(),
                ttl
            )),
            "mine"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 1)),
                &here("B"),
                Some(true),
                now(),
                ttl
            )),
            "live",
            "holder running"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 1)),
                &here("B"),
                Some(false),
                now(),
                ttl
            )),
            "stale",
            "holder killed"
        );
        match lease_state(
            Some(&lease("h1", "A", 25)),
            &here("B"),
            Some(true),
            now(),
            ttl,
        ) {
            LeaseState::Live(why) => assert!(
                why.contains("pid 42 is still running")
                    && why.contains("last heartbeat was 25m ago, past the 10m TTL"),
                "the process decided, whatever the heartbeat's age: {why}"
            ),
            other => panic!("holder running, heartbeat past TTL: {other:?}"),
        }
        let mut unreadable = lease("h1", "A", 1);
        unreadable.heartbeat_at = "garbage".into();
        assert_eq!(
            kind(lease_state(
                Some(&unreadable),
                &here("B"),
                Some(true),
                now(),
                ttl
            )),
            "live",
            "holder running, heartbeat unreadable"
        );
        assert_eq!(
            kind(lease_state(Some(&unreadable), &here("B"), None, now(), ttl)),
            "stale",
            "process unchecked, heartbeat unreadable"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 25)),
                &here("B"),
                Some(false),
                now(),
                ttl
            )),
            "stale",
            "holder killed, heartbeat past TTL"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 11)),
                &here("B"),
                None,
                now(),
                ttl
            )),
            "stale",
            "no pid: heartbeat past TTL"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h2", "A", 1)),
                &here("B"),
                None,
                now(),
                ttl
            )),
            "live",
            "other host, fresh"
        );
        match lease_state(Some(&lease("h2", "A", 1)), &here("B"), None, now(), ttl) {
            LeaseState::Live(why) => assert!(
                why.contains("another machine") && why.contains("heartbeat alone"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            kind(lease_state(
                Some(&lease("h2", "A", 11)),
                &here("B"),
                None,
                now(),
                ttl
            )),
            "stale",
            "other host, expired"
        );
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 1)),
                &here("B"),
                None,
                now(),
                ttl
            )),
            "live",
            "no pid: heartbeat decides"
        );
        let mut rebooted = lease("h1", "A", 1);
        rebooted.boot_id = Some("boot-0".into());
        assert_eq!(
            kind(lease_state(Some(&rebooted), &here("B"), None, now(), ttl)),
            "stale",
            "rebooted"
        );
        let mut same_process = lease("h1", "A", 1);
        same_process.pid = Some(7);
        same_process.pid_start = Some(70);
        let sessionless = Here {
            session: None,
            ..here("B")
        };
        assert_eq!(
            kind(lease_state(
                Some(&same_process),
                &sessionless,
                Some(true),
                now(),
                ttl
            )),
            "mine",
            "same agent process, no session saying otherwise"
        );
        assert_eq!(
            kind(lease_state(
                Some(&same_process),
                &here("B"),
                Some(true),
                now(),
                ttl
            )),
            "live",
            "another session naming the holder's (public) pid is not the holder"
        );
        // The epoch is public (`run show` prints it): passing it proves nothing.
        let epoch_only = Here {
            session: None,
            pid: None,
            ..here("B")
        };
        assert_eq!(
            kind(lease_state(
                Some(&lease("h1", "A", 1)),
                &epoch_only,
                Some(true),
                now(),
                ttl
            )),
            "live",
            "no identity, no lock"
        );
        let mut tokened = lease("h1", "A", 1);
        tokened.session = None;
        tokened.token_sha256 = Some("abc".into());
        let with = |t: &str| Here {
            token_sha256: Some(t.into()),
            ..epoch_only.clone()
        };
        assert_eq!(
            kind(lease_state(
                Some(&tokened),
                &with("abc"),
                Some(true),
                now(),
                ttl
            )),
            "mine",
            "the holder's token identifies it"
        );
        assert_eq!(
            kind(lease_state(
                Some(&tokened),
                &with("xyz"),
                Some(true),
                now(),
                ttl
            )),
            "live",
            "another token does not"
        );
        same_process.pid_start = Some(71);
        assert_eq!(
            kind(lease_state(
                Some(&same_process),
                &here("B"),
                Some(false),
                now(),
                ttl
            )),
            "stale",
            "pid reused by another process"
        );
    }
}
