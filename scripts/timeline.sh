#!/usr/bin/env bash
# The timeline page (`baton status --html`), made and measured in headless Chromium.
#
# Usage: scripts/timeline.sh [--shot FILE] [--dark FILE] [--hour FILE] [--burst FILE] [--bench]
#                            [--debug]
#
#   --shot FILE   play a short history in a throwaway repository (three agents on three
#                 tickets, a rate limit waited out and the automatic resume that took it over,
#                 a session gone quiet, a rate limit whose reset has passed, a plan whose tests
#                 gate fails then passes) with the release build, and save a screenshot of its
#                 page to FILE (docs/timeline.png is made this way)
#   --dark FILE   the same page as a browser in dark mode draws it (docs/timeline-dark.png)
#   --hour FILE   the same page opened at its last hour (page.html#last-hour), zoomed and
#                 scrolled to now (docs/timeline-hour.png)
#   --burst FILE  a burst of forty events in two minutes, then twenty quiet minutes before now:
#                 the quiet stretch is folded, so the burst fills the axis (docs/timeline-burst.png)
#   --bench       time the page of 200 lanes and 20,000 journal events: its size; the time its
#                 script takes and the time from the start of its load to the first frame drawn
#                 (the page records both); and the whole headless run, the browser's start and
#                 the dump of the DOM included, with hyperfine
#   --debug       use the debug build the tests left, rather than building a release one (the
#                 page is the same)
#
# Needs chromium-headless-shell (Debian) or BATON_CHROMIUM, and hyperfine for --bench.
set -euo pipefail
cd "$(dirname "$0")/.."

shot="" dark="" hour="" burst="" bench=0 profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --shot) shot="$2"; shift 2 ;;
    --dark) dark="$2"; shift 2 ;;
    --hour) hour="$2"; shift 2 ;;
    --burst) burst="$2"; shift 2 ;;
    --bench) bench=1; shift ;;
    --debug) profile=debug; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "timeline.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$shot$dark$hour$burst" ] && [ "$bench" = 0 ]; then
  echo "timeline.sh: say what to do: --shot, --dark, --hour or --burst FILE, or --bench (see --help)" >&2
  exit 2
fi
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

browser="${BATON_CHROMIUM:-$(command -v chromium-headless-shell || command -v chromium || true)}"
if [ -z "$browser" ]; then
  echo "timeline.sh: no Chromium: apt-get install chromium-headless-shell, or set BATON_CHROMIUM" >&2
  exit 1
fi
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync)

if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
baton="$PWD/target/$profile/baton"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# new_repo NAME: an empty git repository in the work directory.
new_repo() {
  repo="$work/$1"
  mkdir -p "$repo/plans/checkout"
  git -C "$repo" init -q -b main
  git -C "$repo" -c user.name=x -c user.email=x@example.invalid commit -q --allow-empty -m initial
}
# b SESSION HH:MM[:SS] ARGS…: baton as SESSION at that time of 2026-03-02 (UTC).
b() {
  local who="$1" at="$2"
  shift 2
  case "$at" in ??:??) at="$at:00" ;; esac
  (cd "$repo" && BATON_SESSION="$who" BATON_NOW="2026-03-02T${at}Z" "$baton" "$@" >/dev/null 2>&1) ||
    { echo "timeline.sh: baton $* failed" >&2; exit 1; }
}
# picture PAGE FILE HEIGHT [FLAGS…]: a screenshot of PAGE (a file, with any #fragment), 1200
# pixels wide.
picture() {
  local page="$1" file height="$3"
  file="$(absolute "$2")"
  shift 3
  "$browser" "${flags[@]}" --user-data-dir="$work/profile-shot" --hide-scrollbars "$@" \
    --window-size=1200,"$height" --screenshot="$file" "file://$page" 2>/dev/null
  echo "timeline.sh: wrote $file"
}

if [ -n "$shot$dark$hour" ]; then
  new_repo shop
  # carol's session id is a client's UUID: lanes and the legend show its first 8 characters.
  carol=c4f1e2d0-9a7b-4e3c-8d21-5f6a7b8c9d0e
  b alice 09:00 loop init SHOP-12
  b alice 09:04 loop set SHOP-12 --phase skeptic --action spawned
  b alice 09:21 loop set SHOP-12 --phase skeptic --action returned
  b alice 09:24 loop set SHOP-12 --phase qa --action spawned
  b alice 09:47 loop interrupt SHOP-12 --reason rate_limit --resume-after 2026-03-02T10:30:00Z
  b bob 10:31 resume accept SHOP-12
  b bob 10:35 loop set SHOP-12 --phase qa --action returned --epoch 1
  b bob 10:52 loop set SHOP-12 --phase skeptic --action spawned --iteration 2 --epoch 1
  b bob 11:18 loop finish SHOP-12 --status complete --epoch 1
  b "$carol" 09:10 loop init SHOP-15
  b "$carol" 09:14 loop set SHOP-15 --phase skeptic --action spawned
  b "$carol" 09:40 loop set SHOP-15 --phase skeptic --action returned
  b "$carol" 09:58 loop set SHOP-15 --phase qa --action spawned
  b bob 11:20 loop init SHOP-21
  b bob 11:26 loop set SHOP-21 --phase skeptic --action spawned
  b bob 11:41 loop set SHOP-21 --phase skeptic --action returned
  b bob 11:44 loop interrupt SHOP-21 --reason rate_limit --resume-after 2026-03-02T11:52:00Z
  b alice 09:02 ledger init plans/checkout
  b alice 09:03 ledger start plans/checkout --phase 1
  b alice 09:33 ledger gate plans/checkout --phase 1 --name tests --fail --cmd "cargo test" --result "exit 101"
  b alice 09:45 ledger gate plans/checkout --phase 1 --name tests --pass --cmd "cargo test" --result "exit 0"
  git -C "$repo" -c user.name=x -c user.email=x@example.invalid commit -q --allow-empty -m "checkout: phase 1"
  b alice 09:46 ledger complete plans/checkout --phase 1 --tests 42/42
  b bob 10:40 ledger start plans/checkout --phase 2
  b bob 11:05 ledger gate plans/checkout --phase 2 --name lint --pass --cmd "cargo clippy" --result "exit 0"
  (cd "$repo" && BATON_NOW=2026-03-02T11:55:00Z "$baton" status --html --out "$work/page.html" >/dev/null 2>&1)
  [ -z "$shot" ] || picture "$work/page.html" "$shot" 420
  [ -z "$dark" ] || picture "$work/page.html" "$dark" 420 --force-dark-mode --blink-settings=preferredColorScheme=0
  [ -z "$hour" ] || picture "$work/page.html#last-hour" "$hour" 420
fi

if [ -n "$burst" ]; then
  new_repo burst
  b alice 14:00:00 loop init SHOP-30
  for i in $(seq 1 19); do
    s=$((i * 6))
    b alice "14:$(printf %02d $((s / 60))):$(printf %02d $((s % 60)))" loop set SHOP-30 --phase qa \
      --action "$([ $((i % 2)) = 1 ] && echo spawned || echo returned)"
  done
  b alice 14:02:00 loop interrupt SHOP-30 --reason session_expiry
  b bob 14:00:30 loop init SHOP-31
  for i in $(seq 1 18); do
    s=$((30 + i * 5))
    b bob "14:$(printf %02d $((s / 60))):$(printf %02d $((s % 60)))" loop set SHOP-31 --phase skeptic \
      --action "$([ $((i % 2)) = 1 ] && echo spawned || echo returned)"
  done
  b bob 14:02:10 loop finish SHOP-31 --status complete
  (cd "$repo" && BATON_NOW=2026-03-02T14:22:00Z "$baton" status --html --out "$work/burst.html" >/dev/null 2>&1)
  picture "$work/burst.html" "$burst" 330
fi

if [ "$bench" = 1 ]; then
  page="$work/large.html"
  release=()
  [ "$profile" = debug ] || release=(--release)
  BATON_TIMELINE_LARGE="$page" cargo test "${release[@]}" --quiet -p baton-cli --test cli -- \
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
