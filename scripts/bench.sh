#!/usr/bin/env bash
# Whole-process and in-process benchmarks of baton's hot paths, with the floors measured in the
# same run, for docs/performance.md. Beside them, in the same hyperfine run, a seed-style
# baseline: scripts/seed_baseline.py does the jobs of `loop set` and `ledger block` the way the
# seed protocols have an agent do them today (python3, json, fcntl, a rewrite in place and a
# plain append), and in a durable variant with baton's fsyncs, on files of the same shape.
#
#   scripts/bench.sh            the full run: hyperfine --warmup 20 --runs 300, criterion defaults
#   scripts/bench.sh --quick    far fewer runs, for CI: under a minute once the bench is built
#   scripts/bench.sh --debug    the debug build `cargo test` leaves, not a release build: for
#                               CI, which checks that every step runs and keeps no figure
#   scripts/bench.sh --out DIR  write the hyperfine JSON and the summary to DIR
#                               (default: a new directory under $TMPDIR, printed at the end)
#
# Needs hyperfine, jq and python3 (Debian packages); installs nothing. The temp repositories are
# made under $TMPDIR (default /tmp), and the criterion bench writes its temp files there too, so
# the fsync floor and the commands measure the same filesystem. The baseline runs the interpreter
# behind `python3` on the PATH, or $BATON_BENCH_PYTHON (a path, e.g. /usr/bin/python3).
#
# Timings are only worth comparing on a quiet machine: a concurrent build that writes many files
# makes every fsync wait for that writeback (ext4 commits one journal for everyone), so the share
# of CPU time not idle is printed before and after, with a warning above 10%.

set -euo pipefail

quick=0
out=""
profile=release
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) quick=1 ;;
        --debug) profile=dev ;;
        --out)
            out="${2:?--out needs a directory}"
            shift
            ;;
        -h | --help)
            sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "bench.sh: unknown argument \`$1\` (try --help)" >&2
            exit 2
            ;;
    esac
    shift
done

missing=()
for tool in hyperfine jq git python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "bench.sh: missing ${missing[*]}" >&2
    for tool in "${missing[@]}"; do
        case "$tool" in
            hyperfine | jq | git | python3) echo "  apt-get install $tool" >&2 ;;
            cargo) echo "  install Rust with rustup (https://rustup.rs)" >&2 ;;
        esac
    done
    exit 1
fi

if [[ $quick -eq 1 ]]; then
    # Enough to check that every step runs (CI keeps no figure), few enough that the debug
    # build's slow commands (`resume` over 10,000 loops) do not make it CI's longest step.
    warmup=1
    runs=10
    # Criterion's smallest sample is 10; a short measurement keeps the whole bench near 10 s.
    criterion_args=(--warm-up-time 0.5 --measurement-time 2 --sample-size 10)
else
    warmup=20
    runs=300
    criterion_args=()
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

tmp_base="${TMPDIR:-/tmp}"
work="$(mktemp -d "$tmp_base/baton-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# hyperfine -N splits each command on whitespace, so the repository paths must have none.
if [[ "$work" =~ [[:space:]] ]]; then
    echo "bench.sh: the temp directory \`$work\` contains whitespace; set TMPDIR elsewhere" >&2
    exit 1
fi
if [[ -z "$out" ]]; then
    out="$(mktemp -d "$tmp_base/baton-bench-results.XXXXXX")"
else
    mkdir -p "$out"
fi
out="$(cd "$out" && pwd)"

echo "== build ($profile)"
cargo build --profile "$profile" --quiet -p baton-cli
target_dir="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)"
if [[ $profile == dev ]]; then
    baton="$target_dir/debug/baton"
else
    baton="$target_dir/release/baton"
fi
"$baton" --version
# The interpreter itself, not a version manager's shim in front of it (a pyenv shim is a shell
# script that adds over 100 ms to every start).
python="${BATON_BENCH_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
"$python" --version

# A hermetic environment: no user or system git config, a fixed clock, one session id.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export BATON_SESSION=bench BATON_NOW=2026-01-31T09:30:00Z
unset CLAUDE_CODE_SESSION_ID BATON_STATE_DIR GIT_DIR GIT_WORK_TREE

new_repo() {
    git init -q --initial-branch=main "$1"
}

echo "== setup in $work"
one="$work/one"
new_repo "$one"
"$baton" -C "$one" loop init PROJ-1 >/dev/null

# The same loop, with 100 other loops (owned by other sessions) beside it in .agentic.
many="$work/many"
new_repo "$many"
"$baton" -C "$many" loop init PROJ-1 >/dev/null
for i in $(seq 2 101); do
    BATON_SESSION="other-$i" "$baton" -C "$many" loop init "PROJ-$i" >/dev/null
done
n_loops="$(find "$many/.agentic" -maxdepth 1 -name 'loop-state-*.json' | wc -l)"
if [[ "$n_loops" -ne 101 ]]; then
    echo "bench.sh: expected 101 loop files in $many/.agentic, found $n_loops" >&2
    exit 1
fi

# A single run, resumed by its own holder: one git call, the plan and project file read and
# hashed, the lease refreshed with an fsync'd replace. Its floor is that git call.
runs_repo="$work/run"
new_repo "$runs_repo"
mkdir -p "$runs_repo/.claude" "$runs_repo/plans"
printf '# Project\n\n## GOALS\nShip.\n\n## SCOPE\nThe CLI.\n\n## CONSTRAINTS\nNo daemon.\n' >"$runs_repo/.claude/PROJECT.md"
printf '# Plan\n\n1. Edit src/limiter.rs.\n2. Test it.\n' >"$runs_repo/plans/plan.md"
git -C "$runs_repo" add . && git -C "$runs_repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m plan
run_id="$("$baton" -C "$runs_repo" run new --plan plans/plan.md | head -n 1)"
export GIT_OPTIONAL_LOCKS=0

# A plan ledger of 100,000 events over 20 phases (gates, parked findings, waivers, each phase
# started and completed), for `ledger derive --no-gates`; and a small one for single appends.
ledger_repo="$work/ledger"
new_repo "$ledger_repo"
git -C "$ledger_repo" -c user.name=bench -c user.email=bench@example.invalid commit -q --allow-empty -m base
mkdir -p "$ledger_repo/plans/big" "$ledger_repo/plans/small"
echo "# Plan" >"$ledger_repo/plans/big/plan.md"
echo "# Plan" >"$ledger_repo/plans/small/plan.md"
base="$(git -C "$ledger_repo" rev-parse --short=7 HEAD)"
awk -v h="$base" 'BEGIN {
    print "# run-state — plan: plans/big/plan.md"
    t = " @ 2026-01-31T09:30:00Z"
    for (p = 1; p <= 20; p++) {
        printf "phase %d: started (base %s)%s\n", p, h, t
        for (i = 0; i < 4998; i++) {
            if (i % 3 == 0) printf "phase %d: gate tests-%d → PASS (evidence: cargo test -p crate%d → exit 0: test result: ok. 12 passed)%s\n", p, i, i, t
            else if (i % 3 == 1) printf "phase %d: parked — finding %d in module m%d — ruling: out of scope for this phase%s\n", p, i, i, t
            else printf "phase %d: waiver — rule-%d — approved by alice / vendored%s\n", p, i, t
        }
        printf "phase %d: complete (commits %s..%s, tests 41/42, review clean)%s\n", p, h, h, t
    }
}' >"$ledger_repo/plans/big/STATE.md"
"$baton" -C "$ledger_repo" ledger init plans/small >/dev/null
"$baton" -C "$ledger_repo" ledger derive plans/big --no-gates | grep -q 'phase · ledger claim' ||
    { echo "bench.sh: ledger derive failed" >&2; exit 1; }
[[ "$(grep -c '' "$ledger_repo/plans/big/STATE.md")" -eq 100001 ]] ||
    { echo "bench.sh: the big ledger does not hold 100,000 events" >&2; exit 1; }

# The seed-style baseline: scripts/seed_baseline.py on a loop file and a ledger of the same shape
# as baton's, made by baton (PROJ-1 rewritten in place, PROJ-2 replaced durably; one ledger
# each). The script is copied beside them, so no path on its command line has whitespace.
seed_py="$work/seed_baseline.py"
cp scripts/seed_baseline.py "$seed_py"
if [[ "$python" =~ [[:space:]] ]]; then
    echo "bench.sh: the python3 interpreter's path \`$python\` contains whitespace" >&2
    exit 1
fi
seed_repo="$work/seed"
new_repo "$seed_repo"
"$baton" -C "$seed_repo" loop init PROJ-1 >/dev/null
"$baton" -C "$seed_repo" loop init PROJ-2 >/dev/null
seed_loop="$seed_repo/.agentic/loop-state-PROJ-1.json"
seed_loop_durable="$seed_repo/.agentic/loop-state-PROJ-2.json"
mkdir -p "$ledger_repo/plans/seed" "$ledger_repo/plans/seed-durable"
echo "# Plan" >"$ledger_repo/plans/seed/plan.md"
echo "# Plan" >"$ledger_repo/plans/seed-durable/plan.md"
"$baton" -C "$ledger_repo" ledger init plans/seed >/dev/null
"$baton" -C "$ledger_repo" ledger init plans/seed-durable >/dev/null
seed_ledger="$ledger_repo/plans/seed/STATE.md"
seed_ledger_durable="$ledger_repo/plans/seed-durable/STATE.md"
# The line `baton ledger block plans/small --phase 1 --reason benchmark` appends, less its stamp.
seed_line="'phase 1: BLOCKED — benchmark'"
# The jobs are done before they are timed: baton reads the transition back as its own, and
# each ledger ends with the line, stamped as baton stamps it.
"$python" "$seed_py" loop-set "$seed_loop" qa returned 2
"$python" "$seed_py" loop-set "$seed_loop_durable" qa returned 2 --durable
for key in PROJ-1 PROJ-2; do
    "$baton" -C "$seed_repo" resume "$key" | grep -q 'qa iteration 2/5 · returned' ||
        { echo "bench.sh: baton does not read back the seed-style transition of $key" >&2; exit 1; }
done
"$python" "$seed_py" ledger-append "$seed_ledger" 'phase 1: BLOCKED — benchmark'
"$python" "$seed_py" ledger-append "$seed_ledger_durable" 'phase 1: BLOCKED — benchmark' --durable
for f in "$seed_ledger" "$seed_ledger_durable"; do
    [[ "$(tail -n 1 "$f")" == "phase 1: BLOCKED — benchmark @ $BATON_NOW" ]] ||
        { echo "bench.sh: the seed-style append did not end $f with the line" >&2; exit 1; }
done

# Session start: `baton resume` with no argument on a repository with a 10,000-file tree, 100
# loops (half interrupted by a rate limit, half gone silent), 10 runs and 3 ledgers; then the
# same tree with 1,000 and with 10,000 loop files. Loop files are written from a template (as
# the originating conductor writes them) so the setup takes seconds, not minutes.
start_repo="$work/start"
new_repo "$start_repo"
# No background gc: the copies below must not race it.
git -C "$start_repo" config gc.auto 0
for d in $(seq 0 99); do
    mkdir -p "$start_repo/src/d$d"
    for f in $(seq 0 99); do
        echo "// file $d/$f" >"$start_repo/src/d$d/f$f.rs"
    done
done
mkdir -p "$start_repo/.claude"
printf '# Project\n\n## GOALS\nShip.\n\n## SCOPE\nThe CLI.\n\n## CONSTRAINTS\nNo daemon.\n' >"$start_repo/.claude/PROJECT.md"
for p in auth billing search; do
    mkdir -p "$start_repo/plans/$p"
    printf '# Phase 1\n' >"$start_repo/plans/$p/phase-1.md"
    printf '# Phase 2\n' >"$start_repo/plans/$p/phase-2.md"
done
git -C "$start_repo" add . && git -C "$start_repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m tree
write_loops() { # DIR COUNT: COUNT loop files, every other one interrupted by a rate limit
    mkdir -p "$1/.agentic"
    awk -v dir="$1/.agentic" -v n="$2" 'BEGIN {
        for (i = 1; i <= n; i++) {
            status = (i % 2 ? "interrupted" : "active")
            reason = (i % 2 ? "\"rate_limit\"" : "null")
            f = sprintf("%s/loop-state-PROJ-%d.json", dir, i)
            printf "{\n  \"schema_version\": 1,\n  \"session_id\": \"old-%d\",\n  \"ticket_id\": \"PROJ-%d\",\n  \"loop_key\": \"PROJ-%d\",\n  \"branch\": \"proj-%d\",\n  \"base_branch\": \"main\",\n  \"status\": \"%s\",\n  \"interrupted_at\": \"2026-01-31T07:00:00Z\",\n  \"interrupt_reason\": %s,\n  \"last_phase\": \"qa\",\n  \"last_phase_action\": \"spawned\",\n  \"loop_state\": {\"phase\": \"qa\", \"iteration\": 2, \"max_iterations\": 5, \"findings_log\": [], \"qa_failures_log\": []},\n  \"last_updated\": \"2026-01-31T07:00:00Z\",\n  \"owner_epoch\": 1\n}\n", i, i, i, i, status, reason > f
            close(f)
        }
    }'
}
cp -a "$start_repo" "$work/start-1k"
cp -a "$start_repo" "$work/start-10k"
# A copy's files have new inodes: one status refreshes its index, as it would after a clone.
git -C "$work/start-1k" status >/dev/null
git -C "$work/start-10k" status >/dev/null
write_loops "$start_repo" 100
write_loops "$work/start-1k" 1000
write_loops "$work/start-10k" 10000
for i in $(seq 1 10); do
    BATON_SESSION="old-run-$i" BATON_NOW=2026-01-31T07:00:00Z "$baton" -C "$start_repo" run new --feature "feature $i" >/dev/null 2>&1
done
for p in auth billing search; do
    BATON_NOW=2026-01-31T07:00:00Z "$baton" -C "$start_repo" ledger init "plans/$p" >/dev/null
    BATON_NOW=2026-01-31T07:00:00Z "$baton" -C "$start_repo" ledger start "plans/$p" --phase 1 >/dev/null
done
git -C "$start_repo" add plans && git -C "$start_repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m ledgers
[[ "$(git -C "$start_repo" ls-files | wc -l)" -ge 10000 ]] ||
    { echo "bench.sh: the session-start tree has fewer than 10,000 files" >&2; exit 1; }
# `baton resume` lists the 20 most urgent rows; `baton status` (the same survey) lists them all.
start_rows="$("$baton" -C "$start_repo" --json status | jq '[.work[] | .kind] | group_by(.) | map({(.[0]): length}) | add | tojson')"
[[ "$start_rows" == '"{\"ledger\":3,\"loop\":100,\"run\":10}"' ]] ||
    { echo "bench.sh: the session-start survey did not see 100 loops, 10 runs and 3 ledgers: $start_rows" >&2; exit 1; }
[[ "$("$baton" -C "$work/start-10k" --json status | jq '.work | length')" -eq 10000 ]] ||
    { echo "bench.sh: the session-start survey did not see 10,000 loops" >&2; exit 1; }

# Hooks: `baton hook claude …` with the client's payload on stdin, in a repository holding 100
# loop files and 10 runs of other sessions, plus one loop and one run lease of the hook's own
# session, last written two minutes before the clock (so a refresh rewrites them).
hooks_repo="$work/hooks"
new_repo "$hooks_repo"
mkdir -p "$hooks_repo/.agentic"
write_loops "$hooks_repo" 100
for i in $(seq 1 10); do
    BATON_SESSION="old-run-$i" BATON_NOW=2026-01-31T07:00:00Z "$baton" -C "$hooks_repo" run new --feature "feature $i" >/dev/null 2>&1
done
hook_session=hook-session
BATON_SESSION=$hook_session BATON_NOW=2026-01-31T09:28:00Z "$baton" -C "$hooks_repo" loop init MINE >/dev/null
hook_run="$(BATON_SESSION=$hook_session BATON_NOW=2026-01-31T09:28:00Z "$baton" -C "$hooks_repo" run new --feature mine | head -n 1)"
[[ "$(find "$hooks_repo/.agentic" -maxdepth 1 -name 'loop-state-*.json' | wc -l)" -eq 101 &&
    "$(find "$hooks_repo/.agentic/runs" -name '*.json' | wc -l)" -eq 11 ]] ||
    { echo "bench.sh: the hooks repository is not 101 loops and 11 runs" >&2; exit 1; }
# A phase claimed complete by another session while its gate has no result on the tree: that
# session's Stop is judged (one git status) and refused (docs/judge.md).
judge_session=judge-session
mkdir -p "$hooks_repo/plans/judged"
printf '# Judged\n## Phase 1\n' >"$hooks_repo/plans/judged/plan.md"
printf '```gates\nunit: test -f ok.txt → exit 0\n```\n' >"$hooks_repo/plans/judged/phase-1.md"
git -C "$hooks_repo" add plans
git -C "$hooks_repo" -c user.name=bench -c user.email=bench@example.invalid commit --quiet -m plan
judge_step() { BATON_SESSION=$judge_session BATON_NOW=2026-01-31T09:28:00Z "$baton" -C "$hooks_repo" "$@" >/dev/null; }
judge_step ledger init plans/judged
judge_step ledger start plans/judged --phase 1
echo work >"$hooks_repo/plans/judged/work.txt"
git -C "$hooks_repo" add plans/judged/work.txt
git -C "$hooks_repo" -c user.name=bench -c user.email=bench@example.invalid commit --quiet -m work
judge_step ledger complete plans/judged --phase 1 --tests 1/1
mkdir -p "$work/hook-saved"
cp "$hooks_repo/.agentic/loop-state-MINE.json" "$hooks_repo/.agentic/runs/$hook_run.json" "$work/hook-saved/"
judge_record="$(ls "$hooks_repo"/.agentic/sessions/judge-*.json)"
cp "$judge_record" "$work/hook-saved/judge.json"
# Puts the session's own loop and lease back as they were, and forgets the session's last
# refresh: each timed run then does the whole of its work.
cat >"$work/hook-reset" <<RESET
#!/bin/sh
cp "$work/hook-saved/loop-state-MINE.json" "$hooks_repo/.agentic/"
cp "$work/hook-saved/$hook_run.json" "$hooks_repo/.agentic/runs/"
rm -f "$hooks_repo/.agentic/sessions/claude-$hook_session.json"
cp "$work/hook-saved/judge.json" "$judge_record"
RESET
chmod +x "$work/hook-reset"
payload() { # EVENT [KEY VALUE]: a Claude Code payload of the hook's session
    jq -cn --arg s "$hook_session" --arg cwd "$2" --arg e "$1" \
        '{session_id: $s, transcript_path: "/nonexistent.jsonl", cwd: $cwd, hook_event_name: $e}
         + (if $e == "StopFailure" then {error: "rate_limit"} else {} end)
         + (if $e == "SessionStart" then {source: "startup"} else {} end)'
}
payload Stop "$hooks_repo" >"$work/stop.json"
jq -c --arg s "$judge_session" '.session_id = $s' "$work/stop.json" >"$work/stop-judged.json"
payload StopFailure "$hooks_repo" >"$work/stopfailure.json"
# Claude Code's subscription-limit text, as 2.1.332 sends it: the reset is read as a clock time
# in a named zone (fixtures/clients/claude-code-2.1.332/StopFailure.subscription-limit.json).
jq -c '. + {last_assistant_message: "You\u0027ve hit your 5-hour limit \u00b7 resets 8:05am (Europe/Lisbon)"}' \
    "$work/stopfailure.json" >"$work/stopfailure-limit.json"
payload SessionStart "$start_repo" >"$work/sessionstart.json"
# The hooks do what they are timed for.
"$work/hook-reset"
"$baton" hook claude Stop <"$work/stop.json"
[[ "$(jq -r .last_updated "$hooks_repo/.agentic/loop-state-MINE.json")" == 2026-01-31T09:30:00Z ]] ||
    { echo "bench.sh: the Stop hook did not refresh the session's loop" >&2; exit 1; }
"$work/hook-reset"
"$baton" hook claude StopFailure <"$work/stopfailure.json"
[[ "$(jq -r .interrupt_reason "$hooks_repo/.agentic/loop-state-MINE.json")" == rate_limit &&
    "$(jq -r .interrupt_reason "$hooks_repo/.agentic/runs/$hook_run.json")" == rate_limit ]] ||
    { echo "bench.sh: the StopFailure hook did not interrupt the session's loop and run" >&2; exit 1; }
"$work/hook-reset"
"$baton" hook claude StopFailure <"$work/stopfailure-limit.json"
[[ "$(jq -r .resume_after "$hooks_repo/.agentic/loop-state-MINE.json")" == 2026-01-31T08:05:00Z ||
    "$(jq -r .resume_after "$hooks_repo/.agentic/loop-state-MINE.json")" == 2026-02-01T08:05:00Z ]] ||
    { echo "bench.sh: the StopFailure hook did not keep the reset its limit text names" >&2; exit 1; }
"$work/hook-reset"
"$baton" hook claude Stop <"$work/stop-judged.json" | jq -e '.decision == "block"' >/dev/null ||
    { echo "bench.sh: the Stop hook did not refuse the stop on the unverified claim" >&2; exit 1; }
"$baton" hook claude SessionStart <"$work/sessionstart.json" | jq -e '.hookSpecificOutput.additionalContext | length > 0' >/dev/null ||
    { echo "bench.sh: the SessionStart hook printed no packet" >&2; exit 1; }
"$work/hook-reset"

# Each command must succeed before it is timed: a refusal is fast and would flatter the figures.
"$baton" -C "$one" loop heartbeat PROJ-1 | grep -q '^heartbeat:' ||
    { echo "bench.sh: the heartbeat did not refresh" >&2; exit 1; }
"$baton" -C "$one" loop set PROJ-1 --phase qa --action returned --iteration 2 >/dev/null
"$baton" -C "$many" loop heartbeat PROJ-1 | grep -q '^heartbeat:' ||
    { echo "bench.sh: the heartbeat (100 other loops) did not refresh" >&2; exit 1; }
"$baton" -C "$runs_repo" run resume "$run_id" | grep -q '^verdict: ratify' ||
    { echo "bench.sh: run resume did not ratify" >&2; exit 1; }

{
    echo "nproc: $(nproc)"
    echo "uname -a: $(uname -a)"
    echo "free -h:"
    free -h
    echo "df -T $work:"
    df -T "$work"
    echo "hyperfine: $(hyperfine --version); rustc: $(rustc --version); $("$python" --version) ($python)"
} >"$out/machine.txt"
cat "$out/machine.txt"

# The share of CPU time not idle over one second, from /proc/stat: unlike the load average it
# does not count this script's own build and setup of a moment ago.
cpu_busy_pct() {
    local a b
    read -ra a < <(grep '^cpu ' /proc/stat)
    sleep 1
    read -ra b < <(grep '^cpu ' /proc/stat)
    awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
        # Fields: cpu user nice system idle iowait irq softirq steal (guest time is inside
        # user). Waiting on the disk counts as busy: it is what slows an fsync down.
        split(a, x, " "); split(b, y, " ")
        for (i = 2; i <= 9; i++) total += y[i] - x[i]
        idle = y[5] - x[5]
        printf "%.0f", (total > 0 ? 100 * (total - idle) / total : 0)
    }'
}
busy_before="$(cpu_busy_pct)"
echo "== CPU busy before: ${busy_before}%"
if [[ "$busy_before" -gt 10 ]]; then
    echo "warning: the machine is busy (${busy_before}% CPU); the timings, fsync above all, will be inflated" >&2
fi

# `true` shows what starting any process costs on this machine, below baton's own start.
true_bin=/bin/true
[[ -x "$true_bin" ]] || true_bin=/usr/bin/true

echo "== hyperfine -N --warmup $warmup --runs $runs"
# -N: no intermediate shell, so shell start-up is not part of any figure.
hyperfine -N --warmup "$warmup" --runs "$runs" --style basic \
    --export-json "$out/hyperfine.json" \
    --export-markdown "$out/hyperfine.md" \
    -n 'true' "$true_bin" \
    -n 'baton --version' "$baton --version" \
    -n 'loop heartbeat' "$baton -C $one loop heartbeat PROJ-1" \
    -n 'loop set' "$baton -C $one loop set PROJ-1 --phase qa --action returned --iteration 2" \
    -n 'loop heartbeat, 100 other loops' "$baton -C $many loop heartbeat PROJ-1" \
    -n 'git status (run resume floor)' "git -C $runs_repo status --porcelain=v2 --branch -z --untracked-files=no" \
    -n 'run resume' "$baton -C $runs_repo run resume $run_id" \
    -n 'ledger append' "$baton -C $ledger_repo ledger block plans/small --phase 1 --reason benchmark" \
    -n 'python3 -c pass' "$python -c pass" \
    -n 'seed: loop set' "$python $seed_py loop-set $seed_loop qa returned 2" \
    -n 'seed: loop set, durable' "$python $seed_py loop-set $seed_loop_durable qa returned 2 --durable" \
    -n 'seed: ledger append' "$python $seed_py ledger-append $seed_ledger $seed_line" \
    -n 'seed: ledger append, durable' "$python $seed_py ledger-append $seed_ledger_durable $seed_line --durable" \
    -n 'ledger derive, 100k events' "$baton -C $ledger_repo ledger derive plans/big --no-gates" \
    -n 'git status --porcelain, 10k files' "git -C $start_repo status --porcelain" \
    -n 'resume, 100 loops 10 runs 3 ledgers' "$baton -C $start_repo resume" \
    -n 'resume, 1,000 loops' "$baton -C $work/start-1k resume" \
    -n 'resume, 10,000 loops' "$baton -C $work/start-10k resume"

# A hook reads its payload on stdin: each command runs under `sh -c 'exec … < payload'`, and
# so do the floors beside it, so the shell's start is in every figure alike.
in_sh() { echo "sh -c 'exec $1 < $2'"; }
echo "== hyperfine (hooks) --warmup $warmup --runs $runs"
hyperfine --shell=none --warmup "$warmup" --runs "$runs" --style basic \
    --export-json "$out/hyperfine-hooks.json" \
    -n 'sh: true' "$(in_sh "$true_bin" "$work/stop.json")" \
    -n 'sh: baton --version' "$(in_sh "$baton --version" "$work/stop.json")" \
    -n 'hook Stop, refreshed under a minute ago' "$(in_sh "$baton hook claude Stop" "$work/stop.json")" \
    -n 'sh: git status --porcelain, 10k files' "$(in_sh "git -C $start_repo status --porcelain" "$work/stop.json")" \
    -n 'hook SessionStart, 100 loops 10 runs 3 ledgers' "$(in_sh "$baton hook claude SessionStart" "$work/sessionstart.json")"
# Each run from the same start: the session's loop and lease two minutes old, no refresh
# recorded. The reset runs before every timed run and is not timed.
hyperfine --shell=none --warmup "$warmup" --runs "$runs" --style basic \
    --export-json "$out/hyperfine-hooks-reset.json" \
    --prepare "$work/hook-reset" \
    -n 'hook Stop, refreshing 1 loop and 1 lease' "$(in_sh "$baton hook claude Stop" "$work/stop.json")" \
    -n 'hook Stop, judging 1 claimed phase' "$(in_sh "$baton hook claude Stop" "$work/stop-judged.json")" \
    -n 'hook StopFailure, interrupting 1 loop and 1 lease' "$(in_sh "$baton hook claude StopFailure" "$work/stopfailure.json")" \
    -n 'hook StopFailure, limit text with its reset' "$(in_sh "$baton hook claude StopFailure" "$work/stopfailure-limit.json")"

echo "== cargo bench -p baton-cli-store --bench replace ${criterion_args[*]}"
# The criterion temp files go to the same filesystem as the repositories above.
bench_profile=()
[[ $profile == dev ]] && bench_profile=(--profile dev)
BATON_BENCH_DIR="$work" cargo bench --quiet "${bench_profile[@]}" -p baton-cli-store --bench replace -- \
    "${criterion_args[@]}"

busy_after="$(cpu_busy_pct)"

criterion_median_ms() {
    jq '.median.point_estimate / 1e6' "$target_dir/criterion/$1/new/estimates.json"
}
hyperfine_median_ms() {
    jq --arg name "$1" '.results[] | select(.command == $name) | .median * 1e3' "$out/hyperfine.json"
}

true_ms="$(hyperfine_median_ms 'true')"
start_ms="$(hyperfine_median_ms 'baton --version')"
heartbeat_ms="$(hyperfine_median_ms 'loop heartbeat')"
set_ms="$(hyperfine_median_ms 'loop set')"
heartbeat100_ms="$(hyperfine_median_ms 'loop heartbeat, 100 other loops')"
git_ms="$(hyperfine_median_ms 'git status (run resume floor)')"
resume_ms="$(hyperfine_median_ms 'run resume')"
append_ms="$(hyperfine_median_ms 'ledger append')"
derive_ms="$(hyperfine_median_ms 'ledger derive, 100k events')"
py_start_ms="$(hyperfine_median_ms 'python3 -c pass')"
seed_set_ms="$(hyperfine_median_ms 'seed: loop set')"
seed_set_durable_ms="$(hyperfine_median_ms 'seed: loop set, durable')"
seed_append_ms="$(hyperfine_median_ms 'seed: ledger append')"
seed_append_durable_ms="$(hyperfine_median_ms 'seed: ledger append, durable')"
status_ms="$(hyperfine_median_ms 'git status --porcelain, 10k files')"
start100_ms="$(hyperfine_median_ms 'resume, 100 loops 10 runs 3 ledgers')"
start1k_ms="$(hyperfine_median_ms 'resume, 1,000 loops')"
start10k_ms="$(hyperfine_median_ms 'resume, 10,000 loops')"
hooks_ms() { # FILE NAME STAT: a hook figure in ms (median, or max)
    jq --arg name "$2" --arg stat "$3" '.results[] | select(.command == $name) | .[$stat] * 1e3' "$out/$1"
}
sh_true_ms="$(hooks_ms hyperfine-hooks.json 'sh: true' median)"
sh_start_ms="$(hooks_ms hyperfine-hooks.json 'sh: baton --version' median)"
stop_fresh_ms="$(hooks_ms hyperfine-hooks.json 'hook Stop, refreshed under a minute ago' median)"
sh_status_ms="$(hooks_ms hyperfine-hooks.json 'sh: git status --porcelain, 10k files' median)"
hook_start_ms="$(hooks_ms hyperfine-hooks.json 'hook SessionStart, 100 loops 10 runs 3 ledgers' median)"
stop_sweep_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook Stop, refreshing 1 loop and 1 lease' median)"
stop_judged_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook Stop, judging 1 claimed phase' median)"
failure_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook StopFailure, interrupting 1 loop and 1 lease' median)"
failure_max_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook StopFailure, interrupting 1 loop and 1 lease' max)"
limit_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook StopFailure, limit text with its reset' median)"
limit_max_ms="$(hooks_ms hyperfine-hooks-reset.json 'hook StopFailure, limit text with its reset' max)"
replace_ms="$(criterion_median_ms atomic_replace/1KiB)"
replace_nofsync_ms="$(criterion_median_ms atomic_replace/1KiB-no-fsync)"
read_parse_ms="$(criterion_median_ms read_parse/loop-state)"
heartbeat_path_ms="$(criterion_median_ms heartbeat_path/in-process)"

mkdir -p "$out/criterion"
for bench in atomic_replace/1KiB atomic_replace/1KiB-no-fsync read_parse/loop-state \
    heartbeat_path/in-process; do
    mkdir -p "$out/criterion/$bench"
    cp "$target_dir/criterion/$bench/new/estimates.json" "$out/criterion/$bench/"
done

# The floor of a loop write is one process start plus one fsync'd replace: nothing baton does
# can go below it without giving up durability.
summary="$out/summary.md"
awk -v exec_floor="$true_ms" -v start="$start_ms" -v replace="$replace_ms" \
    -v nofsync="$replace_nofsync_ms" -v readparse="$read_parse_ms" -v hbpath="$heartbeat_path_ms" \
    -v hb="$heartbeat_ms" -v set="$set_ms" -v hb100="$heartbeat100_ms" -v quick="$quick" -v runs="$runs" \
    -v before="$busy_before" -v after="$busy_after" -v git="$git_ms" -v resume="$resume_ms" \
    -v append="$append_ms" -v derive="$derive_ms" -v st="$status_ms" -v s100="$start100_ms" \
    -v s1k="$start1k_ms" -v s10k="$start10k_ms" -v shtrue="$sh_true_ms" -v shstart="$sh_start_ms" \
    -v stopfresh="$stop_fresh_ms" -v shst="$sh_status_ms" -v hookstart="$hook_start_ms" \
    -v stopsweep="$stop_sweep_ms" -v stopjudged="$stop_judged_ms" -v fail="$failure_ms" -v failmax="$failure_max_ms" \
    -v limit="$limit_ms" -v limitmax="$limit_max_ms" \
    -v pystart="$py_start_ms" -v sset="$seed_set_ms" -v ssetd="$seed_set_durable_ms" \
    -v sapp="$seed_append_ms" -v sappd="$seed_append_durable_ms" '
function row(name, median, target,   floor) {
    floor = start + replace
    printf "| %s | %.3f | %d | %s | %.3f | %.2fx | %.2fx | %+.3f |\n", name, median, target,
        (median <= target ? "yes" : "**no**"), floor, median / start, median / floor,
        median - floor
}
BEGIN {
    printf "Mode: %s (hyperfine runs per command: %d). CPU busy before: %s%%; after: %s%%.\n\n",
        (quick ? "quick" : "full"), runs, before, after
    print "Floors, measured in this run (medians, ms):"
    print ""
    print "| floor | median ms |"
    print "|---|---:|"
    printf "| starting any process: `true` (hyperfine), for reference | %.3f |\n", exec_floor
    printf "| process start: `baton --version` (hyperfine) | %.3f |\n", start
    printf "| one fsync'"'"'d replace of 1 KiB: `atomic::replace` (criterion) | %.3f |\n", replace
    printf "| the same replace without its two fsyncs (criterion) | %.3f |\n", nofsync
    printf "| read_capped + parse_state::<LoopState>, 1.2 KiB (criterion) | %.3f |\n", readparse
    printf "| a heartbeat in process: discover, lock, read, parse, replace (criterion) | %.3f |\n", hbpath
    print ""
    print "Commands (medians, ms; floor = process start + one fsync'"'"'d replace):"
    print ""
    print "| command | median ms | target ms | met | floor ms | / start | / floor | above floor ms |"
    print "|---|---:|---:|:-:|---:|---:|---:|---:|"
    row("`baton loop heartbeat PROJ-1`", hb, 2)
    row("`baton loop set PROJ-1 --phase qa --action returned --iteration 2`", set, 3)
    row("`baton loop heartbeat PROJ-1`, 100 other loop files", hb100, 2)
    print ""
    print "Single-run resume (medians, ms; floor = process start + its git call + one fsync'"'"'d replace):"
    print ""
    print "| command | median ms | floor ms | / git call | / floor |"
    print "|---|---:|---:|---:|---:|"
    printf "| `git status --porcelain=v2 --branch -z --untracked-files=no` (its one git call) | %.3f | | | |\n", git
    printf "| `baton run resume <id>` (ratify, lease refreshed) | %.3f | %.3f | %.2fx | %.2fx |\n", resume,
        start + git + replace, resume / git, resume / (start + git + replace)
    print ""
    print "Plan ledger (medians, ms):"
    print ""
    print "| command | median ms | target ms | met | floor ms | / floor |"
    print "|---|---:|---:|:-:|---:|---:|"
    printf "| `baton ledger block <plan> …` (one locked, sealed, synced append) | %.3f | | | %.3f | %.2fx |\n", append, start + replace, append / (start + replace)
    printf "| `baton ledger derive <plan> --no-gates`, 100,000 events | %.3f | 100 | %s | | |\n", derive, (derive <= 100 ? "yes" : "**no**")
    print ""
    print "The same jobs the seed way: scripts/seed_baseline.py under python3, in the same hyperfine run (medians, ms; seed way = flock on the file, rewrite in place or plain append, no fsync; durable = baton'"'"'s sidecar lock and fsyncs):"
    print ""
    print "| job | baton ms | python3, seed way ms | seed way / baton | python3, durable ms | durable / baton |"
    print "|---|---:|---:|---:|---:|---:|"
    printf "| process start: `baton --version`; `python3 -c pass` | %.3f | %.3f | %.2fx | | |\n", start, pystart, pystart / start
    printf "| loop transition: `baton loop set …`; `seed_baseline.py loop-set …` | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", set, sset, sset / set, ssetd, ssetd / set
    printf "| ledger append: `baton ledger block …`; `seed_baseline.py ledger-append …` | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", append, sapp, sapp / append, sappd, sappd / append
    print ""
    print "Session start on a 10,000-file tree (medians, ms; floor = `git status --porcelain` on the same tree):"
    print ""
    print "| command | median ms | / git status | target | met |"
    print "|---|---:|---:|---:|:-:|"
    printf "| `git status --porcelain` (the floor) | %.3f | 1.00x | | |\n", st
    printf "| `baton resume`, 100 loops, 10 runs, 3 ledgers | %.3f | %.2fx | 1.5x | %s |\n", s100, s100 / st, (s100 / st <= 1.5 ? "yes" : "**no**")
    printf "| `baton resume`, 1,000 loops | %.3f | %.2fx | | |\n", s1k, s1k / st
    printf "| `baton resume`, 10,000 loops | %.3f | %.2fx | | |\n", s10k, s10k / st
    print ""
    print "Hooks, 100 loop files and 11 runs present (ms; every command and floor run as `sh -c '"'"'exec … < payload'"'"'`; above = median minus `sh: baton --version`):"
    print ""
    print "| command | median ms | above process start ms | target | met |"
    print "|---|---:|---:|---:|:-:|"
    printf "| floor: `sh: true` | %.3f | | | |\n", shtrue
    printf "| floor: `sh: baton --version` | %.3f | 0 | | |\n", shstart
    printf "| `hook claude Stop`, refreshed under a minute ago | %.3f | %+.3f | 2 ms median | %s |\n", stopfresh, stopfresh - shstart, (stopfresh <= 2 ? "yes" : "**no**")
    printf "| `hook claude Stop`, refreshing 1 loop and 1 lease | %.3f | %+.3f | | |\n", stopsweep, stopsweep - shstart
    printf "| `hook claude Stop`, judging 1 claimed phase (one git status; refused) | %.3f | %+.3f | | |\n", stopjudged, stopjudged - shstart
    printf "| `hook claude StopFailure`, interrupting 1 loop and 1 lease | %.3f (max %.3f) | %+.3f | 10 ms max | %s |\n", fail, failmax, fail - shstart, (failmax <= 10 ? "yes" : "**no**")
    printf "| `hook claude StopFailure`, the same with a limit text whose reset it reads | %.3f (max %.3f) | %+.3f | 10 ms max | %s |\n", limit, limitmax, limit - shstart, (limitmax <= 10 ? "yes" : "**no**")
    printf "| floor: `sh: git status --porcelain`, 10k files | %.3f | | | |\n", shst
    printf "| `hook claude SessionStart`, 100 loops 10 runs 3 ledgers, 10k files | %.3f | | %.2fx git status | |\n", hookstart, hookstart / shst
}' | tee "$summary"

echo
echo "results: $out (machine.txt, hyperfine.json, hyperfine.md, hyperfine-hooks*.json, criterion/*/estimates.json, summary.md)"
