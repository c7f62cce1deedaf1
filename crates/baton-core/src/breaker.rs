//! The account's window (SPEC section 11): when a session meets its account's usage limit and
//! the limit names a reset, every session and supervisor on that account waits for the reset
//! instead of spending into the closed window; at the reset one of them probes, and the rest
//! follow once the probe ran a turn without a limit.
//!
//! A breaker is one account's window of one client (`5h`, `weekly`, …), open until its reset.
//! The breakers live in the store (the machine's directory with the files, the server with a
//! PostgreSQL store), and every change to them is made under the store's lock of them by the
//! functions here: that is what makes exactly one waiter the probe.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::time::{format_ts, parse_ts};

/// The nearest reset an account's window has: a limit that resets sooner (a per-minute 429's
/// `retry after 30s`) limits requests, not the account, and opens no breaker.
pub const SHORTEST_WINDOW: SignedDuration = SignedDuration::from_mins(2);
/// A probe that has reported nothing for this long is given up, and the next waiter probes.
pub const PROBE_LEASE: SignedDuration = SignedDuration::from_mins(15);
/// The gap between the waiters that follow a good probe, in the order they began to wait.
pub const STAGGER: SignedDuration = SignedDuration::from_secs(10);
/// How long a breaker is kept once its probe went well (its followers read it to stagger).
pub const KEPT_SETTLED: SignedDuration = SignedDuration::from_hours(1);
/// How long a breaker is kept past its reset when no one probed it (no one waited).
pub const KEPT_UNPROBED: SignedDuration = SignedDuration::from_hours(24);

/// What identifies the account a client is logged in with, never a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The client's own account (and organization) identifiers.
    Account,
    /// A pool of usage shared by a team (a workspace), which its members' windows draw on.
    Pool,
    /// A one-way digest of the API key the client uses.
    ApiKey,
    /// Nothing identifies the account: the breaker is this machine's.
    Machine,
}

/// One client's account, as baton keys its window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub client: String,
    /// The key the breakers are kept under: the basis and its identifier (`account:<id>`,
    /// `pool:<id>`, `key:<digest>`, `machine:<host>`).
    pub key: String,
    /// A short label for people: never the identifier in full.
    pub label: String,
    pub basis: Basis,
    /// The team pool the account draws on as well, when the client names one (a Claude Code
    /// organization): a limit of the pool holds every member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<Box<Account>>,
}

impl Account {
    /// The account identified by `id` (already free of any secret) on `basis`, labelled by
    /// the first 8 characters of `id`.
    pub fn new(client: &str, basis: Basis, id: &str) -> Account {
        let short: String = id.chars().filter(|c| *c != '-').take(8).collect();
        Account::labelled(client, basis, id, &short)
    }

    /// `new`, shown as `shown` (a login name: no secret, and what a person knows it by).
    pub fn labelled(client: &str, basis: Basis, id: &str, shown: &str) -> Account {
        let (prefix, label) = match basis {
            Basis::Account => ("account", format!("{client} account {shown}")),
            Basis::Pool => ("pool", format!("{client} team pool {shown}")),
            Basis::ApiKey => ("key", format!("{client} API key {shown}")),
            Basis::Machine => ("machine", format!("{client} on {id}")),
        };
        Account {
            client: client.to_string(),
            key: format!("{prefix}:{id}"),
            label,
            basis,
            pool: None,
        }
    }

    /// The account that holds the breaker of a limit whose message is `text`: its team pool
    /// for a pooled budget (`You've hit your team's pooled group budget`), else itself.
    pub fn limited_by(&self, text: &str) -> &Account {
        match &self.pool {
            Some(pool) if text.to_ascii_lowercase().contains("pooled") => pool,
            _ => self,
        }
    }
}

/// Claude Code's account, from its `.claude.json`: `oauthAccount.accountUuid`, with the
/// organization's `organizationUuid` when there is one (a seat of a team plan has its own
/// window). Nothing else of the file is kept.
pub fn claude_account(json: &[u8]) -> Option<(String, Option<String>)> {
    #[derive(Deserialize)]
    struct File {
        #[serde(rename = "oauthAccount")]
        oauth: Option<Oauth>,
    }
    #[derive(Deserialize)]
    struct Oauth {
        #[serde(rename = "accountUuid")]
        account: Option<String>,
        #[serde(rename = "organizationUuid")]
        organization: Option<String>,
    }
    let oauth = serde_json::from_slice::<File>(json).ok()?.oauth?;
    let account = oauth.account.filter(|a| !a.trim().is_empty())?;
    Some((account, oauth.organization.filter(|o| !o.trim().is_empty())))
}

/// Claude Code's account as baton keys it: the account within its organization, drawing on
/// the organization's pool.
pub fn claude_account_of(account: &str, organization: Option<&str>) -> Account {
    let short: String = account.chars().filter(|c| *c != '-').take(8).collect();
    match organization {
        Some(org) => {
            let id = format!("{account}@{org}");
            let mut a = Account::labelled("claude", Basis::Account, &id, &short);
            a.pool = Some(Box::new(Account::new("claude", Basis::Pool, org)));
            a
        }
        None => Account::new("claude", Basis::Account, account),
    }
}

/// Gemini CLI's account, from `google_accounts.json`: the digest of its `active` address (an
/// address is no secret, but it is a person's; its digest keys the window as well).
pub fn gemini_account_id(json: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct File {
        active: Option<String>,
    }
    let active = serde_json::from_slice::<File>(json).ok()?.active?;
    let active = active.trim();
    (!active.is_empty()).then(|| key_digest(&active.to_ascii_lowercase()))
}

/// Copilot CLI's account, from its `config.json` (JSON after `//` comment lines): the GitHub
/// host and login of `lastLoggedInUser` (`last_logged_in_user` in older builds); only those
/// two fields are kept, whatever else (tokens) the file holds.
pub fn copilot_account(text: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct File {
        #[serde(rename = "lastLoggedInUser", alias = "last_logged_in_user")]
        last: Option<User>,
    }
    #[derive(Deserialize)]
    struct User {
        host: Option<String>,
        login: Option<String>,
    }
    let text = std::str::from_utf8(text).ok()?;
    let json: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let user = serde_json::from_str::<File>(&json).ok()?.last?;
    let login = user.login.filter(|l| !l.trim().is_empty())?;
    let host = user
        .host
        .filter(|h| !h.trim().is_empty())
        .unwrap_or_else(|| "https://github.com".into());
    Some((host, login))
}

/// What Codex's `auth.json` says of the account: `tokens.account_id` (the ChatGPT account the
/// login belongs to), or, for an API-key login, the key, which the caller only ever digests.
pub enum CodexLogin {
    Account(String),
    ApiKey(String),
}

pub fn codex_login(json: &[u8]) -> Option<CodexLogin> {
    #[derive(Deserialize)]
    struct File {
        #[serde(rename = "OPENAI_API_KEY")]
        key: Option<String>,
        tokens: Option<Tokens>,
        auth_mode: Option<String>,
    }
    #[derive(Deserialize)]
    struct Tokens {
        account_id: Option<String>,
    }
    let file = serde_json::from_slice::<File>(json).ok()?;
    let key = file.key.filter(|k| !k.trim().is_empty());
    // A login by key says so (`auth_mode`), whatever tokens an earlier login left.
    if file
        .auth_mode
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("apikey"))
    {
        return key.map(CodexLogin::ApiKey);
    }
    if let Some(id) = file
        .tokens
        .and_then(|t| t.account_id)
        .filter(|a| !a.trim().is_empty())
    {
        return Some(CodexLogin::Account(id));
    }
    key.map(CodexLogin::ApiKey)
}

/// The one-way digest an API key is known by: the first 16 hex digits of a SHA-256 of it, with
/// baton's own prefix so the digest matches no other tool's.
pub fn key_digest(key: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(format!("baton-account:{}", key.trim()).as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Who tripped a breaker, waits on it or probes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Who {
    /// A session's id, or a supervisor's (`supervise:<host>:<pid>`), or a check's.
    pub id: String,
    pub host: String,
    /// When it began (to wait, to probe).
    pub since: String,
}

/// The waiter that relaunches first after the reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub by: Who,
    /// When a turn ran without a limit after the reset: the window is open again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<String>,
}

/// One open window of one account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    pub client: String,
    pub account: String,
    pub label: String,
    pub basis: Basis,
    /// `5h`, `weekly`, `weekly-opus`, …, or `limit` when nothing says which.
    pub window: String,
    pub reset: String,
    pub opened: String,
    pub tripped_by: Who,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
    /// Who waits for the reset, in the order they began to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiters: Vec<Who>,
}

impl Breaker {
    /// A breaker of `account`'s `window`, open until `reset`.
    pub fn new(account: &Account, window: &str, reset: Timestamp, tripped_by: Who) -> Breaker {
        Breaker {
            client: account.client.clone(),
            account: account.key.clone(),
            label: account.label.clone(),
            basis: account.basis,
            window: window.to_string(),
            reset: format_ts(reset),
            opened: tripped_by.since.clone(),
            tripped_by,
            probe: None,
            waiters: Vec::new(),
        }
    }

    pub fn reset_at(&self) -> Option<Timestamp> {
        parse_ts(Some(&self.reset))
    }

    /// Whether its reset has passed and no turn has shown the window open since: what a turn
    /// that ran without a limit settles (`turn_ran`).
    pub fn awaits_turn(&self, now: Timestamp) -> bool {
        self.reset_at().is_some_and(|r| r <= now)
            && self.probe.as_ref().is_none_or(|p| p.ok.is_none())
    }

    /// Whether it holds `account`: the account's own, or its team pool's.
    pub fn of(&self, account: &Account) -> bool {
        self.client == account.client
            && (self.account == account.key
                || account.pool.as_ref().is_some_and(|p| self.account == p.key))
    }

    /// Whether it holds one window of one account (the same breaker as `other`).
    fn same(&self, other: &Breaker) -> bool {
        self.client == other.client && self.account == other.account && self.window == other.window
    }
}

/// Whether a limit that resets at `reset`, seen at `now`, is an account's window.
pub fn is_window(reset: Timestamp, now: Timestamp) -> bool {
    reset.duration_since(now) >= SHORTEST_WINDOW
}

/// The window a limit is of, from what its message says and how far off its reset is: a
/// weekly limit (or one whose reset is more than 6 hours off), a 5-hour one (or one whose reset
/// is within 6 hours); a model named in a weekly limit's message makes it that model's.
pub fn window_of(text: &str, reset: Timestamp, now: Timestamp) -> String {
    let lower = text.to_ascii_lowercase();
    // A model's own limit (`You've hit your Opus limit`) is a weekly one.
    if let Some(model) = ["opus", "sonnet", "haiku", "fable"]
        .iter()
        .find(|m| lower.contains(&format!("{m} limit")) || lower.contains(&format!("{m} weekly")))
    {
        return format!("weekly-{model}");
    }
    let five_hour = lower.contains("5-hour") || lower.contains("session limit");
    let far = reset.duration_since(now) > SignedDuration::from_hours(6);
    if lower.contains("weekly") || (!five_hour && far) {
        "weekly".to_string()
    } else {
        "5h".to_string()
    }
}

/// Opens `new` in `book`: a window already open keeps the later of the two resets; one whose
/// reset has passed (its probe met the limit again) opens anew with the new reset and no probe.
/// Its waiters stay. Returns whether anything changed.
pub fn open(book: &mut Vec<Breaker>, new: Breaker, now: Timestamp) -> bool {
    let Some(old) = book.iter_mut().find(|b| b.same(&new)) else {
        book.push(new);
        return true;
    };
    let old_reset = old.reset_at();
    let new_reset = new.reset_at();
    if old_reset.is_some_and(|r| r > now) {
        if new_reset > old_reset {
            old.reset = new.reset;
            return true;
        }
        return false;
    }
    let waiters = std::mem::take(&mut old.waiters);
    *old = Breaker { waiters, ..new };
    true
}

/// Drops the breakers no one needs any more: settled ones an hour after their probe went well,
/// and ones no one probed a day after their reset.
pub fn prune(book: &mut Vec<Breaker>, now: Timestamp) -> bool {
    let before = book.len();
    book.retain(|b| {
        let ok = b
            .probe
            .as_ref()
            .and_then(|p| parse_ts(p.ok.as_deref()))
            .map(|ok| ok + KEPT_SETTLED);
        let unprobed = b.reset_at().map(|r| r + KEPT_UNPROBED);
        match (ok, unprobed) {
            (Some(until), _) => until > now,
            (None, Some(until)) => until > now,
            (None, None) => false,
        }
    });
    book.len() != before
}

/// What one waiter on an account may do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// No window of the account is closed: go.
    Open,
    /// A window is closed until its reset.
    Closed {
        until: Timestamp,
        window: String,
        label: String,
    },
    /// The reset has passed and no one probes: the next change makes this waiter the probe.
    Unprobed,
    /// The reset has passed and a waiter probes the window (`me`: this one).
    Probing { by: Who, me: bool },
    /// The probe went well: this waiter follows at `at`, its place in the stagger.
    Follow { at: Timestamp },
}

impl Gate {
    /// Whether the waiter may launch now.
    pub fn go(&self) -> bool {
        matches!(self, Gate::Open | Gate::Probing { me: true, .. })
    }
}

/// The gate of `account` for the waiter `me` at `now`.
pub fn gate(book: &[Breaker], account: &Account, me: &str, now: Timestamp) -> Gate {
    let mine: Vec<&Breaker> = book.iter().filter(|b| b.of(account)).collect();
    if let Some(closed) = mine
        .iter()
        .filter(|b| b.reset_at().is_some_and(|r| r > now))
        .max_by_key(|b| b.reset_at())
    {
        return Gate::Closed {
            until: closed.reset_at().expect("filtered on it"),
            window: closed.window.clone(),
            label: closed.label.clone(),
        };
    }
    let mut follow: Option<Timestamp> = None;
    for b in &mine {
        if unprobed(b, me, now) {
            return Gate::Unprobed;
        }
        let Some(probe) = &b.probe else {
            return Gate::Unprobed;
        };
        match parse_ts(probe.ok.as_deref()) {
            Some(_) if probe.by.id == me => {}
            Some(ok) => {
                let others = || b.waiters.iter().filter(|w| w.id != probe.by.id);
                let slot = others()
                    .position(|w| w.id == me)
                    .unwrap_or_else(|| others().count());
                let at = ok + STAGGER * (slot as i32 + 1);
                follow = follow.max(Some(at));
            }
            None => {
                return Gate::Probing {
                    by: probe.by.clone(),
                    me: probe.by.id == me,
                };
            }
        }
    }
    match follow {
        Some(at) if at > now => Gate::Follow { at },
        _ => Gate::Open,
    }
}

/// `gate`, making `me` the probe of each window of the account that has none (or a stale one):
/// called under the store's lock of the breakers, so exactly one waiter becomes the probe.
/// Returns the gate and whether the book changed.
pub fn claim(book: &mut [Breaker], account: &Account, me: &Who, now: Timestamp) -> (Gate, bool) {
    let mut changed = false;
    loop {
        let gate = gate(book, account, &me.id, now);
        if gate != Gate::Unprobed {
            return (gate, changed);
        }
        let Some(b) = book
            .iter_mut()
            .find(|b| b.of(account) && unprobed(b, &me.id, now))
        else {
            return (gate, changed);
        };
        b.probe = Some(Probe {
            by: Who {
                since: format_ts(now),
                ..me.clone()
            },
            ok: None,
        });
        changed = true;
    }
}

/// Whether a window whose reset has passed waits for a probe at `now`: none took it, or the
/// one that did (not `me`) has been silent for `PROBE_LEASE`. A time that does not parse is
/// no time: an `ok` none, a `since` long ago.
fn unprobed(b: &Breaker, me: &str, now: Timestamp) -> bool {
    match &b.probe {
        None => true,
        Some(p) => {
            parse_ts(p.ok.as_deref()).is_none()
                && p.by.id != me
                && parse_ts(Some(&p.by.since)).is_none_or(|s| s + PROBE_LEASE <= now)
        }
    }
}

/// Records that a turn on `account` ran without a limit at `now`: every window of it whose
/// reset has passed is open again (its probe, whoever it was, went well). Returns whether
/// anything changed.
pub fn turn_ran(book: &mut [Breaker], account: &Account, me: &Who, now: Timestamp) -> bool {
    let mut changed = false;
    for b in book
        .iter_mut()
        .filter(|b| b.of(account) && b.awaits_turn(now))
    {
        match &mut b.probe {
            Some(p) => {
                p.ok = Some(format_ts(now));
                changed = true;
            }
            None => {
                b.probe = Some(Probe {
                    by: me.clone(),
                    ok: Some(format_ts(now)),
                });
                changed = true;
            }
        }
    }
    changed
}

/// Adds `me` to the waiters of each window of `account` it does not wait on yet.
pub fn join(book: &mut [Breaker], account: &Account, me: &Who) -> bool {
    let mut changed = false;
    for b in book.iter_mut().filter(|b| b.of(account)) {
        if !b.waiters.iter().any(|w| w.id == me.id) {
            b.waiters.push(me.clone());
            changed = true;
        }
    }
    changed
}

/// Takes `me` off every waiter list (it launched, or stopped waiting).
pub fn leave(book: &mut [Breaker], me: &str) -> bool {
    let mut changed = false;
    for b in book.iter_mut() {
        let before = b.waiters.len();
        b.waiters.retain(|w| w.id != me);
        changed |= b.waiters.len() != before;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn who(id: &str, at: &str) -> Who {
        Who {
            id: id.into(),
            host: "h".into(),
            since: at.into(),
        }
    }

    fn claude() -> Account {
        Account::new(
            "claude",
            Basis::Account,
            "3f1c2a9b-0000-4000-8000-000000000001",
        )
    }

    #[test]
    fn an_account_is_labelled_without_its_identifier_in_full() {
        let a = claude();
        assert_eq!(a.key, "account:3f1c2a9b-0000-4000-8000-000000000001");
        assert_eq!(a.label, "claude account 3f1c2a9b");
        let m = Account::new("gemini", Basis::Machine, "box");
        assert_eq!(
            (m.key.as_str(), m.label.as_str()),
            ("machine:box", "gemini on box")
        );
    }

    #[test]
    fn an_account_is_read_from_the_clients_files_keeping_no_secret() {
        let claude = br#"{"numStartups":3,"oauthAccount":{"accountUuid":"a-1","emailAddress":"x@y","organizationUuid":"o-2"},"primaryApiKey":"sk-ant-x"}"#;
        assert_eq!(
            claude_account(claude),
            Some(("a-1".to_string(), Some("o-2".to_string())))
        );
        assert_eq!(
            claude_account(br#"{"oauthAccount":{"accountUuid":"a-1"}}"#),
            Some(("a-1".to_string(), None))
        );
        assert_eq!(claude_account(br#"{"numStartups":3}"#), None);
        assert_eq!(claude_account(b"not json"), None);
        let gemini = br#"{"active":"Dev@Example.invalid","old":[]}"#;
        let id = gemini_account_id(gemini).unwrap();
        assert_eq!(id, key_digest("dev@example.invalid"));
        assert!(!id.contains("example"));
        let copilot = b"// User settings belong in settings.json.\n// This file is managed automatically.\n{\"firstLaunchAt\":\"2026-01-01\",\"lastLoggedInUser\":{\"host\":\"https://github.com\",\"login\":\"octo\"},\"copilotTokens\":{\"x\":\"gho_secret\"}}";
        assert_eq!(
            copilot_account(copilot),
            Some(("https://github.com".to_string(), "octo".to_string()))
        );
        assert_eq!(copilot_account(b"{\"firstLaunchAt\":1}"), None);
        let codex = br#"{"OPENAI_API_KEY":null,"tokens":{"id_token":"e.y.j","access_token":"t","refresh_token":"r","account_id":"acct-9"},"last_refresh":"2026-12-01T00:00:00Z"}"#;
        assert!(matches!(codex_login(codex), Some(CodexLogin::Account(id)) if id == "acct-9"));
        let both = br#"{"auth_mode":"apikey","OPENAI_API_KEY":"sk-secret","tokens":{"account_id":"acct-9"}}"#;
        assert!(matches!(codex_login(both), Some(CodexLogin::ApiKey(k)) if k == "sk-secret"));
        let keyed = br#"{"OPENAI_API_KEY":"sk-secret"}"#;
        assert!(matches!(codex_login(keyed), Some(CodexLogin::ApiKey(k)) if k == "sk-secret"));
        let digest = key_digest("sk-secret");
        assert_eq!(digest.len(), 16);
        assert!(!digest.contains("secret"));
        assert_eq!(digest, key_digest(" sk-secret\n"));
        assert_ne!(digest, key_digest("sk-other"));
    }

    #[test]
    fn a_limit_that_resets_within_minutes_is_no_window() {
        let now = t("2026-12-05T10:00:00Z");
        assert!(!is_window(t("2026-12-05T10:00:30Z"), now));
        assert!(!is_window(t("2026-12-05T10:01:59Z"), now));
        assert!(is_window(t("2026-12-05T10:02:00Z"), now));
    }

    #[test]
    fn the_window_comes_from_the_message_then_from_how_far_the_reset_is() {
        let now = t("2026-12-05T10:00:00Z");
        let soon = t("2026-12-05T13:00:00Z");
        let days = t("2026-12-08T13:00:00Z");
        assert_eq!(
            window_of("5-hour limit reached ∙ resets 1pm", soon, now),
            "5h"
        );
        assert_eq!(window_of("usage limit reached", soon, now), "5h");
        assert_eq!(
            window_of("Weekly limit reached ∙ resets Dec 8", days, now),
            "weekly"
        );
        assert_eq!(
            window_of("Opus weekly limit reached", days, now),
            "weekly-opus"
        );
        let sonnet = window_of("You've hit your Sonnet limit · resets Dec 8", soon, now);
        assert_eq!(sonnet, "weekly-sonnet");
        let session = window_of("You've hit your session limit · resets 1pm", soon, now);
        assert_eq!(session, "5h");
        let named = window_of("You've hit your 5-hour limit · resets 1pm", days, now);
        assert_eq!(named, "5h");
        assert_eq!(
            window_of("You've hit your usage limit", days, now),
            "weekly"
        );
    }

    #[test]
    fn one_waiter_probes_the_rest_follow_staggered_and_a_new_limit_reopens() {
        let a = claude();
        let opened = "2026-12-05T10:00:00Z";
        let mut book = Vec::new();
        let reset = t("2026-12-05T15:00:00Z");
        assert!(open(
            &mut book,
            Breaker::new(&a, "5h", reset, who("s1", opened)),
            t(opened)
        ));
        // The same window seen again by another session: one breaker, the later reset.
        let later = t("2026-12-05T15:00:30Z");
        assert!(open(
            &mut book,
            Breaker::new(&a, "5h", later, who("s2", opened)),
            t(opened)
        ));
        assert!(!open(
            &mut book,
            Breaker::new(&a, "5h", reset, who("s3", opened)),
            t(opened)
        ));
        assert_eq!(book.len(), 1);
        let (p, q, r) = (who("p", opened), who("q", opened), who("r", opened));
        for w in [&p, &q, &r] {
            assert!(join(&mut book, &a, w));
        }
        let before = t("2026-12-05T12:00:00Z");
        assert_eq!(
            claim(&mut book, &a, &p, before).0,
            Gate::Closed {
                until: later,
                window: "5h".into(),
                label: "claude account 3f1c2a9b".into()
            }
        );
        // Another account is not held.
        let other = Account::new("claude", Basis::Account, "other");
        assert_eq!(gate(&book, &other, "x", before), Gate::Open);
        // At the reset the first to look probes; the others wait for it.
        let at = t("2026-12-05T15:01:00Z");
        let (gate_q, changed) = claim(&mut book, &a, &q, at);
        assert!(changed && gate_q.go(), "{gate_q:?}");
        let (gate_p, changed) = claim(&mut book, &a, &p, at);
        assert!(!changed);
        assert!(matches!(gate_p, Gate::Probing { ref by, me: false } if by.id == "q"));
        assert!(claim(&mut book, &a, &q, at).0.go());
        // The probe met the limit again: the window closes until the new reset.
        let next = t("2026-12-05T20:00:00Z");
        assert!(open(
            &mut book,
            Breaker::new(&a, "5h", next, who("q", "2026-12-05T15:02:00Z")),
            at
        ));
        assert!(matches!(gate(&book, &a, "p", at), Gate::Closed { until, .. } if until == next));
        assert_eq!(book[0].waiters.len(), 3, "the waiters stay");
        // The next probe ran a turn: the rest follow in the order they began to wait.
        let after = t("2026-12-05T20:01:00Z");
        assert!(claim(&mut book, &a, &r, after).0.go());
        assert!(turn_ran(&mut book, &a, &r, after));
        assert_eq!(
            gate(&book, &a, "p", after),
            Gate::Follow {
                at: after + STAGGER
            }
        );
        assert_eq!(
            gate(&book, &a, "q", after),
            Gate::Follow {
                at: after + STAGGER * 2
            }
        );
        assert_eq!(gate(&book, &a, "r", after), Gate::Open, "the probe runs on");
        assert_eq!(
            gate(&book, &a, "new", after),
            Gate::Follow {
                at: after + STAGGER * 3
            }
        );
        assert_eq!(gate(&book, &a, "p", after + STAGGER), Gate::Open);
        assert!(leave(&mut book, "p"));
        // Settled and an hour on, the breaker is gone.
        assert!(!prune(&mut book, after + STAGGER));
        assert!(prune(&mut book, after + KEPT_SETTLED));
        assert!(book.is_empty());
    }

    #[test]
    fn a_pooled_limit_holds_every_member_of_the_team() {
        let now = t("2026-12-05T10:00:00Z");
        let me = claude_account_of("a-1", Some("org-9"));
        let colleague = claude_account_of("a-2", Some("org-9"));
        let elsewhere = claude_account_of("a-3", Some("org-8"));
        assert_eq!(me.label, "claude account a1");
        let mut book = Vec::new();
        // A member's own limit holds that member alone.
        let own = me.limited_by("You've hit your 5-hour limit");
        assert_eq!(own.key, me.key);
        let until = t("2026-12-05T12:00:00Z");
        open(&mut book, Breaker::new(own, "5h", until, who("s", "")), now);
        assert!(matches!(gate(&book, &me, "x", now), Gate::Closed { .. }));
        assert_eq!(gate(&book, &colleague, "x", now), Gate::Open);
        // The team's pooled budget holds every member of the organization.
        let pool = colleague.limited_by("You've hit your team's pooled group budget");
        assert_eq!(pool.key, "pool:org-9");
        let later = t("2026-12-05T13:00:00Z");
        open(
            &mut book,
            Breaker::new(pool, "5h", later, who("s", "")),
            now,
        );
        assert!(matches!(
            gate(&book, &colleague, "x", now),
            Gate::Closed { .. }
        ));
        assert!(matches!(gate(&book, &me, "x", now), Gate::Closed { until, .. } if until == later));
        assert_eq!(gate(&book, &elsewhere, "x", now), Gate::Open);
    }

    #[test]
    fn a_probe_that_reports_nothing_is_given_up() {
        let a = claude();
        let mut book = vec![Breaker::new(
            &a,
            "5h",
            t("2026-12-05T15:00:00Z"),
            who("s", "2026-12-05T10:00:00Z"),
        )];
        let at = t("2026-12-05T15:00:00Z");
        assert!(claim(&mut book, &a, &who("p", ""), at).0.go());
        let q = who("q", "");
        assert!(
            !claim(
                &mut book,
                &a,
                &q,
                at + PROBE_LEASE - SignedDuration::from_secs(1)
            )
            .0
            .go()
        );
        let (taken, changed) = claim(&mut book, &a, &q, at + PROBE_LEASE);
        assert!(changed && taken.go(), "{taken:?}");
        // A probe whose times do not parse (a file another hand wrote) is no probe: claimed
        // anew, never a panic.
        let mut book = vec![Breaker::new(&a, "5h", at, who("s", ""))];
        book[0].probe = Some(Probe {
            by: who("gone", "not a time"),
            ok: Some("yesterday".into()),
        });
        assert_eq!(gate(&book, &a, "x", at), Gate::Unprobed);
        assert!(claim(&mut book, &a, &who("x", ""), at).0.go());
        // A turn with no probe at all (a person's session) opens it too.
        let mut book = vec![Breaker::new(&a, "5h", at, who("s", ""))];
        assert_eq!(gate(&book, &a, "x", at), Gate::Unprobed);
        assert!(turn_ran(&mut book, &a, &who("person", ""), at));
        assert_eq!(gate(&book, &a, "x", at), Gate::Follow { at: at + STAGGER });
        // A breaker no one probed is dropped a day after its reset.
        let mut book = vec![Breaker::new(&a, "5h", at, who("s", ""))];
        assert!(!prune(
            &mut book,
            at + KEPT_UNPROBED - SignedDuration::from_secs(1)
        ));
        assert!(prune(&mut book, at + KEPT_UNPROBED));
    }
}
