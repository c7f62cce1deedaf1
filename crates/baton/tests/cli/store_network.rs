//! A network path to the server that goes silent: a command gives up within its lock wait and
//! a few seconds, names the server, and changes nothing on it.
//!
//! The path is a proxy on loopback that forwards bytes between baton and the server until it
//! is told to freeze: then it stops reading and forwarding, and closes nothing, as a pulled
//! cable or a middlebox that stops forwarding looks to the client.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{T0, TestEnv, to_run};
use crate::store::pg_server::PgServer;

struct Proxy {
    port: u16,
    frozen: Arc<AtomicBool>,
    closed: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Forwards to `target` until the client sends a message holding one of `triggers`
    /// (which is not forwarded), or from the start when `frozen`.
    fn start(target: u16, triggers: &'static [&'static [u8]], frozen: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(frozen));
        let closed = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (f, c, s) = (frozen.clone(), closed.clone(), streams.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if c.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { return };
                let server = TcpStream::connect(("127.0.0.1", target)).unwrap();
                s.lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                let pump = |mut from: TcpStream, mut to: TcpStream, watch: bool| {
                    let (f, c) = (f.clone(), c.clone());
                    std::thread::spawn(move || {
                        let mut buf = vec![0; 64 * 1024];
                        loop {
                            // Frozen: neither read nor forward, nor close, until the end.
                            while f.load(Ordering::SeqCst) {
                                if c.load(Ordering::SeqCst) {
                                    return;
                                }
                                std::thread::sleep(Duration::from_millis(20));
                            }
                            let n = match from.read(&mut buf) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            let chunk = &buf[..n];
                            if watch
                                && triggers
                                    .iter()
                                    .any(|t| chunk.windows(t.len()).any(|w| w == *t))
                            {
                                f.store(true, Ordering::SeqCst);
                                continue;
                            }
                            if f.load(Ordering::SeqCst) || to.write_all(chunk).is_err() {
                                continue;
                            }
                        }
                    });
                };
                pump(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    true,
                );
                pump(server, client, false);
            }
        });
        Proxy {
            port,
            frozen,
            closed,
            streams,
        }
    }

    fn url(&self) -> String {
        format!("postgres://baton@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        self.frozen.store(false, Ordering::SeqCst);
        for s in self.streams.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Every record and journal event on the server, as text.
fn everything(url: &str) -> Vec<String> {
    use baton_store::pg;
    let settings = pg::config::resolve(url, &pg::config::Process).unwrap();
    let mut client = pg::connect(&settings).unwrap();
    let mut all: Vec<String> = client
        .query(
            "SELECT kind || '/' || key || '@' || rev || ' ' || doc FROM baton_state \
             UNION ALL SELECT target || ' ' || event FROM baton_journal ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    all.sort();
    all
}

/// `baton ARGS` through `url` with `BATON_LOCK_WAIT=2s`: what it printed, its exit code and
/// how long it took (killed after 60 s).
fn timed(env: &TestEnv, url: &str, args: &[&str]) -> (crate::common::Run, Duration) {
    let mut cmd = env.command(Some("A"), T0);
    cmd.env("BATON_STORE", url)
        .env("BATON_LOCK_WAIT", "2s")
        .env_remove("BATON_NOW")
        .current_dir(&env.repo)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let took = start.elapsed();
    (to_run(child.wait_with_output().unwrap()), took)
}

/// A server of the test's own, its schema migrated, and a project; its URL.
pub(crate) fn migrated(test: &str) -> Option<(PgServer, TestEnv, String)> {
    let server = PgServer::start(test)?;
    let env = TestEnv::new();
    let direct = server.url();
    let mut cmd = env.command(Some("A"), T0);
    cmd.env("BATON_STORE", &direct).env_remove("BATON_NOW");
    to_run(cmd.args(["store", "migrate"]).output().unwrap()).assert_code(0);
    Some((server, env, direct))
}

fn silent_path(test: &str, triggers: &'static [&'static [u8]], frozen: bool) {
    let Some((server, env, direct)) = migrated(test) else {
        return;
    };
    let (init, _) = timed(&env, &direct, &["loop", "init", "T-1"]);
    init.assert_code(0);
    let before = everything(&direct);

    let proxy = Proxy::start(server.port, triggers, frozen);
    let (run, took) = timed(
        &env,
        &proxy.url(),
        &["loop", "set", "T-1", "--phase", "qa", "--action", "spawned"],
    );
    eprintln!(
        "{test}: exited {} in {took:?}: {}",
        run.code,
        run.stderr.trim()
    );
    // BATON_LOCK_WAIT (2 s), the grace (3 s), and time to start and print.
    assert!(
        took < Duration::from_secs(8),
        "the command waited {took:?} on a silent path: {run:?}"
    );
    assert_ne!(run.code, 0, "{run:?}");
    let shown = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port);
    assert!(
        run.stderr.contains(&shown) && run.stderr.contains("no answer within"),
        "the error names the server and what happened: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("check the network to the server"),
        "{}",
        run.stderr
    );
    drop(proxy);
    assert_eq!(everything(&direct), before, "nothing changed on the server");
}

#[test]
fn a_path_that_goes_silent_before_a_write_ends_the_command_in_seconds() {
    silent_path(
        "a_path_that_goes_silent_before_a_write_ends_the_command_in_seconds",
        &[b"INSERT INTO", b"UPDATE baton_state", b"DELETE FROM"],
        false,
    );
}

#[test]
fn a_path_silent_from_the_start_ends_the_command_in_seconds() {
    silent_path(
        "a_path_silent_from_the_start_ends_the_command_in_seconds",
        &[],
        true,
    );
}

/// The store's own commands meet a silent path as a state command does: within the lock wait
/// and a few seconds, naming the server, with nothing written.
#[test]
fn the_store_commands_on_a_silent_path_end_in_seconds() {
    let Some((server, env, direct)) =
        migrated("the_store_commands_on_a_silent_path_end_in_seconds")
    else {
        return;
    };
    let before = everything(&direct);
    // Silent from the start (the connection's first bytes go nowhere), and silent once the
    // command asks its first question of a connected server.
    const NONE: &[&[u8]] = &[];
    const QUERY: &[&[u8]] = &[b"SELECT", b"select"];
    for (triggers, frozen) in [(NONE, true), (QUERY, false)] {
        for args in [
            &["store", "status"][..],
            &["store", "migrate"][..],
            &["store", "export", "--project", "nothing-here"][..],
        ] {
            let proxy = Proxy::start(server.port, triggers, frozen);
            let (run, took) = timed(&env, &proxy.url(), args);
            eprintln!(
                "{args:?} (frozen {frozen}): exited {} in {took:?}",
                run.code
            );
            assert!(
                took < Duration::from_secs(8),
                "{args:?} waited {took:?} on a silent path: {run:?}"
            );
            assert_ne!(run.code, 0, "{run:?}");
            let shown = format!("127.0.0.1:{}", proxy.port);
            assert!(run.stderr.contains(&shown), "{args:?}: {}", run.stderr);
        }
    }
    assert_eq!(everything(&direct), before, "nothing changed on the server");
}
