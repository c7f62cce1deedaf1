#!/usr/bin/env bash
# Claude Code's StopFailure hook on a busy machine, with the file store: the `failure_window`
# example (crates/baton/examples/failure_window.rs) runs RUNS trials for each load (quiet, two
# CPU-bound processes, four and a disk writer) and each number of owned loops (1 and 33), side by
# side in one run, each hook SIGKILLed at 100 ms as the client does; then the next session must
# find every loop interrupted, with its journal event, classed rate_limit. It also times spawn to
# durable record against the floor. It exits non-zero when a target is missed.
#
#   scripts/failure-window.sh [--runs N] [--debug] [--quick] [extra failure_window arguments]
#
# --runs N   trials per condition (default 300)
# --debug    the debug build (default: release)
# --quick    10 trials per condition, the correctness targets held, the timing ones reported
#            only (CI's run on a debug build, which is slower to start than a release one)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=300
profile=release
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --debug) profile=debug; shift ;;
    --quick) runs=10; extra+=(--timing-reported-only); shift ;;
    *) extra+=("$1"); shift ;;
  esac
done

if [ "$profile" = release ]; then
  cargo build --locked -q --release -p baton-cli --bin baton --example failure_window
else
  cargo build --locked -q -p baton-cli --bin baton --example failure_window
fi
target=${CARGO_TARGET_DIR:-target}/$profile
echo "failure-window: $runs trials per condition ($profile build), $(nproc) cores"
"$target/examples/failure_window" --baton "$target/baton" --runs "$runs" "${extra[@]}"
