//! The account's window (SPEC section 11, `baton_core::breaker`): which account a client is
//! logged in with, read from the client's own files without keeping a credential, and the
//! breaker operations every hook, supervisor and conductor calls on the store's breakers.

use std::path::Path;

use baton_core::breaker::{self, Account, Basis, Breaker, CodexLogin, Gate, Who};
use baton_core::client::Client;
use baton_core::time::format_ts;
use baton_store::StateStore;
use jiff::Timestamp;

use crate::env::{Ctx, Settings};
use crate::error::OpError;

/// The variable that turns the wait for the account's window off for `baton supervise`.
pub const WINDOW_VARIABLE: &str = "BATON_WINDOW";

/// The account `client` is logged in with on this machine: `BATON_ACCOUNT` when set, else the
/// digest of the API key set for it, else what the client's files say (Claude Code's
/// `oauthAccount`, Codex's `tokens.account_id` or its key, Gemini CLI's active Google account
/// by digest, Copilot CLI's GitHub login), else this machine (`host`).
pub fn account_of(settings: &Settings, client: Client, dir: &Path, host: &str) -> Account {
    let name = client.as_str();
    if let Some(named) = &settings.account {
        return Account::new(name, Basis::Account, named);
    }
    // A key set for the client is what it spends (Claude Code and Codex take it over a login
    // their files still remember).
    if let Some((_, digest)) = settings.key_digests.iter().find(|(c, _)| *c == name) {
        return Account::new(name, Basis::ApiKey, digest);
    }
    let read = |path: &Path| {
        baton_store::read::read_capped(path, 64 * 1024 * 1024)
            .ok()
            .flatten()
    };
    let home = settings
        .home
        .as_ref()
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    let from_files = match client {
        Client::Claude => {
            // `$CLAUDE_CONFIG_DIR/.claude.json`; else the legacy `~/.claude/.config.json` when
            // it is there (Claude Code reads it first), else `~/.claude.json`.
            let file = match (&settings.claude_config_dir, &home) {
                (Some(dir), _) => Some(dir.join(".claude.json")),
                (None, Some(home)) => {
                    let legacy = home.join(".claude/.config.json");
                    Some(if legacy.is_file() {
                        legacy
                    } else {
                        home.join(".claude.json")
                    })
                }
                (None, None) => None,
            };
            file.and_then(|f| read(&f))
                .and_then(|bytes| breaker::claude_account(&bytes))
                .map(|(account, org)| breaker::claude_account_of(&account, org.as_deref()))
        }
        Client::Codex => crate::evidence::user_dir(client.def(), settings, dir)
            .and_then(|d| read(&d.join("auth.json")))
            .and_then(|bytes| breaker::codex_login(&bytes))
            .map(|login| match login {
                CodexLogin::Account(id) => Account::new(name, Basis::Account, &id),
                CodexLogin::ApiKey(key) => {
                    Account::new(name, Basis::ApiKey, &breaker::key_digest(&key))
                }
            }),
        Client::Gemini => home
            .and_then(|h| read(&h.join(".gemini/google_accounts.json")))
            .and_then(|bytes| breaker::gemini_account_id(&bytes))
            .map(|id| Account::new(name, Basis::Account, &id)),
        Client::Copilot => crate::evidence::user_dir(client.def(), settings, dir)
            .and_then(|d| read(&d.join("config.json")))
            .and_then(|bytes| breaker::copilot_account(&bytes))
            .map(|(host, login)| {
                Account::labelled(name, Basis::Account, &format!("{host}/{login}"), &login)
            }),
        _ => None,
    };
    from_files.unwrap_or_else(|| Account::new(name, Basis::Machine, host))
}

/// One who waits, probes or trips, on this machine.
pub fn who(id: &str, now: Timestamp) -> Who {
    Who {
        id: id.to_string(),
        host: baton_store::process::host(),
        since: format_ts(now),
    }
}

/// Opens the breaker of `account`'s window for a limit that resets at `reset`, seen at `now`
/// by `by`; `text` is what the limit said (its window is read from it). Settled breakers are
/// dropped at the same time. Returns the breaker as it now stands; `None` for a limit that
/// resets within minutes (`breaker::is_window`), which opens none.
pub fn trip(
    store: &dyn StateStore,
    account: &Account,
    text: &str,
    reset: Timestamp,
    by: Who,
    now: Timestamp,
) -> Result<Option<Breaker>, OpError> {
    if !breaker::is_window(reset, now) {
        return Ok(None);
    }
    let window = breaker::window_of(text, reset, now);
    let new = Breaker::new(account.limited_by(text), &window, reset, by);
    let mut now_open = None;
    store.change_breakers(&mut |book| {
        let pruned = breaker::prune(book, now);
        let opened = breaker::open(book, new.clone(), now);
        now_open = book
            .iter()
            .find(|b| b.client == new.client && b.account == new.account && b.window == new.window)
            .cloned();
        pruned || opened
    })?;
    Ok(now_open)
}

/// The gate of `account` for `me` at `now`. A waiter (`wait`) joins the breakers' waiters,
/// and becomes the probe where no one probes; a look (`!wait`) changes nothing but the probe
/// it takes when `probe` is set.
pub fn gate(
    store: &dyn StateStore,
    account: &Account,
    me: &Who,
    now: Timestamp,
    wait: bool,
    probe: bool,
) -> Result<Gate, OpError> {
    let book = store.breakers()?;
    let looked = breaker::gate(&book, account, &me.id, now);
    let needs_change = match &looked {
        Gate::Open => false,
        Gate::Unprobed => probe,
        _ => {
            wait && book
                .iter()
                .any(|b| b.of(account) && !b.waiters.iter().any(|w| w.id == me.id))
        }
    };
    if !needs_change {
        return Ok(looked);
    }
    let mut out = looked;
    store.change_breakers(&mut |book| {
        let mut changed = breaker::prune(book, now) | forget_dead_waiters(book);
        if wait {
            changed |= breaker::join(book, account, me);
        }
        let (gate, claimed) = if probe {
            breaker::claim(book, account, me, now)
        } else {
            (breaker::gate(book, account, &me.id, now), false)
        };
        out = gate;
        changed || claimed
    })?;
    Ok(out)
}

/// Takes off the waiter lists the supervisors of this machine whose process is gone (killed
/// while they waited): they would keep a place in the stagger, and be shown as waiting.
fn forget_dead_waiters(book: &mut [Breaker]) -> bool {
    let host = baton_store::process::host();
    let mut changed = false;
    for b in book.iter_mut() {
        let before = b.waiters.len();
        b.waiters.retain(|w| {
            let Some(rest) = w.id.strip_prefix("supervise:") else {
                return true;
            };
            let Some((on, pid)) = rest.rsplit_once(':') else {
                return true;
            };
            on != host
                || pid
                    .parse::<u32>()
                    .is_ok_and(|pid| baton_store::process::start_time(pid).is_some())
        });
        changed |= b.waiters.len() != before;
    }
    changed
}

/// A turn on `account` ran without a limit at `now`: each of its windows whose reset has
/// passed is open again. Reads the breakers first and changes them only when one needs it.
pub fn turn_ran(
    store: &dyn StateStore,
    account: &Account,
    me: &Who,
    now: Timestamp,
) -> Result<bool, OpError> {
    let book = store.breakers()?;
    if !book.iter().any(|b| b.of(account) && b.awaits_turn(now)) {
        return Ok(false);
    }
    let mut changed = false;
    store.change_breakers(&mut |book| {
        changed = breaker::turn_ran(book, account, me, now);
        changed
    })?;
    Ok(changed)
}

/// `me` no longer waits (it launched, or stopped).
pub fn leave(store: &dyn StateStore, me: &str) -> Result<(), OpError> {
    if !store
        .breakers()?
        .iter()
        .any(|b| b.waiters.iter().any(|w| w.id == me))
    {
        return Ok(());
    }
    store.change_breakers(&mut |book| breaker::leave(book, me))?;
    Ok(())
}

/// A person says the account's window is open again (more usage bought, a reset the client
/// misreported): every breaker of `account` is removed. Returns how many there were.
pub fn reopen(store: &dyn StateStore, account: &Account) -> Result<usize, OpError> {
    let mut removed = 0;
    store.change_breakers(&mut |book| {
        let before = book.len();
        book.retain(|b| !b.of(account));
        removed = before - book.len();
        removed > 0
    })?;
    Ok(removed)
}

/// The account of the client `ctx`'s session runs in, when the session says which client.
pub fn ctx_account(ctx: &Ctx, client: Client) -> Account {
    account_of(
        &ctx.settings,
        client,
        &ctx.dir,
        &baton_store::process::host(),
    )
}

/// The accounts the clients are logged in with here, one for each client the breakers `book`
/// name (`open_only`: of the breakers still closed at `ctx.now`): a client no breaker names is
/// not looked up.
fn accounts_named(ctx: &Ctx, book: &[Breaker], open_only: bool) -> Vec<Account> {
    let mut clients: Vec<Client> = book
        .iter()
        .filter(|b| !open_only || b.reset_at().is_some_and(|r| r > ctx.now))
        .filter_map(|b| Client::parse(&b.client))
        .collect();
    clients.sort_by_key(|c| c.as_str());
    clients.dedup();
    clients.into_iter().map(|c| ctx_account(ctx, c)).collect()
}

/// The breakers of the accounts the clients are logged in with here: what `status` and the
/// timeline show. A server keeps every account's breakers, a fleet's and other teams' alike;
/// this machine's view is its own accounts'.
pub fn ours(ctx: &Ctx, store: &dyn StateStore) -> Result<Vec<Breaker>, OpError> {
    let book = store.breakers()?;
    let accounts = accounts_named(ctx, &book, false);
    Ok(book
        .into_iter()
        .filter(|b| accounts.iter().any(|a| b.of(a)))
        .collect())
}

/// A window closed now, as the packet, `baton wait` and `status` say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub client: Client,
    pub label: String,
    pub window: String,
    pub until: Timestamp,
}

/// The windows closed at `ctx.now` of the accounts the clients are logged in with here, one per
/// client with a breaker (its latest reset): only the clients the breakers name are looked up.
pub fn closed(ctx: &Ctx, store: &dyn StateStore) -> Result<Vec<Closed>, OpError> {
    let book = store.breakers()?;
    Ok(accounts_named(ctx, &book, true)
        .into_iter()
        .filter_map(
            |account| match breaker::gate(&book, &account, "", ctx.now) {
                Gate::Closed {
                    until,
                    window,
                    label,
                } => Some(Closed {
                    client: Client::parse(&account.client)?,
                    label,
                    window,
                    until,
                }),
                _ => None,
            },
        )
        .collect())
}
