#!/usr/bin/env bash
# The long runs of the crash, race, append and fault harnesses (crates/baton/tests/cli), on the
# release build, one test at a time; CI runs the same tests with small defaults. Figures and
# how to read them: docs/reliability.md. Fuzzing has its own script, scripts/fuzz.sh.
#
# Usage: scripts/long-tests.sh [--quick] [-h|--help]
#
#   --quick   a tenth of every count, to check the script itself in a few minutes
#
# What runs (default counts):
#   SIGKILLs across the writers, 20,000 in all:
#     crash::sigkill_during_loop_transitions_...            10,000 kills  BATON_LOOP_KILLS
#     crash::sigkill_during_run_records_...                  5,000 kills  BATON_RUN_KILLS
#     ledgers::sigkilled_appenders_...                       3,000 kills  BATON_LEDGER_KILLS
#     continuation_files::sigkill_during_set_resume_point    2,000 kills  BATON_RESUME_POINT_KILLS
#     crash::the_crash_checker_catches_a_writer_that_truncates_in_place (the naive writer)
#   Races, 32 processes x 1,000 trials on each gate (BATON_RACERS, BATON_RACE_TRIALS):
#     races::racing_resume_accepts_...  races::racing_loop_sets_...   (ownership)
#     races::racing_batch_starts_...                                  (the batch limit)
#     races::racing_accepts_of_a_legacy_loop_...                      (legacy adoption)
#     runs::sessions_racing_for_a_free_run_lock_...                   (the run lease)
#   Appends: ledgers::eight_concurrent_appenders_...   8 x 10,000 lines  BATON_LEDGER_LINES
#   Faults: faults::every_step_... with every fault at every step (BATON_FAULT_CASES=all)
#
# Each test prints its seed and its tally; BATON_CRASH_SEED replays a crash plan. Every count
# above can be overridden by its variable.
set -euo pipefail
cd "$(dirname "$0")/.."

scale=1
case "${1:-}" in
    --quick) scale=10 ;;
    -h | --help)
        sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    "") ;;
    *)
        echo "long-tests.sh: unknown argument \`$1\` (try --help)" >&2
        exit 2
        ;;
esac

loop_kills=$((${BATON_LOOP_KILLS:-10000} / scale))
run_kills=$((${BATON_RUN_KILLS:-5000} / scale))
ledger_kills=$((${BATON_LEDGER_KILLS:-3000} / scale))
resume_point_kills=$((${BATON_RESUME_POINT_KILLS:-2000} / scale))
export BATON_RACERS="${BATON_RACERS:-32}"
export BATON_RACE_TRIALS=$((${BATON_RACE_TRIALS:-1000} / scale))
export BATON_LEDGER_LINES=$((${BATON_LEDGER_LINES:-10000} / scale))
export BATON_LEDGER_KILLS="$ledger_kills"
export BATON_FAULT_CASES=all

echo "long-tests: $(date -u +%FT%TZ) on $(nproc) cores, $(uname -m)"
echo "  kills: loop $loop_kills, run $run_kills, ledger $ledger_kills, resume point $resume_point_kills" \
    "($((loop_kills + run_kills + ledger_kills + resume_point_kills)) in all)"
echo "  races: $BATON_RACERS processes x $BATON_RACE_TRIALS trials per gate; appends: 8 x $BATON_LEDGER_LINES lines"

cargo build --release --locked -p baton-cli --tests

# One test (or a group) at a time, each timed, so that the figures are each harness's own. The
# tests print their tallies; the rest of cargo's output is kept only when a test fails.
failed=()
check_run() {
    local label="$1"
    shift
    local log start=$SECONDS
    log="$(mktemp)"
    echo "== $label"
    if cargo test --release --locked -q -p baton-cli --test cli -- "$@" --test-threads=1 --nocapture >"$log" 2>&1; then
        grep -vE '^(running [0-9]+ tests?|)$|^test result|^\.+$|^ {2}[a-z]' "$log" || true
    else
        cat "$log"
        failed+=("$label")
    fi
    echo "   ($((SECONDS - start)) s)"
    rm -f "$log"
}

BATON_CRASH_TRIALS="$loop_kills" check_run "SIGKILL: loop transitions" crash::sigkill_during_loop_transitions
BATON_CRASH_TRIALS="$run_kills" check_run "SIGKILL: run records" crash::sigkill_during_run_records
check_run "SIGKILL: ledger appenders" ledgers::sigkilled_appenders
BATON_CRASH_TRIALS="$resume_point_kills" check_run "SIGKILL: the resume point" continuation_files::sigkill_during_set_resume_point
check_run "the naive writer" crash::the_crash_checker_catches
check_run "races: ownership (resume accept)" races::racing_resume_accepts
check_run "races: ownership (loop set)" races::racing_loop_sets
check_run "races: the batch limit" races::racing_batch_starts
check_run "races: legacy adoption" races::racing_accepts_of_a_legacy_loop
check_run "races: the run lease" runs::sessions_racing_for_a_free_run_lock
check_run "appends: 8 concurrent appenders" ledgers::eight_concurrent_appenders
check_run "faults: every fault at every step" faults::

echo "long-tests: finished $(date -u +%FT%TZ), ${SECONDS} s in all"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "long-tests: failed: ${failed[*]}" >&2
    exit 1
fi
