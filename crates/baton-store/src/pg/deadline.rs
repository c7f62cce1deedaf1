//! A bound on every round trip to the server, whatever the network does.
//!
//! The driver waits for an answer as long as the socket stays open, and a path that goes
//! silent (a cable pulled, a machine or a middlebox that stops forwarding) keeps it open for
//! as long as TCP believes the peer may come back: two hours untuned. A `Watchdog` is armed
//! around each round trip; when the answer has not come by the deadline, it shuts the
//! connection's socket down, the driver's wait ends with an error, and the call reports
//! `StoreError::Unanswered`, naming the server.
//!
//! The socket is the one the connection opened: the sockets this process holds after the
//! connect that it did not hold before (`platform::open_descriptors`, `/proc/self/fd` on Linux).

use std::collections::BTreeSet;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How much longer than what the server itself is asked to wait (a lock's wait, the
/// statement timeout) a round trip may take before the path is taken for silent.
pub const GRACE: Duration = Duration::from_secs(3);

#[derive(Default)]
struct State {
    /// When the round trip in flight is given up on.
    deadline: Option<Instant>,
    /// The connection's sockets, once known.
    sockets: Vec<RawFd>,
    /// While connecting: the sockets held before, so that the new one can be told apart.
    before: Option<BTreeSet<RawFd>>,
    fired: bool,
    quit: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Shuts the connection's socket down when a round trip outlives its deadline.
pub struct Watchdog {
    shared: Shared,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watchdog")
    }
}

/// The sockets this process holds.
fn sockets() -> BTreeSet<RawFd> {
    crate::platform::open_descriptors()
        .into_iter()
        .filter(|&fd| {
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: fstat only writes into `st`; a descriptor closed meanwhile fails.
            unsafe { libc::fstat(fd, &mut st) == 0 && st.st_mode & libc::S_IFMT == libc::S_IFSOCK }
        })
        .collect()
}

fn shut(fds: &[RawFd]) {
    for &fd in fds {
        // SAFETY: shutting a socket down closes nothing; the descriptor stays the driver's.
        unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
    }
}

impl Watchdog {
    fn start() -> Watchdog {
        let shared: Shared = Arc::default();
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("baton-pg-watchdog".into())
            .spawn(move || watch(&theirs))
            .expect("a thread for the watchdog");
        Watchdog { shared }
    }

    /// Runs `connect` within `bound`; the watchdog then watches the socket it opened.
    pub fn connect<T, E>(
        bound: Duration,
        connect: impl FnOnce() -> Result<T, E>,
    ) -> (Watchdog, Result<T, E>, bool) {
        let dog = Watchdog::start();
        dog.shared.0.lock().unwrap().before = Some(sockets());
        let (out, fired) = dog.within(bound, connect);
        let before = dog
            .shared
            .0
            .lock()
            .unwrap()
            .before
            .take()
            .unwrap_or_default();
        let opened: Vec<RawFd> = sockets().difference(&before).copied().collect();
        dog.shared.0.lock().unwrap().sockets = opened;
        (dog, out, fired)
    }

    /// Runs `call` (one round trip or a few) within `bound`; what it returned, and whether the
    /// watchdog had to end it, or had ended the connection before.
    pub fn within<T>(&self, bound: Duration, call: impl FnOnce() -> T) -> (T, bool) {
        let (lock, wake) = &*self.shared;
        {
            let mut s = lock.lock().unwrap();
            s.deadline = Some(Instant::now() + bound);
        }
        wake.notify_all();
        let out = call();
        let mut s = lock.lock().unwrap();
        s.deadline = None;
        (out, s.fired)
    }

    /// Whether the connection was shut down by the watchdog: nothing more goes through it.
    pub fn fired(&self) -> bool {
        self.shared.0.lock().unwrap().fired
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.0.lock().unwrap().quit = true;
        self.shared.1.notify_all();
    }
}

fn watch(shared: &Shared) {
    let (lock, wake) = &**shared;
    let mut s = lock.lock().unwrap();
    loop {
        if s.quit {
            return;
        }
        match s.deadline {
            None => s = wake.wait(s).unwrap(),
            Some(at) => {
                let now = Instant::now();
                if now < at {
                    s = wake.wait_timeout(s, at - now).unwrap().0;
                    continue;
                }
                let fds = match &s.before {
                    // Still connecting: the sockets opened since.
                    Some(before) => sockets().difference(before).copied().collect(),
                    None => s.sockets.clone(),
                };
                shut(&fds);
                s.fired = true;
                s.deadline = None;
            }
        }
    }
}
