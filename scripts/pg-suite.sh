#!/usr/bin/env bash
# The CLI test suite against PostgreSQL: a throwaway server (initdb as the postgres user when
# run as root, on 127.0.0.1 and a free port), its schema migrated, then
# `cargo test -p baton --test cli` with BATON_TEST_STORE naming it. Each test opens that store
# (PgStore, a project of its own), reads and writes its state through it, and passes it to every
# `baton` run as BATON_STORE; the tests of the file store itself (symlinks, modes, torn files,
# flocks, faults) say they are skipped.
#
#   scripts/pg-suite.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

pgbin=${BATON_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$pgbin/initdb" ] || { echo "pg-suite.sh: no PostgreSQL server binaries (set BATON_PG_BIN)" >&2; exit 2; }

work=$(mktemp -d /tmp/baton-pg-suite.XXXXXX)
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
[ "$started" = 1 ] || { echo "pg-suite.sh: the server did not start:" >&2; cat "$work/log" >&2; exit 1; }

url="postgres://baton@127.0.0.1:$port/postgres"
cargo build --locked -q -p baton
BATON_STORE="$url" target/debug/baton store migrate
echo "pg-suite: the CLI suite against $url"
BATON_TEST_STORE="$url" cargo test --locked -p baton --test cli "$@"
