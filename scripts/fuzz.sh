#!/usr/bin/env bash
# Fuzzes every parser of outside input with cargo-fuzz (libFuzzer), a few targets at a time,
# each for a fixed CPU time, and prints per target: executions, seconds, crashes, corpus size.
# The targets are the functions of crates/baton-fuzz; fuzz/fuzz_targets/ wraps each one.
#
# New inputs the fuzzer finds are added to fuzz/corpus/<target>/; a crash is written under
# fuzz/artifacts/<target>/. Re-minimise the corpus (--cmin) before committing it: the stable
# test crates/baton-fuzz/tests/corpus.rs replays every committed input.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: scripts/fuzz.sh [OPTIONS] [TARGET...]

Fuzzes each TARGET (default: every target in fuzz/fuzz_targets/) for a fixed CPU time with the
libFuzzer binaries `cargo +nightly fuzz build` makes, under `nice -n 19`, and prints a table:
executions, seconds of wall and CPU time, crashes (0 expected) and the corpus size afterwards.

Options:
  -s, --seconds N   fuzz each target until it has had N seconds of CPU time (default 600:
                    10 CPU-minutes per target); it runs in rounds of libFuzzer's
                    -max_total_time, since under `nice` a busy machine gives it less CPU than
                    wall time
  -j, --jobs N      run N targets at a time (default 2, one per core of a 2-core machine)
      --cmin        do not fuzz: re-minimise each target's corpus (like `cargo fuzz cmin`,
                    with libFuzzer's -set_cover_merge=1), keeping a smallest set of inputs
                    that reaches all the coverage, and print the sizes before and after
      --list        print the target names and exit
  -h, --help        print this help and exit

Needs a nightly toolchain and cargo-fuzz; this script installs neither:
  rustup toolchain install nightly
  cargo install cargo-fuzz --locked

Logs go to fuzz/logs/<target>.log. A crash's input is in fuzz/artifacts/<target>/; replay it
with `cargo +nightly fuzz run <target> <file>`. Once the bug is fixed, keep the input under
fuzz/regressions/<target>/ so the stable corpus test replays it for ever.
The exit status is 1 when any target crashed, 2 on a usage or setup error.
EOF
}

seconds=600
jobs=2
cmin=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -s | --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    -j | --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --cmin) cmin=1; shift ;;
    --list) ls fuzz/fuzz_targets | sed 's/\.rs$//'; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
case "$seconds$jobs" in
  *[!0-9]*) echo "fuzz.sh: --seconds and --jobs take whole numbers" >&2; exit 2 ;;
esac
[ "$jobs" -ge 1 ] || jobs=1
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/fuzz_targets/$t.rs" ] || { echo "fuzz.sh: no target $t (see --list)" >&2; exit 2; }
done

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz.sh: no nightly toolchain; install it with \`rustup toolchain install nightly\`" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz is not installed; install it with \`cargo install cargo-fuzz --locked\`" >&2
  exit 2
fi

mkdir -p fuzz/logs
corpus_size() {
  local dir="fuzz/corpus/$1"
  printf '%s files, %s bytes' "$(find "$dir" -type f | wc -l)" \
    "$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
}

echo "fuzz.sh: building the targets (nightly, AddressSanitizer)"
nice -n 19 cargo +nightly fuzz build
# The binaries are run as built here, not through `cargo fuzz run` or `cargo fuzz cmin`, which
# would rebuild them whenever a source file changed while they ran.
bin_dir="fuzz/target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

if [ "$cmin" = 1 ]; then
  # What `cargo fuzz cmin` does, merging the corpus into an empty directory and putting the
  # result in its place, but with libFuzzer's set-cover merge, which keeps a smallest set of
  # inputs reaching every feature the corpus reaches (about half what a plain merge keeps).
  for t in "${targets[@]}"; do
    echo "== $t: before $(corpus_size "$t")"
    kept=$(mktemp -d "fuzz/.cmin-$t.XXXXXX")
    nice -n 19 "$bin_dir/$t" -set_cover_merge=1 -timeout=10 -rss_limit_mb=4096 "$kept" "fuzz/corpus/$t" \
      >"fuzz/logs/$t.cmin.log" 2>&1
    rm -rf "fuzz/corpus/$t"
    mv "$kept" "fuzz/corpus/$t"
    chmod 755 "fuzz/corpus/$t"
    echo "== $t: after  $(corpus_size "$t")"
  done
  exit 0
fi

# One target: fuzz it until it has had $seconds of CPU time, then write its figures to
# fuzz/logs/<target>.result. libFuzzer limits wall time only, and under `nice` on a shared
# machine a second of wall time may be much less than a second of CPU, so the target runs in
# rounds of the CPU time still owed until it has had it all (or crashed).
fuzz_one() {
  local t=$1 log="fuzz/logs/$1.log" extra=()
  [ -d "fuzz/regressions/$t" ] && extra=("fuzz/regressions/$t")
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  : >"$log"
  local status=0 execs=0 wall=0 cpu=0 round=0
  while [ "$status" = 0 ] && [ "$cpu" -lt "$seconds" ]; do
    round=$((round + 1))
    local owed=$((seconds - cpu))
    [ "$owed" -ge 30 ] || owed=30
    /usr/bin/time -f 'cpu: %U %S wall: %e' -o "fuzz/logs/$t.time" \
      nice -n 19 "$bin_dir/$t" "fuzz/corpus/$t" "${extra[@]}" \
      -artifact_prefix="fuzz/artifacts/$t/" -max_total_time="$owed" -print_final_stats=1 \
      -timeout=10 -rss_limit_mb=4096 >>"$log" 2>&1 || status=$?
    local n
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=$((execs + ${n:-0}))
    read -r round_cpu round_wall < <(awk '/^cpu:/ {printf "%.0f %.0f\n", $2 + $3, $5}' "fuzz/logs/$t.time")
    cpu=$((cpu + round_cpu))
    wall=$((wall + round_wall))
    echo "fuzz.sh: round $round: $n executions, ${round_cpu}s CPU, ${round_wall}s wall" >>"$log"
  done
  local crashes=0
  if [ "$status" != 0 ]; then
    crashes=$(grep -c 'Test unit written to' "$log" || true)
    [ "$crashes" -gt 0 ] || crashes=1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$execs" "$wall" "$cpu" "$crashes" \
    "$(corpus_size "$t")" >"fuzz/logs/$t.result"
}

echo "fuzz.sh: ${#targets[@]} targets, $seconds s each, $jobs at a time; started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
running=0
for t in "${targets[@]}"; do
  rm -f "fuzz/logs/$t.result"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
echo "fuzz.sh: finished $(date -u +%Y-%m-%dT%H:%M:%SZ)"

failed=0
printf '%-12s %14s %8s %8s %8s  %s\n' target executions wall_s cpu_s crashes corpus
for t in "${targets[@]}"; do
  if [ ! -f "fuzz/logs/$t.result" ]; then
    printf '%-12s did not report; see fuzz/logs/%s.log\n' "$t" "$t"
    failed=1
    continue
  fi
  IFS=$'\t' read -r name execs wall cpu crashes corpus <"fuzz/logs/$t.result"
  printf '%-12s %14s %8s %8s %8s  %s\n' "$name" "$execs" "$wall" "$cpu" "$crashes" "$corpus"
  if [ "$crashes" != 0 ]; then
    failed=1
    grep -m1 'Test unit written to' "fuzz/logs/$t.log" || true
  fi
done
exit "$failed"
