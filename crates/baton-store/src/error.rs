use std::path::PathBuf;

/// What went wrong with a state file, always naming the file and carrying the fix.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is a symbolic link; baton never reads or writes state through a link")]
    Symlink { path: PathBuf },
    #[error(
        "{path} is not a regular file (a device, a FIFO or a directory); baton reads and writes only regular files"
    )]
    NotRegular { path: PathBuf },
    #[error("{path} is a file where baton needs a directory")]
    NotADirectory { path: PathBuf },
    #[error("{path} belongs to uid {owner}, not to this user (uid {me})")]
    NotOwned { path: PathBuf, owner: u32, me: u32 },
    /// A state file another user owns: it could have been planted to steer a run.
    #[error(
        "{path} belongs to uid {owner}, not to this user (uid {me}); baton never trusts a state file another user could have planted"
    )]
    ForeignFile { path: PathBuf, owner: u32, me: u32 },
    /// A state directory another user owns.
    #[error(
        "{path} belongs to uid {owner}, not to this user (uid {me}); baton keeps state only in a directory of its own user"
    )]
    ForeignDir { path: PathBuf, owner: u32, me: u32 },
    /// A state directory every user may write to: any of them could plant or swap a file in it.
    #[error(
        "{path} is writable by every user (mode {mode:04o}); another user could plant or swap state in it"
    )]
    OpenDir { path: PathBuf, mode: u32 },
    #[error("{path} is {size} bytes, over the {cap}-byte cap for a state file")]
    TooLarge { path: PathBuf, size: u64, cap: u64 },
    #[error("{path} is empty")]
    Empty { path: PathBuf },
    #[error("{path} is not valid state JSON: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path} has schema_version {found}; this baton knows up to {known}, so it only reads it"
    )]
    NewerSchema {
        path: PathBuf,
        found: u64,
        known: u32,
    },
    #[error(
        "{path} is locked by {} and was not released within {waited:.1?}",
        holder.map_or_else(|| "another process".to_string(), |pid| format!("pid {pid}"))
    )]
    LockBusy {
        path: PathBuf,
        holder: Option<u32>,
        waited: std::time::Duration,
    },
    #[error("writing {path} would make it {size} bytes, over the {cap}-byte cap baton reads back")]
    TooLargeToWrite { path: PathBuf, size: u64, cap: u64 },
    #[error("{path} changed while baton was about to rewrite it; nothing was written")]
    ChangedUnderfoot { path: PathBuf },
    /// A write fenced on what its writer read, refused because the record is not that any more.
    #[error(
        "{path} changed since baton read it (expected {expected}, found {found}); nothing was written"
    )]
    Conflict {
        path: PathBuf,
        expected: String,
        found: String,
    },
    /// An agent client's own SQLite file that could not be read (baton only ever reads one).
    #[error("cannot read {path}, the agent client's own database: {detail}")]
    ClientDb { path: PathBuf, detail: String },
    #[error("cannot {action} the PostgreSQL server {server}: {message}")]
    Db {
        action: &'static str,
        /// The server, named without its password.
        server: String,
        message: String,
    },
    /// The connection to the server was lost before the write's commit was sent: the server
    /// rolled the transaction back, and nothing was written.
    #[error(
        "the connection to the PostgreSQL server {server} was lost before {path} was committed ({message}); nothing was written"
    )]
    WriteLost {
        path: PathBuf,
        server: String,
        message: String,
    },
    /// The connection was lost after the commit was sent and before its answer came back:
    /// the write and its journal events landed together, or neither did.
    #[error(
        "the connection to the PostgreSQL server {server} was lost after the commit of {path} was sent ({message}): commit outcome unknown, the change and its journal event may or may not have landed"
    )]
    CommitUnknown {
        path: PathBuf,
        server: String,
        message: String,
        /// The command that shows whether it landed.
        check: String,
    },
    #[error(
        "cannot {action} the PostgreSQL server {server}: no answer within {:.1}s: the network path to it went silent, or the server is stuck",
        waited.as_secs_f64()
    )]
    Unanswered {
        action: &'static str,
        /// The server, named without its password.
        server: String,
        waited: std::time::Duration,
    },
    /// A change by a caller that does not hold the record's lock, refused by the strict
    /// in-memory store (`store::memory`): on the files or a server it would race.
    #[error("{path} was to be changed without its lock held; nothing was written")]
    Unlocked { path: PathBuf },
    #[error("git {args} failed in {dir}: {detail}")]
    Git {
        args: String,
        dir: PathBuf,
        detail: String,
    },
}

impl StoreError {
    pub fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.into();
        move |source| StoreError::Io { op, path, source }
    }

    /// The fix to print under the error.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::Io { path, source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Some(permission_fix(path))
            }
            StoreError::Io { op, path, .. } if *op == "fsync directory" => Some(format!(
                "the change is in {} but the disk did not confirm it, so it may not survive a \
                 power cut: check the disk, then run the command again",
                path.display()
            )),
            StoreError::Io { path, source, .. } if source.raw_os_error() == Some(libc::ENOSPC) => {
                Some(format!(
                    "the disk holding {} is full: free space, then run the command again",
                    path.display()
                ))
            }
            StoreError::Io { path, .. } => Some(format!(
                "check the disk holding {} (the kernel log may say more), then run the command \
                 again",
                path.display()
            )),
            StoreError::Symlink { path } => Some(format!(
                "replace the link with the real file or directory it points to, or remove it: `rm {}`",
                path.display()
            )),
            StoreError::NotOwned { path, .. } => Some(format!(
                "baton imports only a file this user wrote; if you trust it, copy it (`cp {} ./mine.json`) and pass `--from ./mine.json`",
                path.display()
            )),
            StoreError::ForeignFile { path, owner, me } => Some(format!(
                "nothing was changed; if uid {owner} did not write it, remove it (`rm {0}`); if it is yours, take it back (`chown {me} {0}`)",
                path.display()
            )),
            StoreError::ForeignDir { path, owner, me } => Some(format!(
                "nothing was changed; run baton as uid {owner}, or if the directory is yours, take it back: `chown -R {me} {}`",
                path.display()
            )),
            StoreError::OpenDir { path, .. } => Some(format!(
                "nothing was changed; take write access away from other users: `chmod o-w {}`",
                path.display()
            )),
            StoreError::NotRegular { path } => {
                Some(format!("move {} out of the way", path.display()))
            }
            StoreError::NotADirectory { path } => Some(format!(
                "move {} out of the way (baton creates the directory), or point `BATON_STATE_DIR` elsewhere",
                path.display()
            )),
            StoreError::LockBusy { holder, .. } => Some(match holder {
                Some(pid) => format!(
                    "nothing was changed; retry when pid {pid} is done (`ps -p {pid}` shows it); if it hangs, stop it"
                ),
                None => "nothing was changed; retry in a moment".into(),
            }),
            StoreError::Db { action, .. } if *action == "connect to" => Some(
                "check that the server runs and the URL (BATON_STORE or --store), PGHOST, PGPORT, PGUSER and the password (PGPASSWORD or ~/.pgpass) name it".into(),
            ),
            StoreError::Db { .. } => None,
            StoreError::ClientDb { .. } => Some(
                "baton only reads it, for the session's goal; check it with the client's own commands (its goal, its status)".into(),
            ),
            StoreError::WriteLost { .. } => {
                Some("nothing was changed; run the command again when the server answers".into())
            }
            StoreError::CommitUnknown { check, .. } => Some(format!(
                "check whether it landed with `{check}` (and `baton log` for its history) before running the command again; a retry is fenced on what it reads, so it never applies the change twice"
            )),
            StoreError::Unanswered { .. } => Some(
                "this command gave up on the server, and changed nothing the server had not confirmed (a write it sent just before the silence may have landed: `baton status` shows the state); check the network to the server and that it runs, then run the command again".into(),
            ),
            StoreError::TooLargeToWrite { .. } => Some(
                "nothing was written; shorten what you are recording (a summary, a finding, a note)"
                    .into(),
            ),
            StoreError::TooLarge { path, .. }
            | StoreError::Empty { path }
            | StoreError::Corrupt { path, .. } => Some(format!(
                "no state was changed; inspect the file, then move it aside to start over: `mv {0} {0}.bad`",
                path.display()
            )),
            StoreError::NewerSchema { .. } => Some(
                "upgrade baton to a version that knows this schema; nothing was changed".into(),
            ),
            StoreError::Unlocked { .. } => {
                Some("a change is made under its record's lock (`StateStore::lock`)".into())
            }
            StoreError::ChangedUnderfoot { .. } | StoreError::Conflict { .. } => Some(
                "another program is editing it; run the command again once it is done".into(),
            ),
            // Git refuses a repository another user owns until it is trusted.
            StoreError::Git { dir, detail, .. } if detail.contains("dubious ownership") => {
                Some(format!(
                    "git trusts a repository another user owns only once told to: `git config --global --add safe.directory {}` (as the user that runs baton and the agent), then run the command again; nothing was changed",
                    baton_core::text::shell_quote(&dir.to_string_lossy())
                ))
            }
            StoreError::Git { args, dir, .. } => Some(format!(
                "run the git command yourself to see all it says: `git -C {} {args}`",
                baton_core::text::shell_quote(&dir.to_string_lossy())
            )),
        }
    }
}

/// What makes `path` writable again: its directory's or its own mode, or its owner, whichever
/// refuses this user; nothing was changed.
fn permission_fix(path: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let quote = |p: &std::path::Path| baton_core::text::shell_quote(&p.to_string_lossy());
    let refusing = [dir, path]
        .into_iter()
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| (p, m)))
        .find(|(_, m)| {
            let write = if m.uid() == me { 0o200 } else { 0o002 };
            m.mode() & write == 0
        });
    match refusing {
        Some((p, m)) if m.uid() == me => format!(
            "{} is not writable: `chmod u+w {}`, then run the command again",
            p.display(),
            quote(p)
        ),
        Some((p, m)) => format!(
            "{} belongs to uid {}, and this is uid {me}: run baton as its owner, or take it back (`chown {me} {}`)",
            p.display(),
            m.uid(),
            quote(p)
        ),
        None => format!(
            "check the ownership and mode of {} and of {}",
            path.display(),
            dir.display()
        ),
    }
}
