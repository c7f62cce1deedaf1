#!/usr/bin/env bash
# Claude Code's StopFailure hook against a PostgreSQL store 20 ms away: a throwaway server
# (initdb as the postgres user when run as root, on 127.0.0.1 and a free port, fsync off), its
# schema migrated, then the `hook_window` example (crates/baton/examples/hook_window.rs): a delay
# proxy of its own in front of the server, RUNS StopFailure hooks each timed from spawn to exit
# against the 100 ms Claude Code gives them, each interrupt found on the server exactly once, and
# the per-turn hooks that change nothing checked to make no connection. It exits non-zero when
# any of that fails.
#
#   scripts/hook-window.sh [--runs N] [--debug] [--quick] [extra hook_window arguments]
#
# --runs N   StopFailure runs (default 300)
# --debug    the debug build (default: release)
# --quick    20 runs, times reported but not held to the window (CI's run on a debug build)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=300
profile=release
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --debug) profile=debug; shift ;;
    --quick) runs=20; extra+=(--no-window); shift ;;
    *) extra+=("$1"); shift ;;
  esac
done

if [ "$profile" = release ]; then
  cargo build --locked -q --release -p baton-cli --bin baton --example hook_window
else
  cargo build --locked -q -p baton-cli --bin baton --example hook_window
fi
target=${CARGO_TARGET_DIR:-target}/$profile

. scripts/pg-server.sh
pg_server_start hook-window
BATON_STORE="$url" "$target/baton" store migrate >/dev/null
echo "hook-window: $runs StopFailure runs ($profile build) against $url"
"$target/examples/hook_window" --baton "$target/baton" --url "$url" --runs "$runs" \
  --expect-no-roundtrip "${extra[@]}"
