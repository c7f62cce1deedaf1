#!/usr/bin/env bash
# The CLI test suite against PostgreSQL: a throwaway server (initdb as the postgres user when
# run as root, on 127.0.0.1 and a free port), its schema migrated, then
# `cargo test -p baton-cli --test cli` with BATON_TEST_STORE naming it. Each test opens that store
# (PgStore, a project of its own), reads and writes its state through it, and passes it to every
# `baton` run as BATON_STORE; the tests of the file store itself (symlinks, modes, torn files,
# flocks, faults) say they are skipped.
#
#   scripts/pg-suite.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/pg-server.sh
pg_server_start pg-suite
cargo build --locked -q -p baton-cli
BATON_STORE="$url" target/debug/baton store migrate
echo "pg-suite: the CLI suite against $url"
BATON_TEST_STORE="$url" cargo test --locked -p baton-cli --test cli "$@"
