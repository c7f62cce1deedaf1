#!/usr/bin/env bash
# Two builds of baton side by side in one hyperfine run, on the hot paths: a phase transition
# (`loop set`), the per-turn heartbeat beside 100 other loops, and the Claude Code Stop and
# StopFailure hooks in a repository of 100 loops and 11 runs. For a change that should cost
# nothing (a reshaping), the two columns should agree within noise.
#
#   scripts/bench-compare.sh OLD_BATON NEW_BATON [--runs N]
#
# Build the old one from a clone at its commit (`cargo build --release --bin baton` there). Needs
# hyperfine, jq and git; the temp repositories go under $TMPDIR (default /tmp).
set -euo pipefail

old="${1:?usage: bench-compare.sh OLD_BATON NEW_BATON [--runs N]}"
new="${2:?usage: bench-compare.sh OLD_BATON NEW_BATON [--runs N]}"
runs=200
if [[ "${3:-}" == --runs ]]; then runs="${4:?--runs needs a number}"; fi
for b in "$old" "$new"; do
    [[ -x "$b" ]] || { echo "bench-compare.sh: $b is not an executable" >&2; exit 2; }
done
for tool in hyperfine jq git; do
    command -v "$tool" >/dev/null || { echo "bench-compare.sh: missing $tool (apt-get install $tool)" >&2; exit 1; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/baton-compare.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export BATON_SESSION=bench BATON_NOW=2026-01-31T09:30:00Z
unset CLAUDE_CODE_SESSION_ID BATON_STATE_DIR GIT_DIR GIT_WORK_TREE BATON_STORE

# One repository per build, set up by that build, so neither reads what the other wrote.
setup() { # BATON DIR
    local baton="$1" dir="$2"
    git init -q --initial-branch=main "$dir/one"
    "$baton" -C "$dir/one" loop init PROJ-1 >/dev/null
    git init -q --initial-branch=main "$dir/hooks"
    for i in $(seq 1 100); do
        BATON_SESSION="other-$i" "$baton" -C "$dir/hooks" loop init "PROJ-$i" >/dev/null
    done
    for i in $(seq 1 10); do
        BATON_SESSION="old-run-$i" BATON_NOW=2026-01-31T07:00:00Z "$baton" -C "$dir/hooks" run new --feature "feature $i" >/dev/null 2>&1
    done
    BATON_SESSION=hook-session BATON_NOW=2026-01-31T09:28:00Z "$baton" -C "$dir/hooks" loop init MINE >/dev/null
    local run
    run="$(BATON_SESSION=hook-session BATON_NOW=2026-01-31T09:28:00Z "$baton" -C "$dir/hooks" run new --feature mine | head -n 1)"
    mkdir -p "$dir/saved"
    cp "$dir/hooks/.agentic/loop-state-MINE.json" "$dir/hooks/.agentic/runs/$run.json" "$dir/saved/"
    cat >"$dir/reset" <<RESET
#!/bin/sh
cp "$dir/saved/loop-state-MINE.json" "$dir/hooks/.agentic/"
cp "$dir/saved/$run.json" "$dir/hooks/.agentic/runs/"
rm -f "$dir/hooks/.agentic/sessions/claude-hook-session.json"
RESET
    chmod +x "$dir/reset"
    for event in Stop StopFailure; do
        jq -cn --arg cwd "$dir/hooks" --arg e "$event" \
            '{session_id: "hook-session", transcript_path: "/nonexistent.jsonl", cwd: $cwd, hook_event_name: $e}
             + (if $e == "StopFailure" then {error: "rate_limit"} else {} end)' >"$dir/$event.json"
    done
}
mkdir -p "$work/old" "$work/new"
setup "$old" "$work/old"
setup "$new" "$work/new"

in_sh() { printf "sh -c 'exec %s < %s'" "$1" "$2"; }
args=()
for side in old new; do
    b="${!side}"
    d="$work/$side"
    args+=(-n "$side: loop set" "$b -C $d/one loop set PROJ-1 --phase qa --action returned --iteration 2")
    args+=(-n "$side: loop heartbeat, 100 other loops" "$b -C $d/hooks loop heartbeat PROJ-1")
done
echo "== hyperfine --runs $runs: transitions"
hyperfine -N --warmup 20 --runs "$runs" --style basic --export-json "$work/transitions.json" "${args[@]}" >/dev/null
hooks=()
for side in old new; do
    b="${!side}"
    d="$work/$side"
    hooks+=(--prepare "$d/reset" -n "$side: hook Stop, refreshing 1 loop and 1 lease" "$(in_sh "$b hook claude Stop" "$d/Stop.json")")
    hooks+=(--prepare "$d/reset" -n "$side: hook StopFailure, interrupting 1 loop and 1 lease" "$(in_sh "$b hook claude StopFailure" "$d/StopFailure.json")")
done
echo "== hyperfine --runs $runs: hooks"
hyperfine --shell=none --warmup 20 --runs "$runs" --style basic --export-json "$work/hooks.json" "${hooks[@]}" >/dev/null

echo
echo "| command | old median ms | new median ms | new / old |"
echo "|---|---|---|---|"
jq -rs '[.[].results[]] | map({key: .command, value: .median}) | from_entries as $m
    | ($m | keys | map(select(startswith("old: "))) | map(ltrimstr("old: "))) as $names
    | $names[] | . as $n
    | "| \($n) | \($m["old: " + $n] * 1000 * 1000 | round / 1000) | \($m["new: " + $n] * 1000 * 1000 | round / 1000) | \(($m["new: " + $n] / $m["old: " + $n]) * 100 | round / 100) |"' \
    "$work/transitions.json" "$work/hooks.json"
