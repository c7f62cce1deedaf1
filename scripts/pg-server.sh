# A throwaway PostgreSQL server for the scripts that need one, sourced (not run):
#
#   . scripts/pg-server.sh
#   pg_server_start NAME      # sets $url (postgres://baton@127.0.0.1:PORT/postgres); stopped
#                             # and removed when the script exits
#
# initdb as the postgres user when run as root (initdb refuses root), trust authentication,
# fsync off, on 127.0.0.1 and the first free one of a few random ports. The binaries come from
# $BATON_PG_BIN, else the newest /usr/lib/postgresql/*/bin.

pg_server_start() {
  local name=$1
  pgbin=${BATON_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
  [ -x "$pgbin/initdb" ] || { echo "$name: no PostgreSQL server binaries (set BATON_PG_BIN)" >&2; exit 2; }
  pg_work=$(mktemp -d "/tmp/baton-$name.XXXXXX")
  as_pg=()
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$pg_work"
    as_pg=(runuser -u postgres --)
  fi
  trap pg_server_stop EXIT
  "${as_pg[@]}" "$pgbin/initdb" -D "$pg_work/data" -A trust -U baton --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
  local started=0 port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 20000))
    if "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pg_work/data" -l "$pg_work/log" -w start \
      -o "-h 127.0.0.1 -p $port -k $pg_work -c fsync=off -c synchronous_commit=off -c max_connections=200" >/dev/null 2>&1; then
      started=1
      break
    fi
  done
  [ "$started" = 1 ] || { echo "$name: the server did not start:" >&2; cat "$pg_work/log" >&2; exit 1; }
  url="postgres://baton@127.0.0.1:$port/postgres"
}

pg_server_stop() {
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pg_work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pg_work"
}
