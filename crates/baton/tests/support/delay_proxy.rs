//! A TCP proxy on loopback that holds every chunk it forwards, in either direction, for a fixed
//! delay before passing it on, in order: a server that many milliseconds away, one way, on a
//! machine with no `netem`. It counts the connections it accepts, so that a caller can tell
//! whether a command connected at all.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct DelayProxy {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
}

impl DelayProxy {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to
    /// `127.0.0.1:target`, every chunk `delay` late.
    pub fn start(target: u16, delay: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on loopback");
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    pump(from, to, delay);
                }
            }
        });
        DelayProxy { port, accepted }
    }

    /// How many connections it has accepted.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// A PostgreSQL URL through the proxy, as user `baton`, database `postgres`.
    pub fn url(&self) -> String {
        format!("postgres://baton@127.0.0.1:{}/postgres", self.port)
    }
}

/// Reads from `from` and writes each chunk to `to` once `delay` has passed since it was read.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (send, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if send
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        for (at, chunk) in due {
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            if to.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
