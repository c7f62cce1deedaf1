#!/usr/bin/env bash
# The timeline page (`baton status --html`), made and measured in headless Chromium.
#
# Usage: scripts/timeline.sh [--shot FILE] [--bench] [-h|--help]
#
#   --shot FILE  play a short history in a throwaway repository (two agents on three tickets,
#                a rate limit and the automatic resume that took it over, a session that died,
#                a plan whose tests gate fails then passes) with the release build, and save a
#                screenshot of its page to FILE (docs/timeline.png is made this way)
#   --bench      time the page of 200 lanes and 20,000 journal events: its size; the time its
#                script takes and the time from the start of its load to the first frame drawn
#                (the page records both); and the whole headless run, the browser's start and
#                the dump of the DOM included, with hyperfine
#
# Needs chromium-headless-shell (Debian) or BATON_CHROMIUM, and hyperfine for --bench.
set -euo pipefail
cd "$(dirname "$0")/.."

shot="" bench=0
while [ $# -gt 0 ]; do
  case "$1" in
    --shot) shot="$2"; shift 2 ;;
    --bench) bench=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "timeline.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$shot" ] && [ "$bench" = 0 ]; then
  echo "timeline.sh: say what to do: --shot FILE, --bench, or both (see --help)" >&2
  exit 2
fi

browser="${BATON_CHROMIUM:-$(command -v chromium-headless-shell || command -v chromium || true)}"
if [ -z "$browser" ]; then
  echo "timeline.sh: no Chromium: apt-get install chromium-headless-shell, or set BATON_CHROMIUM" >&2
  exit 1
fi
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync)

cargo build --release --quiet
baton="$PWD/target/release/baton"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -n "$shot" ]; then
  case "$shot" in /*) ;; *) shot="$PWD/$shot" ;; esac
  repo="$work/shop"
  mkdir -p "$repo/plans/checkout"
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=x -c user.email=x@example.invalid commit -q --allow-empty -m initial
  # b SESSION HH:MM ARGS…: baton as SESSION at that time of 2026-03-02.
  b() {
    local who="$1" at="$2"
    shift 2
    (cd "$repo" && BATON_SESSION="$who" BATON_NOW="2026-03-02T$at:00Z" "$baton" "$@" >/dev/null 2>&1) ||
      { echo "timeline.sh: baton $* failed" >&2; exit 1; }
  }
  b alice 09:00 loop init SHOP-12
  b alice 09:04 loop set SHOP-12 --phase skeptic --action spawned
  b alice 09:21 loop set SHOP-12 --phase skeptic --action returned
  b alice 09:24 loop set SHOP-12 --phase qa --action spawned
  b alice 09:47 loop interrupt SHOP-12 --reason rate_limit --resume-after 2026-03-02T10:30:00Z
  b bob 10:31 resume accept SHOP-12
  b bob 10:35 loop set SHOP-12 --phase qa --action returned --epoch 1
  b bob 10:52 loop set SHOP-12 --phase skeptic --action spawned --iteration 2 --epoch 1
  b bob 11:18 loop finish SHOP-12 --status complete --epoch 1
  b carol 09:10 loop init SHOP-15
  b carol 09:14 loop set SHOP-15 --phase skeptic --action spawned
  b carol 09:40 loop set SHOP-15 --phase skeptic --action returned
  b carol 09:58 loop set SHOP-15 --phase qa --action spawned
  b bob 11:20 loop init SHOP-21
  b bob 11:26 loop set SHOP-21 --phase skeptic --action spawned
  b bob 11:49 loop set SHOP-21 --phase skeptic --action returned
  b alice 09:02 ledger init plans/checkout
  b alice 09:03 ledger start plans/checkout --phase 1
  b alice 09:33 ledger gate plans/checkout --phase 1 --name tests --fail --cmd "cargo test" --result "exit 101"
  b alice 09:45 ledger gate plans/checkout --phase 1 --name tests --pass --cmd "cargo test" --result "exit 0"
  git -C "$repo" -c user.name=x -c user.email=x@example.invalid commit -q --allow-empty -m "checkout: phase 1"
  b alice 09:46 ledger complete plans/checkout --phase 1 --tests 42/42
  b bob 10:40 ledger start plans/checkout --phase 2
  b bob 11:05 ledger gate plans/checkout --phase 2 --name lint --pass --cmd "cargo clippy" --result "exit 0"
  (cd "$repo" && BATON_NOW=2026-03-02T11:55:00Z "$baton" status --html --out "$work/page.html" >/dev/null)
  "$browser" "${flags[@]}" --user-data-dir="$work/profile" --hide-scrollbars \
    --window-size=1200,260 --screenshot="$shot" "file://$work/page.html" 2>/dev/null
  echo "timeline.sh: wrote $shot"
fi

if [ "$bench" = 1 ]; then
  page="$work/large.html"
  BATON_TIMELINE_LARGE="$page" cargo test --release --quiet -p baton-cli --test cli -- \
    timeline::the_page_of_200_lanes_and_20000_events >/dev/null
  dom() {
    "$browser" "${flags[@]}" --user-data-dir="$work/profile2" --dump-dom "file://$page" 2>/dev/null
  }
  echo "page: $(stat -c %s "$page") bytes, $(dom | grep -o 'class="lane"' | wc -l) lanes drawn"
  # The page records two times: its script's run, and the time from the start of its load to
  # the first frame drawn after the script (parse, script, style, layout, paint).
  for _ in 1 2 3 4 5 6 7 8 9 10 11; do
    d="$(dom)"
    echo "$(grep -o 'data-render-ms="[0-9.]*"' <<<"$d" | tr -dc '0-9.') $(grep -o 'data-drawn-ms="[0-9.]*"' <<<"$d" | tr -dc '0-9.')"
  done >"$work/times"
  median() { cut -d' ' -f"$1" "$work/times" | sort -n | sed -n 6p; }
  echo "script: median $(median 1) ms; drawn from the start of the load: median $(median 2) ms," \
    "max $(cut -d' ' -f2 "$work/times" | sort -n | tail -1) ms (11 loads)"
  hyperfine --warmup 1 --runs 10 \
    "'$browser' ${flags[*]} --user-data-dir=$work/profile3 --dump-dom file://$page"
fi
