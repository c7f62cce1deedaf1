//! Replays the committed fuzz corpus on stable: every input of `fuzz/corpus/<target>/` and of
//! `fuzz/regressions/<target>/` goes through the target's function, so a change that breaks a
//! property the fuzzer once checked fails here, without nightly or a fuzzer.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `target` on `file`, naming the file when a property fails.
fn replay(name: &str, target: fn(&[u8]), file: &Path) {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        // A fuzzer running on the corpus replaces inputs with smaller ones as it goes.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("{}: {e}", file.display()),
    };
    if std::panic::catch_unwind(|| target(&bytes)).is_err() {
        panic!(
            "fuzz target {name} fails on {} (reproduce with `cargo +nightly fuzz run {name} {}`)",
            file.display(),
            file.display()
        );
    }
}

#[test]
fn every_target_has_a_corpus_and_keeps_its_properties_on_it() {
    for (name, target) in baton_fuzz::TARGETS {
        let corpus = inputs(&fuzz_dir().join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name}/ is missing or empty: seed it and minimise it (scripts/fuzz.sh --help)"
        );
        for file in corpus
            .iter()
            .chain(&inputs(&fuzz_dir().join("regressions").join(name)))
        {
            replay(name, target, file);
        }
    }
}

/// A target added to the library without its libFuzzer wrapper, or the other way round, would
/// never be fuzzed or never be replayed.
#[test]
fn every_target_has_a_fuzz_binary_and_every_fuzz_binary_a_target() {
    let mut binaries: Vec<String> = inputs(&fuzz_dir().join("fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    binaries.sort();
    let mut targets: Vec<String> = baton_fuzz::TARGETS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    targets.sort();
    assert_eq!(binaries, targets);
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for name in &targets {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml declares no [[bin]] {name}"
        );
    }
}

/// Each fuzz binary calls the library function of its own name, so what is fuzzed is what is
/// replayed here.
#[test]
fn every_fuzz_binary_calls_its_own_target() {
    for (name, _) in baton_fuzz::TARGETS {
        let path = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let source =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            source.contains(&format!("baton_fuzz::{name}(")),
            "{} does not call baton_fuzz::{name}",
            path.display()
        );
    }
}
