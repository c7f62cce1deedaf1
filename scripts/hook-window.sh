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

pgbin=${BATON_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "hook-window.sh: no PostgreSQL server binaries (set BATON_PG_BIN)" >&2; exit 2; }

if [ "$profile" = release ]; then
  cargo build --locked -q --release -p baton --bin baton --example hook_window
else
  cargo build --locked -q -p baton --bin baton --example hook_window
fi
target=${CARGO_TARGET_DIR:-target}/$profile

work=$(mktemp -d /tmp/baton-hook-window.XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$work"
  as_pg=(runuser -u postgres --)
fi
cleanup() {
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"${as_pg[@]}" "$pgbin/initdb" -D "$work/data" -A trust -U baton --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null

# A free port: the first of a few random ones the server starts on.
started=0
for _ in 1 2 3 4 5 6 7 8; do
  port=$((20000 + RANDOM % 20000))
  if "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/data" -l "$work/log" -w start \
    -o "-h 127.0.0.1 -p $port -k $work -c fsync=off -c synchronous_commit=off -c max_connections=200" >/dev/null 2>&1; then
    started=1
    break
  fi
done
[ "$started" = 1 ] || { echo "hook-window.sh: the server did not start:" >&2; cat "$work/log" >&2; exit 1; }

url="postgres://baton@127.0.0.1:$port/postgres"
BATON_STORE="$url" "$target/baton" store migrate >/dev/null
echo "hook-window: $runs StopFailure runs ($profile build) against $url"
"$target/examples/hook_window" --baton "$target/baton" --url "$url" --runs "$runs" \
  --expect-no-roundtrip "${extra[@]}"
