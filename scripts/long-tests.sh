#!/usr/bin/env bash
# Long runs of the race and crash harnesses (crates/baton/tests/cli/{races,crash}.rs); CI runs
# the same tests with small defaults (20 race trials, 200 kills).
#
# Usage: scripts/long-tests.sh
#
# Runs, on the release build, one test at a time:
#   races::sixteen_resume_accepts_on_one_stale_loop_make_exactly_one_owner   500 trials
#   races::sixteen_loop_sets_on_one_stale_loop_make_exactly_one_takeover      500 trials
#   crash::sigkill_during_loop_transitions_never_tears_a_file_or_loses_an_acknowledged_one
#                                                                             5000 SIGKILLs
#   crash::the_crash_checker_catches_a_writer_that_truncates_in_place         200 SIGKILLs
#   runs::sixteen_sessions_racing_for_a_free_run_lock_make_exactly_one_holder 500 trials
#   ledgers::eight_concurrent_appenders_never_tear_interleave_or_lose_a_line  8 x 10,000 lines
#   ledgers::sigkilled_appenders_leave_only_sealed_fragments_and_the_survivor_loses_nothing
#                                                                             2000 SIGKILLs
#   continuation_files::sigkill_during_set_resume_point_leaves_both_files_old_or_both_new
#                                                                             1000 SIGKILLs
# Each test prints its seed and tally (kills before/after the write landed, temp files left).
#
# Override with BATON_RACE_TRIALS, BATON_CRASH_TRIALS, and BATON_CRASH_SEED to replay a crash
# plan. Measured on a 2-core machine with the release build already there: 49 s when
# the disk was idle, 108 s and 110 s while other builds and benchmarks ran (fsync latency
# dominates: the 5000-kill test alone took 16 s to 73 s; the two race tests ~16 s each). The
# release build adds about a minute when it is not cached.
set -euo pipefail

cd "$(dirname "$0")/.."

export BATON_RACE_TRIALS="${BATON_RACE_TRIALS:-500}"
export BATON_CRASH_TRIALS="${BATON_CRASH_TRIALS:-5000}"
export BATON_LEDGER_KILLS="${BATON_LEDGER_KILLS:-2000}"
export BATON_LEDGER_LINES="${BATON_LEDGER_LINES:-10000}"

# `races::` and `crash::` name the two modules; a bare `crash` would also pick up unrelated
# scenario tests.
time cargo test --release -p baton --test cli -- races:: crash:: runs::sixteen ledgers::eight ledgers::sigkilled --test-threads=1 --nocapture

# The resume point spans two files and a git status per run: 1,000 kills (BATON_RESUME_POINT_KILLS).
BATON_CRASH_TRIALS="${BATON_RESUME_POINT_KILLS:-1000}" \
    time cargo test --release -p baton --test cli -- continuation_files::sigkill_during_set_resume_point --test-threads=1 --nocapture
