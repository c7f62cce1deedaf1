//! The PostgreSQL schema against a real, throwaway server: migrations apply in order, once,
//! and `status` reads the server's clock and the schema without writing.

#[path = "support/pg_server.rs"]
mod pg_server;

use std::time::Duration;

use baton_store::pg::config::{Process, resolve};
use baton_store::pg::{connect, known, migrate, status};
use pg_server::PgServer;

#[test]
fn migrations_apply_once_and_status_reads_without_writing() {
    let Some(server) = PgServer::start("migrations_apply_once_and_status_reads_without_writing")
    else {
        return;
    };
    let settings = resolve(&server.url(), &Process).unwrap();
    let mut client = connect(&settings).unwrap();

    let before = status(&mut client, &settings).unwrap();
    assert!(before.applied.is_empty());
    assert!(
        before.server_version.starts_with(char::is_numeric),
        "{before:?}"
    );
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('baton_schema_history') IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!exists, "status created nothing");

    let applied = migrate(&mut client, &settings).unwrap();
    assert_eq!(applied, known(), "every migration, in order");
    assert_eq!(applied[0].version, 1);
    assert!(migrate(&mut client, &settings).unwrap().is_empty(), "once");

    let after = status(&mut client, &settings).unwrap();
    assert_eq!(after.applied, known());
    assert_eq!(after.counts, [("journal events".to_string(), 0)]);
    // The server's clock, as an RFC 3339 time.
    assert!(
        after.server_now.parse::<jiff::Timestamp>().is_ok(),
        "{after:?}"
    );
    // The tables the store writes exist.
    for table in ["baton_state", "baton_archive", "baton_journal"] {
        let n: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 0);
    }
}

#[test]
fn a_server_that_is_not_there_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://u:hunter2@127.0.0.1:{port}/d");
    let settings = resolve(&url, &Process).unwrap();
    let Err(err) = connect(&settings) else {
        panic!("connected to a closed port");
    };
    let text = format!("{err} {}", err.hint().unwrap_or_default());
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains(&format!("postgres://u@127.0.0.1:{port}/d")),
        "{text}"
    );
    assert!(text.contains("PGHOST"), "{text}");
}

use baton_store::pg::records::{Kind, Records};

fn records(server: &PgServer, host: &str) -> Records {
    let settings = resolve(&server.url(), &Process).unwrap();
    let client = connect(&settings).unwrap();
    Records::new(client, settings, "proj", host)
}

fn migrated(test: &str) -> Option<PgServer> {
    let server = PgServer::start(test)?;
    let settings = resolve(&server.url(), &Process).unwrap();
    migrate(&mut connect(&settings).unwrap(), &settings).unwrap();
    Some(server)
}

#[test]
fn a_write_lands_only_on_the_revision_it_read_and_keeps_its_bytes() {
    let Some(server) = migrated("a_write_lands_only_on_the_revision_it_read_and_keeps_its_bytes")
    else {
        return;
    };
    let a = records(&server, "machine-a");
    let b = records(&server, "machine-b");
    // Bytes a JSON parser would not keep: key order, spacing, an escape.
    let doc = "{\"z\":1,  \"a\":\"\\u00e9\",\n\"session_id\":\"A\"}\n";
    assert!(
        a.write_if(Kind::Loop, "T-1", doc, 0, None)
            .unwrap()
            .is_some()
    );
    assert!(
        b.write_if(Kind::Loop, "T-1", "{}", 0, None)
            .unwrap()
            .is_none(),
        "created once"
    );
    let read = b.read(Kind::Loop, "T-1").unwrap().unwrap();
    assert_eq!(read.doc, doc);
    assert_eq!(
        (read.rev, read.epoch, read.host.as_str()),
        (1, 0, "machine-a")
    );
    // The time is the server's.
    assert!(read.written_at <= a.now().unwrap());
    // B takes it over on the revision it read; A's write on the old one is refused.
    assert!(
        b.write_if(Kind::Loop, "T-1", "{\"session_id\":\"B\"}", 1, Some(1))
            .unwrap()
            .is_some()
    );
    assert!(
        a.write_if(Kind::Loop, "T-1", "{\"session_id\":\"A\"}", 0, Some(1))
            .unwrap()
            .is_none()
    );
    let now = a.read(Kind::Loop, "T-1").unwrap().unwrap();
    assert_eq!((now.rev, now.epoch, now.host.as_str()), (2, 1, "machine-b"));
    assert_eq!(a.list(Kind::Loop).unwrap().len(), 1);
    assert!(a.list(Kind::Run).unwrap().is_empty());
    // Archived only at the revision read.
    let name = "loop-state-T-1.20260301T120000Z.json";
    let other = "loop-state-T-1.20260301T120000Z-ab.json";
    assert_eq!(
        a.archive_if(Kind::Loop, "T-1", 1, name, other).unwrap(),
        None
    );
    assert_eq!(
        a.archive_if(Kind::Loop, "T-1", 2, name, other).unwrap(),
        Some(name.to_string())
    );
    assert!(a.read(Kind::Loop, "T-1").unwrap().is_none());
    // A second archive in the same second takes the other name, as the file store does.
    a.write_if(Kind::Loop, "T-1", "{}", 0, None).unwrap();
    assert_eq!(
        a.archive_if(Kind::Loop, "T-1", 1, name, other).unwrap(),
        Some(other.to_string())
    );
    // Journals keep their order, per target.
    for i in 0..5 {
        a.append_journal("loop-T-1", &format!("{{\"n\":{i}}}"))
            .unwrap();
        b.append_journal("batch", "{}").unwrap();
    }
    let events = b.read_journal("loop-T-1").unwrap();
    assert_eq!(
        events,
        (0..5).map(|i| format!("{{\"n\":{i}}}")).collect::<Vec<_>>()
    );
}

#[test]
fn racing_machines_get_exactly_one_winner_every_time() {
    let Some(server) = migrated("racing_machines_get_exactly_one_winner_every_time") else {
        return;
    };
    const RACERS: usize = 16;
    const TRIALS: usize = 200;
    let setup = records(&server, "setup");
    for t in 0..TRIALS {
        assert!(
            setup
                .write_if(Kind::Loop, &format!("T-{t}"), "{}", 0, None)
                .unwrap()
                .is_some()
        );
    }
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(RACERS));
    let url = server.url();
    let handles: Vec<_> = (0..RACERS)
        .map(|r| {
            let barrier = barrier.clone();
            let url = url.clone();
            std::thread::spawn(move || {
                let settings = resolve(&url, &Process).unwrap();
                let me = Records::new(
                    connect(&settings).unwrap(),
                    settings,
                    "proj",
                    &format!("m{r}"),
                );
                let mut won = Vec::new();
                for t in 0..TRIALS {
                    let key = format!("T-{t}");
                    let read = me.read(Kind::Loop, &key).unwrap().unwrap();
                    barrier.wait();
                    let doc = format!("{{\"owner\":\"m{r}\"}}");
                    if me
                        .write_if(Kind::Loop, &key, &doc, read.epoch + 1, Some(read.rev))
                        .unwrap()
                        .is_some()
                    {
                        won.push(t);
                    }
                    barrier.wait();
                }
                won
            })
        })
        .collect();
    let mut winners = vec![0; TRIALS];
    for h in handles {
        for t in h.join().unwrap() {
            winners[t] += 1;
        }
    }
    assert!(winners.iter().all(|&n| n == 1), "{winners:?}");
    // And the record says who: the one winner's write, at epoch 1.
    for t in 0..TRIALS {
        let r = setup.read(Kind::Loop, &format!("T-{t}")).unwrap().unwrap();
        assert_eq!((r.rev, r.epoch), (2, 1));
        assert_eq!(r.doc, format!("{{\"owner\":\"{}\"}}", r.host));
    }
}

#[test]
fn a_held_lock_is_handed_over_on_release_and_a_wait_gives_up_on_time() {
    let Some(server) =
        migrated("a_held_lock_is_handed_over_on_release_and_a_wait_gives_up_on_time")
    else {
        return;
    };
    let a = records(&server, "machine-a");
    let b = records(&server, "machine-b");
    let key = a.lock_key("loop-T-1");
    assert!(a.try_lock(key).unwrap());
    assert!(!b.try_lock(key).unwrap(), "held by a");
    let start = std::time::Instant::now();
    assert!(!b.lock_within(key, Duration::from_millis(300)).unwrap());
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(300),
        "gave up early: {waited:?}"
    );
    // b waits; a releases 200 ms later; b has it well before its 10 s are up.
    let url = server.url();
    let waiter = std::thread::spawn(move || {
        let settings = resolve(&url, &Process).unwrap();
        let b = Records::new(connect(&settings).unwrap(), settings, "proj", "machine-b");
        let start = std::time::Instant::now();
        let got = b.lock_within(key, Duration::from_secs(10)).unwrap();
        (got, start.elapsed())
    });
    std::thread::sleep(Duration::from_millis(200));
    a.unlock(key).unwrap();
    let (got, waited) = waiter.join().unwrap();
    assert!(got);
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    // The timeout is not left behind on the connection that gave up.
    let left = b
        .in_transaction(|tx, _, _| {
            tx.query_one("SHOW lock_timeout", &[])
                .map(|r| r.get::<_, String>(0))
        })
        .unwrap();
    assert_eq!(left, "0");
}

/// Whether the connection `url` gives is encrypted, as the server sees it; or the error.
fn encrypted(url: &str) -> Result<bool, String> {
    let settings = resolve(url, &Process)?;
    let mut client = connect(&settings).map_err(|e| e.to_string())?;
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .map_err(|e| e.to_string())?;
    Ok(row.get(0))
}

#[test]
fn sslmode_encrypts_and_checks_the_certificate_as_libpq_does() {
    let Some((server, certs)) =
        PgServer::start_tls("sslmode_encrypts_and_checks_the_certificate_as_libpq_does")
    else {
        return;
    };
    let ca = certs.path().join("ca.pem");
    let other = certs.path().join("other.pem");
    let at = |host: &str, query: &str| {
        format!("postgres://baton@{host}:{}/postgres?{query}", server.port)
    };
    let ip = "127.0.0.1";
    assert_eq!(encrypted(&at(ip, "sslmode=disable")), Ok(false));
    assert_eq!(
        encrypted(&at(ip, "application_name=t")),
        Ok(true),
        "prefer, the default"
    );
    assert_eq!(
        encrypted(&at(ip, "sslmode=require")),
        Ok(true),
        "no root: unchecked"
    );
    let root = |mode: &str, file: &std::path::Path| {
        format!("sslmode={mode}&sslrootcert={}", file.display())
    };
    assert_eq!(
        encrypted(&at("localhost", &root("verify-full", &ca))),
        Ok(true)
    );
    assert_eq!(
        encrypted(&at(ip, &root("verify-ca", &ca))),
        Ok(true),
        "names not checked"
    );
    // The certificate names localhost, not the address.
    let wrong_name = encrypted(&at(ip, &root("verify-full", &ca))).unwrap_err();
    assert!(wrong_name.contains("certificate"), "{wrong_name}");
    // Signed by another root: refused by verify-ca, and by require once a root is given.
    for mode in ["verify-ca", "verify-full", "require"] {
        let e = encrypted(&at("localhost", &root(mode, &other))).unwrap_err();
        assert!(e.contains("certificate"), "{mode}: {e}");
    }
    let no_root = encrypted(&at("localhost", "sslmode=verify-full")).unwrap_err();
    assert!(no_root.contains("sslrootcert"), "{no_root}");
}

#[test]
fn require_against_a_server_without_tls_is_refused() {
    let Some(server) = PgServer::start("require_against_a_server_without_tls_is_refused") else {
        return;
    };
    let url = format!("{}?sslmode=require", server.url());
    let e = encrypted(&url).unwrap_err();
    assert!(
        e.contains("TLS") || e.contains("SSL") || e.contains("ssl"),
        "{e}"
    );
    assert_eq!(encrypted(&server.url()), Ok(false), "prefer falls back");
}

/// The server's end of every connection baton makes drops a silent peer in seconds, as does
/// this machine's, and a state session's statements and idle transactions are bounded.
#[test]
fn both_ends_of_a_connection_drop_a_silent_peer_in_seconds() {
    let Some(server) = migrated("both_ends_of_a_connection_drop_a_silent_peer_in_seconds") else {
        return;
    };
    let settings = resolve(&server.url(), &Process).unwrap();
    assert_eq!(
        settings.config.get_keepalives_idle(),
        Duration::from_secs(2)
    );
    assert_eq!(
        settings.config.get_tcp_user_timeout(),
        Some(&Duration::from_secs(5))
    );
    let mut client = connect(&settings).unwrap();
    let row = client
        .query_one(
            "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), \
                    current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')",
            &[],
        )
        .unwrap();
    let got: Vec<String> = (0..4).map(|i| row.get(i)).collect();
    assert_eq!(got, ["2", "1", "3", "5000"]);

    // A state session has them too, and a lock's wait (which raises the statement timeout
    // for one statement) leaves it working.
    use baton_store::pg::backend::Db;
    let db = std::rc::Rc::new(
        Db::open_within(
            &server.url(),
            &Process,
            "proj",
            "machine-a",
            Duration::from_secs(2),
        )
        .unwrap(),
    );
    let other = Db::open(&server.url(), &Process, "proj", "machine-b").unwrap();
    let other = std::rc::Rc::new(other);
    let held = other.lock("scope", Duration::from_secs(1)).unwrap();
    assert!(db.lock("scope", Duration::from_millis(200)).is_err());
    drop(held);
    drop(db.lock("scope", Duration::from_secs(1)).unwrap());
}

/// The accounts' breakers on the server: sixteen machines ask at the reset at once, over and
/// over, and exactly one of them becomes the probe each time (the row is held `FOR UPDATE`
/// for each change).
#[test]
fn at_a_reset_exactly_one_machine_becomes_the_probe() {
    use baton_core::breaker::{self, Account, Basis, Breaker, Gate, Who};
    let Some(server) = migrated("at_a_reset_exactly_one_machine_becomes_the_probe") else {
        return;
    };
    const RACERS: usize = 16;
    const TRIALS: usize = 50;
    let reset: jiff::Timestamp = "2026-12-05T15:00:00Z".parse().unwrap();
    let at = reset + jiff::SignedDuration::from_secs(1);
    let account = |t: usize| Account::new("claude", Basis::Account, &format!("acct-{t}"));
    let who = |id: &str| Who {
        id: id.into(),
        host: id.into(),
        since: "2026-12-05T10:00:00Z".into(),
    };
    let setup = records(&server, "setup");
    setup
        .change_breakers(&mut |book| {
            for t in 0..TRIALS {
                book.push(Breaker::new(&account(t), "5h", reset, who("tripper")));
            }
            true
        })
        .unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(RACERS));
    let url = server.url();
    let handles: Vec<_> = (0..RACERS)
        .map(|r| {
            let barrier = barrier.clone();
            let url = url.clone();
            std::thread::spawn(move || {
                let settings = resolve(&url, &Process).unwrap();
                let host = format!("m{r}");
                let me = Records::new(connect(&settings).unwrap(), settings, "proj", &host);
                let mut probed = Vec::new();
                for t in 0..TRIALS {
                    barrier.wait();
                    let mut gate = Gate::Open;
                    me.change_breakers(&mut |book| {
                        let (g, changed) = breaker::claim(book, &account(t), &who(&host), at);
                        gate = g;
                        changed
                    })
                    .unwrap();
                    if matches!(gate, Gate::Probing { me: true, .. }) {
                        probed.push(t);
                    }
                }
                probed
            })
        })
        .collect();
    let mut probes = vec![0; TRIALS];
    for h in handles {
        for t in h.join().unwrap() {
            probes[t] += 1;
        }
    }
    assert!(probes.iter().all(|&n| n == 1), "{probes:?}");
    let book = setup.breakers().unwrap();
    assert_eq!(book.len(), TRIALS);
    assert!(book.iter().all(|b| b.probe.is_some()));
}
