//! A TCP proxy on loopback that holds every chunk it forwards, in either direction, for a fixed
//! delay before passing it on, in order: a server that many milliseconds away, one way, on a
//! machine with no `netem`. A connection's handshake costs its round trip too: the client's
//! `connect` returns at once on loopback, so its first bytes are held one round trip longer.
//! It counts the connections it accepts, so that a caller can tell whether a command connected
//! at all. (Used by `tests/e2e/network.rs` and `examples/hook_window.rs`.)

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct DelayProxy {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
}

impl DelayProxy {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to `target`, every
    /// chunk `delay` late.
    pub fn start(target: SocketAddr, delay: Duration) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let at = Instant::now();
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                pump(client, server2, delay, at + 2 * delay);
                pump(server, client2, delay, at);
            }
        });
        Ok(DelayProxy { port, accepted })
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

/// Forwards `from` to `to`: a reader queues each chunk with the time it is due (`delay` after
/// it was read, and never before `not_before + delay`), a writer delivers the chunks in order,
/// each at its time, and passes the end of the stream on once the queue is empty.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration, not_before: Instant) {
    let (send, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let at = Instant::now().max(not_before) + delay;
            if send.send((at, buf[..n].to_vec())).is_err() {
                break;
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
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
