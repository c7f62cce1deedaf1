//! All CLI tests, in one binary (one link step, one place to look). Every module here must be
//! listed below; `every_test_file_is_listed` fails when one is forgotten.

mod autonomous_dev;
mod clau_kit;
mod clients_more;
mod codex_plugin;
mod common;
mod continuation;
mod continuation_files;
mod copilot;
mod crash;
mod dinostack;
mod doctor;
mod exit_truth;
mod failure_record;
mod faults;
mod finish;
mod guard;
mod hook_sequences;
mod hooks;
mod hostile;
mod hostile_files;
mod hostile_output;
mod init;
mod journal;
mod judge;
mod ledgers;
mod live_sessions;
mod monorepo;
mod opencode;
mod outbox;
mod pg_faults;
mod privileges;
mod races;
mod regressions;
mod runs;
mod scenarios;
mod seed_rules;
mod session_start_guards;
mod session_start_guards_batch;
mod session_start_guards_lease;
mod snapshots;
mod store;
mod store_network;
mod store_races;
mod supervise;
mod timeline;
mod wait;
mod window;

#[test]
fn every_test_file_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "main"
        {
            assert!(
                main.contains(&format!("mod {module};")),
                "tests/cli/{name} is not listed in main.rs"
            );
        }
    }
}
