#!/usr/bin/env bash
# Two machines on one box against one PostgreSQL server: network namespaces joined by veth
# pairs (addresses only inside them), the server in one, baton in two others, each with a host
# name of its own. Needs root, ip (iproute2), unshare, and the PostgreSQL server binaries.
#
#   scripts/fleet.sh [--trials N] [--no-cut] [--no-vanish] [--soak SECONDS] [--window SLOTS]
#                    [--window-before] [--debug]
#
# --debug uses the debug build `cargo test` leaves instead of a release build (for CI).
# 1. Race: N times (default 200), a loop is interrupted, then a session on each machine runs
#    `baton resume accept` at the same moment: exactly one must win each time.
# 2. Cut (skipped with --no-cut; takes about 90 s): machine 1 holds a run lease with a 60 s TTL
#    and heartbeats it every 5 s; its link is cut; machine 2 is refused until the TTL has passed
#    by the server's clock, then takes the run over; the link comes back, and machine 1's next
#    heartbeat refreshes nothing and its write on its old epoch is refused.
# 3. Vanish (skipped with --no-vanish; takes about 10 s): machine 1 holds a state lock (a
#    session advisory lock, through baton's own connection) and its link is cut with no word
#    to the server; machine 2 must get the lock within 10 s of the cut (the server drops the
#    silent session: keepalives and tcp_user_timeout baton sets for it); the link comes back,
#    and machine 1's write at the revision it read under the lock is refused.
# 4. Soak (default 120 s; --soak 0 skips it): 64 simulated agents, 32 on each machine, cycle
#    init / set / heartbeat / interrupt / accept on 16 shared tickets; then the journal must
#    hold every acknowledged write, and no ticket two owners at one epoch. Prints operations
#    per second and latency percentiles (crates/baton/examples/fleet_soak.rs).
# 5. Window (--window SLOTS, default 16; 0 skips it; takes about 4 minutes, and 3 more with
#    --window-before): SLOTS supervisors, half on each machine, every other one on account A,
#    the rest on account B, start 4 s apart, each on a task of its own, with a stand-in client
#    whose "API" closes account A's window 10 s in, for 140 s, and refuses every launch on A
#    inside it with Claude Code's 5-hour limit error. Counts the launches into the closed
#    window. It must be exactly one (the launch that meets the limit); B's supervisors never
#    wait; at the reset exactly one of A's supervisors launches first, and the rest follow its
#    first turn. --window-before runs the same fleet first with the wait turned off
#    (BATON_WINDOW=off: what baton did before), for the figure in docs/performance.md.
#
# Prints one line per check and exits non-zero on the first that fails.
set -euo pipefail
cd "$(dirname "$0")/.."

trials=200
cut=1
vanish=1
soak=120
window_slots=16
window_before=0
profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --trials) trials="$2"; shift 2 ;;
    --no-cut) cut=0; shift ;;
    --no-vanish) vanish=0; shift ;;
    --soak) soak="$2"; shift 2 ;;
    --window) window_slots="$2"; shift 2 ;;
    --window-before) window_before=1; shift ;;
    --debug) profile=dev; shift ;;
    *) echo "usage: scripts/fleet.sh [--trials N] [--no-cut] [--no-vanish] [--soak SECONDS] [--window SLOTS] [--window-before] [--debug]" >&2; exit 2 ;;
  esac
done

[ "$(id -u)" = 0 ] || { echo "fleet.sh: run as root (network namespaces)" >&2; exit 2; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "fleet.sh: no PostgreSQL server binaries" >&2; exit 2; }
cargo build --profile "$profile" --locked -q -p baton-cli --bin baton --example fleet_soak
dir=release
[ "$profile" = release ] || dir=debug
baton="$PWD/target/$dir/baton"
soaker="$PWD/target/$dir/examples/fleet_soak"

ns=(baton-srv baton-m1 baton-m2)
work=$(mktemp -d /tmp/baton-fleet.XXXXXX)
chmod 755 "$work"
cleanup() {
  [ -z "${holder:-}" ] || kill "$holder" 2>/dev/null || true
  [ -z "${locker:-}" ] || kill "$locker" 2>/dev/null || true
  ip netns exec baton-srv runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; ip netns add "$n"; done
for i in 1 2; do
  ip link add "bm$i" type veth peer name "bs$i"
  ip link set "bm$i" netns "baton-m$i"
  ip link set "bs$i" netns baton-srv
  ip -n baton-srv addr add "10.77.$i.1/24" dev "bs$i"
  ip -n "baton-m$i" addr add "10.77.$i.2/24" dev "bm$i"
  ip -n baton-srv link set "bs$i" up
  ip -n "baton-m$i" link set "bm$i" up
  ip -n "baton-m$i" link set lo up
done
ip -n baton-srv link set lo up

# The server, inside its namespace, for both machines' addresses.
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg/data" -A trust -U baton --no-sync >/dev/null
echo "host all all 10.77.0.0/16 trust" >> "$work/pg/data/pg_hba.conf"
ip netns exec baton-srv runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg/data" \
  -o "-c listen_addresses=* -p 5432 -k $work/pg -c fsync=off" -l "$work/pg/log" -w start >/dev/null

# One clone of the project per machine: the same name on the server (its root commit).
git init -q "$work/origin"
git -C "$work/origin" -c user.name=t -c user.email=t@e commit -q --allow-empty -m init
for i in 1 2; do git clone -q "$work/origin" "$work/m$i"; done

# `machine I COMMAND…`: a command on machine I (its own namespace, host name and store URL).
machine() {
  local i="$1"; shift
  unshare --uts sh -c 'hostname "$0" && exec "$@"' "machine-$i" \
    ip netns exec "baton-m$i" env BATON_STORE="postgres://baton@10.77.$i.1:5432/postgres" "$@"
}
# `on I SESSION ARGS…`: baton on machine I as SESSION.
on() {
  local i="$1" session="$2"; shift 2
  machine "$i" env BATON_SESSION="$session" "$baton" -C "$work/m$i" "$@"
}

on 1 setup store migrate >/dev/null
echo "fleet: server in baton-srv, machines baton-m1 and baton-m2"

start=$(date +%s.%N)
for t in $(seq 1 "$trials"); do
  on 1 "S$t" loop init "T-$t" >/dev/null
  on 1 "S$t" loop interrupt "T-$t" --reason unknown >/dev/null
  set +e
  on 1 "A$t" resume accept "T-$t" >/dev/null 2>&1 & a=$!
  on 2 "B$t" resume accept "T-$t" >/dev/null 2>&1 & b=$!
  wait "$a"; ra=$?; wait "$b"; rb=$?
  set -e
  wins=$(( (ra == 0) + (rb == 0) ))
  if [ "$wins" != 1 ] || { [ "$ra" != 0 ] && [ "$ra" != 3 ]; } || { [ "$rb" != 0 ] && [ "$rb" != 3 ]; }; then
    echo "fleet: FAIL race trial $t: machine 1 exit $ra, machine 2 exit $rb" >&2
    exit 1
  fi
done
secs=$(echo "$(date +%s.%N) - $start" | bc)
echo "fleet: race: $trials trials, exactly one owner each time ($secs s)"

# Where the work is owned, as the other machine sees it.
on 1 OWNER loop init OWNED-1 >/dev/null
on 2 X status > "$work/status"
grep -q "owned on another machine: machine-1" "$work/status" || {
  echo "fleet: FAIL machine 2's status does not say OWNED-1 is owned on machine-1" >&2; cat "$work/status" >&2; exit 1
}
echo "fleet: status on machine 2 says a loop of machine 1 is owned on machine-1"

if [ "$soak" -gt 0 ]; then
  for i in 1 2; do
    machine "$i" env BATON_PROJECT=fleet-soak "$soaker" agents --baton "$baton" --dir "$work/m$i" \
      --machine "$i" --agents 32 --first $(( (i - 1) * 32 )) --tickets 16 --seconds "$soak" \
      --out "$work/soak-$i" &
  done
  wait
  machine 1 env BATON_PROJECT=fleet-soak "$soaker" check --baton "$baton" --dir "$work/m1" \
    --tickets 16 --seconds "$soak" "$work/soak-1" "$work/soak-2" || {
    echo "fleet: FAIL soak" >&2; exit 1
  }
fi

if [ "$vanish" = 1 ]; then
  machine 1 "$soaker" hold --seconds 300 > "$work/hold" 2>&1 &
  locker=$!
  for _ in $(seq 1 100); do grep -q '^held' "$work/hold" && break; sleep 0.1; done
  read_rev=$(awk '/^held/ {print $2}' "$work/hold")
  [ -n "$read_rev" ] || { echo "fleet: FAIL machine 1 did not take the lock" >&2; cat "$work/hold" >&2; exit 1; }
  set +e
  machine 2 "$soaker" take --seconds 1 > "$work/take-live" 2>&1; live=$?
  set -e
  [ "$live" != 0 ] || { echo "fleet: FAIL machine 2 took a lock machine 1 holds" >&2; cat "$work/take-live" >&2; exit 1; }
  ip -n baton-m1 link set bm1 down
  cut_at=$(date +%s.%N)
  machine 2 "$soaker" take --seconds 120 > "$work/take" 2>&1 || {
    echo "fleet: FAIL machine 2 never got the lock of the vanished machine" >&2; cat "$work/take" >&2; exit 1
  }
  freed=$(echo "$(date +%s.%N) - $cut_at" | bc)
  ip -n baton-m1 link set bm1 up
  if [ "$(echo "$freed > 10" | bc)" = 1 ]; then
    echo "fleet: FAIL the vanished machine's lock was freed only $freed s after the cut (bound: 10 s)" >&2; exit 1
  fi
  machine 1 "$soaker" write "$read_rev" > "$work/rewrite" 2>&1 || true
  grep -q '^refused' "$work/rewrite" || {
    echo "fleet: FAIL machine 1's write at the revision it read under the lost lock was not refused" >&2
    cat "$work/rewrite" >&2; exit 1
  }
  kill "$locker" 2>/dev/null || true
  wait "$locker" 2>/dev/null || true
  locker=
  echo "fleet: vanish: the lock of a machine cut off the network was free for another ${freed} s after the cut; its write on return refused by revision"
fi

# The stand-in client of the window check: it fires Claude Code's hooks, and its "API" refuses
# a launch on an account inside that account's closed window (`$api/<account>.window`: from
# and until, in epoch seconds) with the 5-hour limit's error and its reset.
cat > "$work/claude" <<'STANDIN'
#!/bin/bash
set -u
api="$FLEET_API"
acct="$BATON_ACCOUNT"
now=$(date +%s)
session="$(hostname)-$$-$RANDOM"
prev=""
for a in "$@"; do [ "$prev" = "--resume" ] && session="$a"; prev="$a"; done
hook() { printf '%s' "$2" | baton hook claude "$1" >/dev/null 2>&1; }
p() { printf '{"session_id":"%s","hook_event_name":"%s","cwd":"%s"%s}' "$session" "$1" "$PWD" "${2:-}"; }
hook SessionStart "$(p SessionStart ',"source":"startup"')"
hook UserPromptSubmit "$(p UserPromptSubmit ',"prompt":"task"')"
read -r from until < "$api/$acct.window" 2>/dev/null || { from=0; until=0; }
if [ "$now" -ge "$from" ] && [ "$now" -lt "$until" ]; then
  echo "$now $acct $(hostname) $SLOT refused" >> "$api/launches"
  hook StopFailure "$(p StopFailure ',"error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · 5-hour limit reached ∙ try again in '"$((until - now))"'s"')"
  hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
  exit 1
fi
echo "$now $acct $(hostname) $SLOT ran" >> "$api/launches"
sleep 2
hook Stop "$(p Stop ',"stop_hook_active":false')"
hook SessionEnd "$(p SessionEnd ',"reason":"other"')"
exit 0
STANDIN
chmod 755 "$work/claude"
mkdir -p "$work/m1/.claude" "$work/m2/.claude"

# `window_fleet MODE`: the fleet of the window check, with the wait on (`after`) or off
# (`before`); prints the launches into A's closed window and leaves the launches in
# $work/api-MODE/launches.
window_fleet() {
  local mode="$1" api="$work/api-$1" off=""
  [ "$mode" = before ] && off=off
  mkdir -p "$api"
  chmod 777 "$api"
  on 1 X window reopen --client claude >/dev/null 2>&1 || true
  local t0 pids=() i m acct
  t0=$(date +%s)
  echo "$((t0 + 10)) $((t0 + 150))" > "$api/fleet-A.window"
  for i in $(seq 0 $((window_slots - 1))); do
    m=$(( i % 2 + 1 )); acct=fleet-A
    [ $(( (i / 2) % 2 )) = 1 ] && acct=fleet-B
    machine "$m" env PATH="$work:$(dirname "$baton"):$PATH" FLEET_API="$api" SLOT="$i" \
      BATON_ACCOUNT="$acct" BATON_WINDOW="$off" \
      "$baton" -C "$work/m$m" supervise --ticket "W-$mode-$i" --client claude -- claude -p "task $i" \
      > "$api/slot-$i.out" 2>&1 &
    pids+=($!)
    sleep 4
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "fleet: FAIL a supervisor of the window check ($mode) failed" >&2; cat "$api"/slot-*.out >&2; exit 1; }
  done
  awk '$2 == "fleet-A" && $5 == "refused"' "$api/launches" | wc -l
}

if [ "$window_slots" -gt 0 ]; then
  on 1 X init claude >/dev/null 2>&1; on 2 X init claude >/dev/null 2>&1
  if [ "$window_before" = 1 ]; then
    before=$(window_fleet before)
    echo "fleet: window before (BATON_WINDOW=off): $window_slots supervisors on two accounts launched $before agents into account A's closed window"
  fi
  after=$(window_fleet after)
  api="$work/api-after"
  [ "$after" = 1 ] || {
    echo "fleet: FAIL $after launches into the closed window, not 1" >&2; cat "$api/launches" >&2; exit 1
  }
  # B's supervisors never waited for A's window.
  for i in $(seq 0 $((window_slots - 1))); do
    [ $(( (i / 2) % 2 )) = 1 ] || continue
    if grep -q "window is closed" "$api/slot-$i.out"; then
      echo "fleet: FAIL supervisor $i, on account B, waited for account A's window" >&2; cat "$api/slot-$i.out" >&2; exit 1
    fi
  done
  # At the reset, exactly one of A's launches comes first; the next one at least 10 s later.
  until_at=$(awk '{print $2}' "$work/api-after/fleet-A.window")
  first=$(awk -v u="$until_at" '$2 == "fleet-A" && $1 >= u {print $1}' "$api/launches" | sort -n | head -2 | tr '\n' ' ')
  set -- $first
  if [ $# -ge 2 ] && [ $(( $2 - $1 )) -lt 9 ]; then
    echo "fleet: FAIL two of A's supervisors launched within $(( $2 - $1 )) s of each other at the reset" >&2
    cat "$api/launches" >&2; exit 1
  fi
  echo "fleet: window: $window_slots supervisors on two accounts, two machines: 1 launch into account A's closed window; at the reset one probe, the rest after its first turn; account B never waited"
fi

[ "$cut" = 1 ] || exit 0
run=$(on 1 A run new --feature fleet --lease-ttl 60 2>/dev/null)
[ -n "$run" ] || { echo "fleet: FAIL no run id" >&2; exit 1; }
# The holder keeps its lease alive every 5 s, as an agent's hooks do, whenever it can reach the
# server; each answer is kept.
# (A beat fails while the link is cut; the loop goes on.)
( set +e
  while [ ! -e "$work/stop-holder" ]; do
    on 1 A --json run heartbeat "$run" --epoch 1 >> "$work/beats" 2>/dev/null
    echo >> "$work/beats"
    sleep 5
  done ) &
holder=$!
sleep 12
grep -q '"refreshed":true' "$work/beats" || {
  echo "fleet: FAIL the holder's heartbeats did not land before the cut" >&2; cat "$work/beats" >&2; exit 1
}
set +e
on 2 B run resume "$run" > "$work/live" 2>&1; live=$?
set -e
[ "$live" != 0 ] || { echo "fleet: FAIL machine 2 took a live run over" >&2; cat "$work/live" >&2; exit 1; }
ip -n baton-m1 link set bm1 down
cut_at=$(date +%s)
set +e
on 2 B run resume "$run" > "$work/early" 2>&1; early=$?
set -e
if [ "$early" = 0 ]; then
  echo "fleet: FAIL machine 2 took the run over before the TTL" >&2; cat "$work/early" >&2; exit 1
fi
grep -q "another machine" "$work/early" || {
  echo "fleet: FAIL the refusal does not say the holder is on another machine" >&2; cat "$work/early" >&2; exit 1
}
# The last heartbeat landed at most 5 s before the cut; the lease is stale 60 s after it.
sleep 62
on 2 B run resume "$run" > "$work/late" 2>&1 || {
  echo "fleet: FAIL machine 2 could not take the run over after the TTL" >&2; cat "$work/late" >&2; exit 1
}
taken=$(( $(date +%s) - cut_at ))
ip -n baton-m1 link set bm1 up
# The holder's next heartbeat reaches the server again and refreshes nothing.
: > "$work/beats"
sleep 8
touch "$work/stop-holder"
wait "$holder" || true
grep -q '"refreshed":false' "$work/beats" || {
  echo "fleet: FAIL the old holder's heartbeat after the link returned was not refused" >&2; cat "$work/beats" >&2; exit 1
}
if grep -q '"refreshed":true' "$work/beats"; then
  echo "fleet: FAIL the old holder refreshed a lease it had lost" >&2; cat "$work/beats" >&2; exit 1
fi
set +e
on 1 A run finish "$run" --epoch 1 --status complete > "$work/old" 2>&1; old=$?
set -e
if [ "$old" != 3 ]; then
  echo "fleet: FAIL machine 1's write on its old epoch gave exit $old, not 3" >&2; cat "$work/old" >&2; exit 1
fi
echo "fleet: cut: the holder heartbeating; refused before the TTL (holder on another machine), taken over ${taken} s after the cut, the old holder's heartbeat and write refused by epoch"
