//! The in-process floors of a state write and a state read, for `docs/performance.md`.
//!
//! `atomic_replace/1KiB` is the cost of one crash-safe replace (temp file, write, fsync,
//! rename, directory fsync) with no process start, no lock and no serde: the floor under every
//! `baton loop set` and `baton loop heartbeat`. `atomic_replace/1KiB-no-fsync` does the same
//! temp-and-rename without either fsync, so the difference between the two is what durability
//! costs on this disk. `read_parse/loop-state` is the read half of every loop write: a capped
//! read and the schema-checked typed parse of a realistic loop-state file.
//! `heartbeat_path/in-process` is a whole heartbeat without the process: root discovery, the
//! lock, read, parse, serialize and the replace.
//!
//! The temp directory is made under `BATON_BENCH_DIR` when it is set (scripts/bench.sh points
//! it at the filesystem the whole-process runs use, since fsync cost is a property of the
//! filesystem), else under the system temp directory.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};

use baton_core::model::LoopState;
use baton_store::atomic::replace;
use baton_store::read::{STATE_FILE_CAP, parse_state, read_capped};
use baton_store::{FileStore, Layout, StateStore};

/// A loop in its second Skeptic/QA iteration, as `baton loop set` leaves it after a few
/// transitions: findings and a QA failure recorded, a Brief attached, one field from a newer
/// conductor kept. About 1.2 KiB pretty-printed, like the files baton writes.
const LOOP_STATE: &str = r#"{
  "schema_version": 1,
  "session_id": "3f2b9c4e-8d1a-4e57-9b0c-6a2f1d7e5c38",
  "ticket_id": "PROJ-1234",
  "loop_key": "PROJ-1234",
  "branch": "feature/PROJ-1234-rate-limit-resume",
  "repo": "/home/dev/src/acme-platform",
  "base_branch": "main",
  "status": "active",
  "interrupted_at": null,
  "interrupt_reason": null,
  "last_phase": "qa",
  "last_phase_action": "returned",
  "loop_state": {
    "phase": "qa",
    "iteration": 2,
    "max_iterations": 5,
    "findings_log": [
      "skeptic: the retry path swallows the 429 body; keep it for the resume packet",
      "skeptic: no test pins the behaviour when the lease file is a symlink",
      "qa: rerun of the gate after the fix is green"
    ],
    "qa_failures_log": [
      "cargo test -p acme-api: resume::tests::stale_lease_is_taken_over failed (expected epoch 3, got 2)"
    ],
    "last_engineer_summary": "Kept the 429 body in the interruption record and fenced the takeover with the owner epoch.",
    "termination_reason": null
  },
  "last_updated": "2026-01-31T09:30:00Z",
  "resume_count": 1,
  "brief_path": "plans/PROJ-1234/brief.md",
  "plan_path": null,
  "promotion_tier": "brief",
  "owner_epoch": 1,
  "conductor_note": "kept across rewrites"
}
"#;

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("BATON_BENCH_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .expect("create the bench directory")
}

/// The first KiB of the fixture: a replace does not look at the content, only its size counts.
fn payload_1kib() -> Vec<u8> {
    let mut bytes = LOOP_STATE.as_bytes().to_vec();
    bytes.resize(1024, b' ');
    bytes[1023] = b'\n';
    bytes
}

/// The same temp-and-rename as `replace` with both fsyncs left out; only for comparison.
fn replace_without_fsync(path: &Path, tmp: &Path, bytes: &[u8]) {
    let mut file = std::fs::File::create(tmp).expect("create temp");
    file.write_all(bytes).expect("write temp");
    drop(file);
    std::fs::rename(tmp, path).expect("rename");
}

fn atomic_replace(c: &mut Criterion) {
    let dir = bench_dir();
    let path: PathBuf = dir.path().join("loop-state-PROJ-1234.json");
    let bytes = payload_1kib();
    replace(&path, &bytes).expect("first replace");

    let mut group = c.benchmark_group("atomic_replace");
    group.bench_function("1KiB", |b| {
        b.iter(|| replace(black_box(&path), black_box(&bytes)).expect("replace"))
    });
    let tmp = dir.path().join(".loop-state-PROJ-1234.json.tmp-bench");
    group.bench_function("1KiB-no-fsync", |b| {
        b.iter(|| replace_without_fsync(black_box(&path), &tmp, black_box(&bytes)))
    });
    group.finish();
}

fn read_parse(c: &mut Criterion) {
    let dir = bench_dir();
    let path = dir.path().join("loop-state-PROJ-1234.json");
    std::fs::write(&path, LOOP_STATE).expect("write the loop-state fixture");
    // A fixture the parser rejects would measure an error path; fail loudly instead.
    let (state, _) =
        parse_state::<LoopState>(&path, LOOP_STATE.as_bytes()).expect("fixture parses");
    assert_eq!(state.loop_state.findings_log.len(), 3);

    let mut group = c.benchmark_group("read_parse");
    group.bench_function("loop-state", |b| {
        b.iter(|| {
            let bytes = read_capped(black_box(&path), STATE_FILE_CAP)
                .expect("read")
                .expect("present");
            parse_state::<LoopState>(&path, &bytes).expect("parse")
        })
    });
    group.finish();
}

/// What `baton loop heartbeat` does between parsing its arguments and printing, in process:
/// find the root, take the lock, read and parse the loop, serialize it and replace it. Set
/// against the whole-process figure, the rest is process start, argument parsing and output.
fn heartbeat_path(c: &mut Criterion) {
    let dir = bench_dir();
    let root = dir.path().join("repo");
    // A `.git` directory is all that root discovery looks for.
    std::fs::create_dir_all(root.join(".git")).expect("create .git");
    let work_dir = root.join("src");
    std::fs::create_dir_all(&work_dir).expect("create a work directory");
    let key = "PROJ-1234";
    let (mut state, _) = parse_state::<LoopState>(Path::new("fixture"), LOOP_STATE.as_bytes())
        .expect("fixture parses");
    let store = FileStore::new(Layout::discover(&work_dir, None).expect("discover"));
    {
        let _guard = store.lock(baton_store::LockScope::Loop(key)).expect("lock");
        state.repo = Some(root.display().to_string());
        store
            .write_loop(key, &state, &baton_store::Expect::Absent)
            .expect("first write");
    }

    let mut group = c.benchmark_group("heartbeat_path");
    group.bench_function("in-process", |b| {
        b.iter(|| {
            let store =
                FileStore::new(Layout::discover(black_box(&work_dir), None).expect("discover"));
            let _guard = store.lock(baton_store::LockScope::Loop(key)).expect("lock");
            let mut loaded = store.read_loop(key).expect("read").expect("present");
            loaded.state.last_updated = Some("2026-01-31T09:30:00Z".to_string());
            store
                .write_loop(key, &loaded.state, &loaded.expect())
                .expect("write");
        })
    });
    group.finish();
}

criterion_group!(benches, atomic_replace, read_parse, heartbeat_path);
criterion_main!(benches);
