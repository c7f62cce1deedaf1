//! A throwaway PostgreSQL server for tests: `initdb` in a temp directory (as the `postgres`
//! user when the tests run as root: initdb refuses root), started on 127.0.0.1 and a free
//! port with trust authentication and fsync off, stopped and removed when dropped.
//!
//! The binaries come from `$BATON_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin`, else
//! `pg_config --bindir`. Without them the tests that need a server say once that they are
//! skipped, unless `BATON_PG_REQUIRED` is set (CI sets it), which makes that a failure.

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct PgServer {
    bin: PathBuf,
    data: PathBuf,
    as_postgres: bool,
    pub port: u16,
    _dir: tempfile::TempDir,
}

fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BATON_PG_BIN") {
        return Some(dir.into());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
    });
    found.pop().or_else(|| {
        let out = Command::new("pg_config").arg("--bindir").output().ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().into())
    })
}

impl PgServer {
    /// A running server, or `None` (after one line on stderr) where none can be had.
    pub fn start(test: &str) -> Option<PgServer> {
        Self::start_with(test, None)
    }

    /// A running server that offers TLS with a certificate for `localhost` (and no other
    /// name), signed by a throwaway root; with the directory that holds the root (`ca.pem`)
    /// and an unrelated one (`other.pem`).
    pub fn start_tls(test: &str) -> Option<(PgServer, tempfile::TempDir)> {
        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(certs)
                .output()
                .expect("openssl (the command) makes the test certificates");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for (name, cn) in [("ca", "baton test root"), ("other", "another root")] {
            let key = format!("{name}.key");
            let pem = format!("{name}.pem");
            let subj = format!("/CN={cn}");
            let mut args = vec!["req", "-x509", "-days", "2", "-subj", &subj];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &pem]);
            openssl(&args);
        }
        let mut args = vec!["req", "-subj", "/CN=localhost", "-keyout", "server.key"];
        args.extend(ec);
        args.extend(["-out", "server.csr"]);
        openssl(&args);
        std::fs::write(certs.join("ext.cnf"), "subjectAltName=DNS:localhost\n").unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.crt",
        ]);
        let server = Self::start_with(test, Some(certs))?;
        Some((server, dir))
    }

    fn start_with(test: &str, certs: Option<&Path>) -> Option<PgServer> {
        let Some(bin) = bin_dir().filter(|b| b.join("initdb").exists()) else {
            assert!(
                std::env::var_os("BATON_PG_REQUIRED").is_none(),
                "BATON_PG_REQUIRED is set, but no PostgreSQL binaries were found (set BATON_PG_BIN)"
            );
            // Past the harness's capture, so that the log of a passing run shows it.
            use std::io::Write;
            let _ = std::io::stderr().write_all(
                format!(
                    "test {test} skipped: no PostgreSQL server binaries (initdb) on this machine\n"
                )
                .as_bytes(),
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let as_postgres = unsafe { libc::geteuid() } == 0;
        if as_postgres {
            let pw = Command::new("id")
                .args(["-u", "postgres"])
                .output()
                .unwrap();
            let uid: u32 = String::from_utf8_lossy(&pw.stdout)
                .trim()
                .parse()
                .expect("a postgres user");
            std::os::unix::fs::chown(dir.path(), Some(uid), None).unwrap();
        }
        let data = dir.path().join("data");
        let port = free_port();
        let mut server = PgServer {
            bin,
            data,
            as_postgres,
            port,
            _dir: dir,
        };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data.to_string_lossy(),
                "-A",
                "trust",
                "-U",
                "baton",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ],
        );
        let mut opts = format!(
            "-h 127.0.0.1 -k {} -c fsync=off -c synchronous_commit=off",
            server.data.parent().unwrap().display()
        );
        if let Some(certs) = certs {
            // The server reads its key only when the key is its own and private.
            for file in ["server.crt", "server.key"] {
                let to = server.data.join(file);
                std::fs::copy(certs.join(file), &to).unwrap();
                std::fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                    .unwrap();
                if as_postgres {
                    let uid = std::fs::metadata(&server.data).unwrap().uid();
                    std::os::unix::fs::chown(&to, Some(uid), None).unwrap();
                }
            }
            opts.push_str(" -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key");
        }
        // The port was free when asked for, and another test's server (or any process) may
        // take it before this one binds it: a server that could not bind starts again on
        // another port. Any other failure stops the test with the server's log.
        let log = server.data.parent().unwrap().join("log");
        for attempt in 1.. {
            let started = server.try_run(
                "pg_ctl",
                &[
                    "-D",
                    &server.data.to_string_lossy(),
                    "-o",
                    &format!("-p {} {opts}", server.port),
                    "-l",
                    &log.to_string_lossy(),
                    "-w",
                    "-t",
                    "120",
                    "start",
                ],
            );
            let Err(failed) = started else { break };
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            if attempt < 5 && logged.contains("could not bind") {
                server.port = free_port();
                continue;
            }
            panic!("{failed}\nthe server's log:\n{logged}");
        }
        Some(server)
    }

    /// A server program, run as the `postgres` user when the tests run as root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        if let Err(e) = self.try_run(program, args) {
            panic!("{e}");
        }
    }

    fn try_run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(program);
        let out = self
            .command(program)
            .args(args)
            .current_dir(self.data.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{program} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }

    /// The directory of the server's Unix socket.
    #[allow(dead_code)] // not every test binary that includes this file uses it
    pub fn socket_dir(&self) -> PathBuf {
        self.data.parent().unwrap_or(Path::new("/")).to_path_buf()
    }

    /// The URL of database `postgres` as the superuser `baton`.
    pub fn url(&self) -> String {
        format!("postgres://baton@127.0.0.1:{}/postgres", self.port)
    }
}

/// A port no process listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args([
                "-D",
                &self.data.to_string_lossy(),
                "-m",
                "immediate",
                "stop",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
