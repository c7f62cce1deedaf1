//! Connection settings as PostgreSQL users expect them, as libpq reads them: the URL first
//! (`postgres://user:pass@host:port/db?sslmode=…`), then for what it leaves out `PGHOST`,
//! `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`,
//! `PGCONNECT_TIMEOUT`, then the password file (`PGPASSFILE`, else `~/.pgpass`, read only when no one else may read it).
//! A password is never part of what baton prints: `shown` names the server without it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use postgres::config::Host;

use super::tls::{SslMode, Tls};

/// Where and how to connect, and how to name the server without its password.
#[derive(Clone)]
pub struct Settings {
    pub config: postgres::Config,
    /// `sslmode` and the root certificates, which the driver's own parser does not take.
    pub tls: Tls,
    /// `postgres://user@host:port/db`: never a password.
    pub shown: String,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// The surroundings settings are read from: an environment variable by name, and a file's
/// text when only its owner may read it.
pub trait Surroundings {
    fn var(&self, name: &str) -> Option<String>;
    fn private_file(&self, path: &Path) -> Option<String>;
}

/// The process's own environment and files.
pub struct Process;

impl Surroundings for Process {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    fn private_file(&self, path: &Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        // As libpq: a password file others may read is ignored. Read capped and only as a
        // regular file, so that one swapped for a FIFO or a device since the look never hangs.
        if !(meta.is_file() && meta.mode() & 0o077 == 0) {
            return None;
        }
        let bytes = crate::read::read_named(path, 1024 * 1024).ok()??;
        String::from_utf8(bytes).ok()
    }
}

/// The surroundings of a URL that came from the project's committed `.baton.toml`: as
/// `inner`, but without `PGPASSWORD`, so that a cloned repository cannot send the user's
/// password to a server of its choosing. The password file still answers, for the host named.
pub struct WithoutEnvPassword<S>(pub S);

impl<S: Surroundings> Surroundings for WithoutEnvPassword<S> {
    fn var(&self, name: &str) -> Option<String> {
        (name != "PGPASSWORD").then(|| self.0.var(name)).flatten()
    }

    fn private_file(&self, path: &Path) -> Option<String> {
        self.0.private_file(path)
    }
}

/// Reads the settings for the store URL `url`.
pub fn resolve(url: &str, env: &dyn Surroundings) -> Result<Settings, String> {
    let shown_input = redact(url);
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(format!(
            "{shown_input:?} is not a PostgreSQL URL: it starts with postgres:// or postgresql://"
        ));
    }
    // The driver reads the user and password up to the first `@`: a raw `@` in a password
    // would make the rest of it a host name, printed in every message.
    if UrlParts::parse(url).is_some_and(|p| p.hosts.contains('@')) {
        return Err(format!(
            "{shown_input:?} is not a PostgreSQL URL baton can read: write an `@` in the password as %40"
        ));
    }
    // The driver fills in 5432 for a host named without a port; libpq takes PGPORT then.
    let url = match (explicit_port(url), env.var("PGPORT")) {
        (false, Some(port)) => {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("PGPORT={port:?} is not a port number"))?;
            with_port(url, port)
        }
        _ => url.to_string(),
    };
    // The TLS settings are baton's to read: the driver knows neither verify-ca nor
    // verify-full nor sslrootcert.
    let (url, ssl_mode, root_cert) = take_tls_params(&url);
    let url = url.as_str();
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| format!("{shown_input:?} is not a PostgreSQL URL: {e}"))?;
    if config.get_hosts().is_empty() {
        let hosts = env.var("PGHOST").unwrap_or_else(default_host);
        for host in hosts.split(',').filter(|h| !h.is_empty()) {
            if host.starts_with('/') {
                config.host_path(host);
            } else {
                config.host(host);
            }
        }
    }
    if config.get_ports().is_empty() {
        let port = match env.var("PGPORT") {
            Some(p) => p
                .parse()
                .map_err(|_| format!("PGPORT={p:?} is not a port number"))?,
            None => 5432,
        };
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = env
            .var("PGUSER")
            .or_else(|| env.var("USER"))
            .or_else(|| env.var("LOGNAME"))
            .ok_or("no user: put one in the URL (postgres://USER@host/db) or set PGUSER")?;
        config.user(&user);
    }
    let user = config.get_user().unwrap_or_default().to_string();
    if config.get_dbname().is_none() {
        config.dbname(&env.var("PGDATABASE").unwrap_or_else(|| user.clone()));
    }
    let mode = match ssl_mode.or_else(|| env.var("PGSSLMODE").map(|m| ("PGSSLMODE", m))) {
        None => SslMode::Prefer,
        Some((from, mode)) => SslMode::parse(&mode).ok_or_else(|| {
            format!(
                "{from}={mode:?}: sslmode is one of disable, allow, prefer, require, verify-ca, verify-full"
            )
        })?,
    };
    // As libpq: TLS is never used over a Unix socket, whatever sslmode asks for.
    let on_socket = config
        .get_hosts()
        .iter()
        .all(|h| matches!(h, Host::Unix(_)));
    let mode = if on_socket { SslMode::Disable } else { mode };
    config.ssl_mode(mode.driver());
    let root_cert = root_cert
        .or_else(|| env.var("PGSSLROOTCERT"))
        .map(PathBuf::from)
        .or_else(|| {
            let default = Path::new(&env.var("HOME")?).join(".postgresql/root.crt");
            default.is_file().then_some(default)
        });
    let tls = Tls { mode, root_cert };
    if config.get_connect_timeout().is_none() {
        let secs = env
            .var("PGCONNECT_TIMEOUT")
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        config.connect_timeout(Duration::from_secs(secs));
    }
    bound_the_network(&mut config);
    if config.get_application_name().is_none() {
        config.application_name("baton");
    }
    let host = config
        .get_hosts()
        .first()
        .map(host_name)
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let dbname = config.get_dbname().unwrap_or_default().to_string();
    if config.get_password().is_none() {
        let password = env.var("PGPASSWORD").or_else(|| {
            let file = env
                .var("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| env.var("HOME").map(|h| Path::new(&h).join(".pgpass")))?;
            pgpass_lookup(&env.private_file(&file)?, &host, port, &dbname, &user)
        });
        if let Some(password) = password {
            config.password(password);
        }
    }
    let shown = format!("postgres://{user}@{host}:{port}/{dbname}");
    Ok(Settings { config, tls, shown })
}

/// How long a peer may stay silent before its connection is taken for dead, on both ends.
pub const SILENT_PEER: Duration = Duration::from_secs(5);

/// Bounds on a silent network on this machine's end of the connection, where the URL sets
/// none: its socket probes an idle connection after 2 s, each second, and drops it after 3
/// unanswered probes, or when what it sent stays unacknowledged for `SILENT_PEER`. The server's
/// end gets the same from `SERVER_SOCKET`.
fn bound_the_network(config: &mut postgres::Config) {
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(Duration::from_secs(2));
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(Duration::from_secs(1));
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(3);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(SILENT_PEER);
    }
}

/// The session settings that bound a silent network on the server's end: its socket for this
/// session probes after 2 s idle, each second, 3 times, and drops the session when what it
/// sent stays unacknowledged `SILENT_PEER` (ms), so that the session of a machine that
/// vanished, and the locks it held, end in seconds. Set with `set_config` once connected (not
/// as startup `options`, which a pooler such as PgBouncer refuses).
pub const SERVER_SOCKET: [(&str, &str); 4] = [
    ("tcp_keepalives_idle", "2"),
    ("tcp_keepalives_interval", "1"),
    ("tcp_keepalives_count", "3"),
    ("tcp_user_timeout", "5000"),
];

/// A URL's parts as the driver reads them (tokio-postgres's parser, which is what connects):
/// the user info runs to the first `@` anywhere (so a password may hold a raw `/`, `?` or
/// `#`), the hosts to the next `/` or `?`, the database to the next `?`, then `&`-separated
/// `key=value` parameters, keys and values percent-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UrlParts<'a> {
    /// `postgres://` or `postgresql://` (any `scheme://` for redaction).
    prefix: &'a str,
    userinfo: Option<&'a str>,
    hosts: &'a str,
    /// The database, after the `/`.
    path: Option<&'a str>,
    /// The parameters, after the `?`.
    query: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    fn parse(url: &'a str) -> Option<UrlParts<'a>> {
        let start = url.find("://")? + 3;
        let (prefix, rest) = url.split_at(start);
        let (userinfo, rest) = match rest.find('@') {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        Some(Self::after_userinfo(prefix, userinfo, rest))
    }

    fn after_userinfo(prefix: &'a str, userinfo: Option<&'a str>, rest: &'a str) -> UrlParts<'a> {
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (hosts, mut rest) = rest.split_at(end);
        let mut path = None;
        if let Some(after) = rest.strip_prefix('/') {
            let end = after.find('?').unwrap_or(after.len());
            path = Some(&after[..end]);
            rest = &after[end..];
        }
        UrlParts {
            prefix,
            userinfo,
            hosts,
            path,
            query: rest.strip_prefix('?'),
        }
    }

    fn assemble(&self) -> String {
        let mut out = self.prefix.to_string();
        if let Some(userinfo) = self.userinfo {
            out.push_str(userinfo);
            out.push('@');
        }
        out.push_str(self.hosts);
        if let Some(path) = self.path {
            out.push('/');
            out.push_str(path);
        }
        if let Some(query) = self.query {
            out.push('?');
            out.push_str(query);
        }
        out
    }

    /// The parameters as `(decoded key, raw value)`, in order.
    fn params(&self) -> Vec<(String, &'a str)> {
        self.query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|pair| !pair.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) => (percent_decode(k), v),
                None => (percent_decode(pair), ""),
            })
            .collect()
    }
}

/// `text` with its `%XX` escapes decoded, as the driver decodes a URL's parts.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the URL names a port for its hosts.
fn explicit_port(url: &str) -> bool {
    UrlParts::parse(url).is_some_and(|p| {
        p.hosts.split(',').any(|h| match h.rfind(']') {
            Some(i) => h[i..].contains(':'),
            None => h.contains(':'),
        })
    })
}

/// The URL with `:port` after each of its hosts (none: unchanged).
fn with_port(url: &str, port: u16) -> String {
    let Some(mut parts) = UrlParts::parse(url).filter(|p| !p.hosts.is_empty()) else {
        return url.to_string();
    };
    let hosts: Vec<String> = parts
        .hosts
        .split(',')
        .map(|h| format!("{h}:{port}"))
        .collect();
    let hosts = hosts.join(",");
    parts.hosts = &hosts;
    parts.assemble()
}

/// libpq's default: the Debian socket directory when it is there, else localhost.
fn default_host() -> String {
    if Path::new("/var/run/postgresql").is_dir() {
        "/var/run/postgresql".into()
    } else {
        "localhost".into()
    }
}

fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(name) => name.clone(),
        Host::Unix(path) => path.display().to_string(),
    }
}

/// `url` without its `sslmode` and `sslrootcert` parameters, and their values (`sslmode`
/// with where it came from, for messages). The file name is taken as written.
fn take_tls_params(url: &str) -> (String, Option<(&'static str, String)>, Option<String>) {
    let Some(mut parts) = UrlParts::parse(url).filter(|p| p.query.is_some()) else {
        return (url.to_string(), None, None);
    };
    let (mut mode, mut root) = (None, None);
    let kept: Vec<&str> = parts
        .query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match percent_decode(key).as_str() {
                "sslmode" => {
                    mode = Some(("sslmode", percent_decode(value)));
                    false
                }
                "sslrootcert" => {
                    root = Some(value.to_string());
                    false
                }
                _ => true,
            }
        })
        .collect();
    let query = kept.join("&");
    parts.query = (!kept.is_empty()).then_some(query.as_str());
    (parts.assemble(), mode, root)
}

/// The text put in place of a password.
const HIDDEN: &str = "***";

/// `url` (a URL, or a `key=value` connection string) with any password replaced by `***`, to
/// be printed. The URL is read as the driver reads it, and where the driver would read part
/// of a password as something else (a raw `@` in it), more is hidden rather than less.
pub fn redact(url: &str) -> String {
    match UrlParts::parse(url) {
        Some(parts) => redact_url(url, parts),
        None if url.contains('=') => redact_key_values(url),
        None => url.to_string(),
    }
}

fn redact_url<'a>(url: &'a str, parts: UrlParts<'a>) -> String {
    let mut parts = parts;
    let userinfo;
    if let Some(info) = parts.userinfo
        && let Some((user, _)) = info.split_once(':')
    {
        // A raw `@` in the password: the driver takes the first `@`; the user meant a later
        // one. Everything up to the last `@` is hidden.
        let last_at = url.rfind('@').unwrap_or_default();
        parts = UrlParts::after_userinfo(parts.prefix, parts.userinfo, &url[last_at + 1..]);
        userinfo = format!("{user}:{HIDDEN}");
        parts.userinfo = Some(&userinfo);
    }
    let query: Option<String> = parts.query.map(|q| {
        q.split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if percent_decode(k) == "password" => format!("{k}={HIDDEN}"),
                _ => pair.to_string(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    parts.query = query.as_deref();
    parts.assemble()
}

/// A `key=value` connection string, as the driver reads it (values bare or in single quotes,
/// `\` escaping the next character), with the password's value hidden. What cannot be read
/// is left out.
fn redact_key_values(text: &str) -> String {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            out.push("…".to_string());
            break;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        let quoted = chars.next_if_eq(&'\'').is_some();
        let mut closed = !quoted;
        while let Some(c) = chars.next() {
            match c {
                '\\' => value.extend(chars.next()),
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                c if c.is_whitespace() && !quoted => break,
                c => value.push(c),
            }
        }
        if key == "password" {
            out.push(format!("password={HIDDEN}"));
        } else if closed {
            out.push(format!("{key}={value}"));
        }
        if !closed {
            out.push("…".to_string());
            break;
        }
    }
    out.join(" ")
}

/// Whether `url` (a URL, or a `key=value` connection string) holds a password, in any form
/// the driver reads one.
pub fn holds_password(url: &str) -> bool {
    match UrlParts::parse(url) {
        Some(parts) => {
            parts.userinfo.is_some_and(|u| u.contains(':'))
                || parts.params().iter().any(|(k, _)| k == "password")
        }
        None => redact_key_values(url)
            .split(' ')
            .any(|kv| kv == format!("password={HIDDEN}") || kv == "…"),
    }
}

/// The password `.pgpass` gives for a connection: the first line
/// `host:port:database:user:password` whose fields match (`*` matches anything; `\:` and `\\`
/// escape). A socket connection matches the host `localhost`, as in libpq.
pub fn pgpass_lookup(
    text: &str,
    host: &str,
    port: u16,
    dbname: &str,
    user: &str,
) -> Option<String> {
    let host = if host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    let port = port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        let [h, p, d, u, password] = fields.as_slice() else {
            continue;
        };
        let matches = |field: &str, value: &str| field == "*" || field == value;
        if matches(h, host) && matches(p, &port) && matches(d, dbname) && matches(u, user) {
            return Some(password.clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Fake {
        vars: HashMap<&'static str, String>,
        files: HashMap<PathBuf, String>,
    }

    impl Surroundings for Fake {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn private_file(&self, path: &Path) -> Option<String> {
            self.files.get(path).cloned()
        }
    }

    fn fake(vars: &[(&'static str, &str)]) -> Fake {
        Fake {
            vars: vars.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            files: HashMap::new(),
        }
    }

    #[test]
    fn a_url_from_the_project_file_never_takes_pgpassword() {
        let env = fake(&[("PGPASSWORD", "envpass"), ("HOME", "/home/u")]);
        let url = "postgres://u@db.internal:5432/d";
        let s = resolve(url, &env).unwrap();
        assert_eq!(s.config.get_password(), Some(&b"envpass"[..]));
        let mut env = WithoutEnvPassword(env);
        let s = resolve(url, &env).unwrap();
        assert_eq!(s.config.get_password(), None);
        env.0.files.insert(
            PathBuf::from("/home/u/.pgpass"),
            "db.internal:5432:d:u:filepass\n".into(),
        );
        let s = resolve(url, &env).unwrap();
        assert_eq!(s.config.get_password(), Some(&b"filepass"[..]));
    }

    #[test]
    fn the_url_first_then_the_pg_variables_then_the_password_file() {
        let env = fake(&[
            ("PGHOST", "db.internal"),
            ("PGPORT", "6543"),
            ("PGUSER", "envuser"),
            ("PGDATABASE", "envdb"),
            ("PGPASSWORD", "envpass"),
        ]);
        let s = resolve("postgres://", &env).unwrap();
        assert_eq!(s.shown, "postgres://envuser@db.internal:6543/envdb");
        assert_eq!(s.config.get_password(), Some(&b"envpass"[..]));
        let s = resolve("postgres://me:secret@h:1/d", &env).unwrap();
        assert_eq!(
            s.shown, "postgres://me@h:1/d",
            "the URL wins, and no password shows"
        );
        assert_eq!(s.config.get_password(), Some(&b"secret"[..]));
        assert_eq!(s.config.get_application_name(), Some("baton"));

        let mut env = fake(&[("HOME", "/home/u"), ("USER", "u")]);
        env.files.insert(
            "/home/u/.pgpass".into(),
            "# comment\nother:*:*:*:no\nh:5432:*:u:from\\:file\n".into(),
        );
        let s = resolve("postgres://h", &env).unwrap();
        assert_eq!(s.shown, "postgres://u@h:5432/u");
        assert_eq!(s.config.get_password(), Some(&b"from:file"[..]));
    }

    #[test]
    fn bad_settings_say_what_is_wrong_without_the_password() {
        let env = fake(&[("USER", "u")]);
        let e = resolve("mysql://u:hunter2@h/d", &env).unwrap_err();
        assert!(!e.contains("hunter2") && e.contains("postgres://"), "{e}");
        let e = resolve("postgres://u:hunter2@h:notaport/d", &env).unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e = resolve("postgres://h", &fake(&[("USER", "u"), ("PGPORT", "x")])).unwrap_err();
        assert!(e.contains("PGPORT"), "{e}");
        assert!(
            resolve("postgres://h", &fake(&[])).is_err(),
            "no user at all"
        );
    }

    #[test]
    fn sslmode_is_not_used_over_a_unix_socket() {
        let env = fake(&[("USER", "u"), ("PGHOST", "/var/run/postgresql")]);
        for mode in ["require", "verify-full", "verify-ca"] {
            let s = resolve(&format!("postgres:///d?sslmode={mode}"), &env).unwrap();
            assert_eq!(s.tls.mode, SslMode::Disable, "{mode}");
        }
        let s = resolve("postgres://h/d?sslmode=verify-full", &env).unwrap();
        assert_eq!(s.tls.mode, SslMode::VerifyFull, "a TCP host keeps it");
        assert!(resolve("postgres:///d?sslmode=bogus", &env).is_err());
    }

    #[test]
    fn redaction_and_pgpass_rules() {
        assert_eq!(redact("postgres://a:b@h/d"), "postgres://a:***@h/d");
        assert_eq!(
            redact("postgresql://h/d?user=a&password=b&sslmode=require"),
            "postgresql://h/d?user=a&password=***&sslmode=require"
        );
        assert_eq!(
            redact("postgres://h?password=b"),
            "postgres://h?password=***"
        );
        assert_eq!(redact("postgres://a@h"), "postgres://a@h");
        // Read as the driver reads it: the user info runs to the first `@`.
        for (url, shown) in [
            ("postgres://a:p/w@h/d", "postgres://a:***@h/d"),
            ("postgres://a:p?w@h/d?x=1", "postgres://a:***@h/d?x=1"),
            ("postgres://a:p#w@h:5/d", "postgres://a:***@h:5/d"),
            ("postgres://a:p%2F%3F%40%23w@h/d", "postgres://a:***@h/d"),
            ("postgres://a:p@w@h/d", "postgres://a:***@h/d"),
            (
                "postgres://h/d?pass%77ord=w&x=1",
                "postgres://h/d?pass%77ord=***&x=1",
            ),
            ("host=h password=w user=a", "host=h password=*** user=a"),
            (
                "host=h password = 'w x\\' y' user=a",
                "host=h password=*** user=a",
            ),
            ("host=h password='w x", "host=h password=*** …"),
            ("host=h password", "host=h …"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
            assert!(holds_password(url), "{url}");
        }
        assert!(!holds_password("postgres://a@h/d?sslmode=require"));
        assert!(!holds_password("host=h user=a"));
        let (url, mode, root) =
            take_tls_params("postgres://a:p?sslmode=x@h/d?sslmode=require&sslrootcert=/r.pem");
        assert_eq!(url, "postgres://a:p?sslmode=x@h/d");
        assert_eq!(
            (mode.unwrap().1, root.unwrap()),
            ("require".into(), "/r.pem".into())
        );
        assert!(!explicit_port("postgres://a:p/w@h/d") && explicit_port("postgres://a:p/w@h:1/d"));
        assert!(explicit_port("postgres://a:b@h:1/d") && !explicit_port("postgres://a:b@h/d"));
        assert!(!explicit_port("postgres://[::1]/d") && explicit_port("postgres://[::1]:5/d"));
        assert_eq!(
            with_port("postgres://a@h1,h2/d", 7),
            "postgres://a@h1:7,h2:7/d"
        );
        assert_eq!(with_port("postgres:///d", 7), "postgres:///d");
        let text = "*:*:db1:alice:one\n*:5432:*:*:two\n";
        assert_eq!(
            pgpass_lookup(text, "x", 5432, "db1", "alice").as_deref(),
            Some("one")
        );
        assert_eq!(
            pgpass_lookup(text, "/run/pg", 5432, "db2", "bob").as_deref(),
            Some("two")
        );
        assert_eq!(pgpass_lookup(text, "x", 1, "db2", "bob"), None);
    }
}
