#!/usr/bin/env bash
# Builds baton's release artifacts into target/distrib/ (docs/install.md; target/dist/ is
# cargo's, for the dist profile's build):
#
#   baton-cli-<target>.tar.gz   the stripped `baton` binary (profile dist), with README.md
#   baton-cli-installer.sh      a shell installer: fetches that archive, checks its SHA-256,
#                               puts `baton` in ~/.local/bin or --to DIR
#   baton-cli-<version>.tgz     the npm package baton-cli: the binary itself as its `bin`
#   SHA256SUMS                  sha256sum of each of the above
#
#   scripts/release.sh                 build them (a clean build of the dist profile: minutes)
#   scripts/release.sh --check         build them, then install each into a new temp prefix and
#                                      run the installed `baton --version` and `baton demo`
#   scripts/release.sh --out DIR       write to DIR instead of target/distrib
#   scripts/release.sh --base-url URL  the address the installer downloads from by default
#                                      (else it needs BATON_INSTALLER_BASE_URL when run)
#   scripts/release.sh --debug         no build: pack a stripped copy of the debug binary that
#                                      `cargo test` left, for CI's --check of the packaging and
#                                      the installers (seconds); never an artifact to publish
#
# Builds for the machine's own target only (rustc's host; Linux x86_64 is the one supported).
# Needs cargo, tar, gzip, sha256sum, and npm for the npm package (without npm it is skipped
# and --check fails); --check needs git, which `baton demo` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
debug=0
out=target/distrib
base_url=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --check) check=1 ;;
        --debug) debug=1 ;;
        --out)
            out="${2:?--out needs a directory}"
            shift
            ;;
        --base-url)
            base_url="${2:?--base-url needs an address}"
            shift
            ;;
        -h | --help)
            sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "release.sh: unknown argument \`$1\` (try --help)" >&2
            exit 2
            ;;
    esac
    shift
done

say() { printf '== %s\n' "$*"; }

target="$(rustc -vV | sed -n 's/^host: //p')"
case "$target" in
    x86_64-unknown-linux-gnu) npm_os=linux npm_cpu=x64 ;;
    *)
        echo "release.sh: $target is not a supported target (crates/baton-store/src/platform/)" >&2
        exit 1
        ;;
esac
# `path+file:///…/crates/baton#baton-cli@0.1.0`
version="$(cargo pkgid --offline -p baton-cli)"
version="${version##*@}"

if [[ $debug == 1 ]]; then
    bin="${CARGO_TARGET_DIR:-target}/debug/baton"
    [[ -x $bin ]] || {
        echo "release.sh: --debug packs $bin, and there is none: run cargo test first" >&2
        exit 1
    }
    say "--debug: a stripped copy of $bin, for checking the packaging only"
else
    say "cargo build --profile dist --locked -p baton-cli --bin baton ($target, $version)"
    start=$SECONDS
    cargo build --profile dist --locked -p baton-cli --bin baton
    echo "built in $((SECONDS - start)) s"
    bin="${CARGO_TARGET_DIR:-target}/dist/baton"
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/baton-cli-* "$out/SHA256SUMS"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
if [[ $debug == 1 ]]; then
    strip -o "$stage/baton" "$bin"
    bin="$stage/baton"
fi

# The archive: one directory named after it, as cargo-dist lays its archives out.
name="baton-cli-$target"
mkdir -p "$stage/$name"
cp "$bin" "$stage/$name/baton"
cp README.md "$stage/$name/"
tar -czf "$out/$name.tar.gz" -C "$stage" --owner=0 --group=0 --numeric-owner "$name"
sum="$(sha256sum "$out/$name.tar.gz" | cut -d ' ' -f 1)"

# The shell installer, with the archive's checksum written into it.
sed -e "s|@VERSION@|$version|g" -e "s|@TARGETS@|Linux x86_64 ($target)|g" \
    -e "s|@BASE_URL@|$base_url|g" \
    -e "s|@TARGET@|$target|g" -e "s|@SHA256@|$sum|g" \
    scripts/release/installer.sh >"$out/baton-cli-installer.sh"
chmod 755 "$out/baton-cli-installer.sh"

# The npm package: the binary is the package's `bin`, so npm links `baton` to it directly.
if command -v npm >/dev/null 2>&1; then
    pkg="$stage/npm"
    mkdir -p "$pkg/bin"
    cp "$bin" "$pkg/bin/baton"
    chmod 755 "$pkg/bin/baton"
    sed -e "s|@VERSION@|$version|g" -e "s|@TARGETS@|Linux x86_64|g" \
        scripts/release/npm-README.md >"$pkg/README.md"
    cat >"$pkg/package.json" <<JSON
{
  "name": "baton-cli",
  "version": "$version",
  "description": "Durable state for coding-agent runs: resume exactly where an interrupted run stopped.",
  "license": "MIT OR Apache-2.0",
  "bin": { "baton": "bin/baton" },
  "files": ["bin/baton", "README.md"],
  "os": ["$npm_os"],
  "cpu": ["$npm_cpu"],
  "keywords": ["coding-agent", "claude-code", "codex", "resume", "cli"]
}
JSON
    (cd "$pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
else
    echo "release.sh: npm is not installed: no npm package" >&2
fi

(cd "$out" && sha256sum -- "$name.tar.gz" baton-cli-installer.sh $(ls -- *.tgz 2>/dev/null) >SHA256SUMS)

say "artifacts in $out"
(cd "$out" && ls -l --time-style=+ -- * | awk '{printf "%12d  %s\n", $5, $NF}')
echo "binary: $(stat -c %s "$bin") bytes ($(du -h "$bin" | cut -f 1)); $(file -b "$bin" | cut -d , -f 1-2,5-)"
echo "needs glibc $(objdump -T "$bin" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t . -k 2,2n -k 3,3n -u | tail -1 | sed 's/GLIBC_//')"

[[ $check == 1 ]] || exit 0

# --check: each artifact installed into a new prefix, its `baton` run from there with a bare
# environment (no cargo, no target/ on the PATH).
say "check"
(cd "$out" && sha256sum --quiet -c SHA256SUMS) && echo "SHA256SUMS: every file matches"
work="$(mktemp -d)"
trap 'rm -rf "$stage" "$work"' EXIT
run() {
    # A clean environment: a new HOME, no BATON_* or agent variables, the system PATH.
    local exe="$1"
    shift
    env -i HOME="$work/home" PATH="/usr/local/bin:/usr/bin:/bin" LANG=C.UTF-8 "$exe" "$@"
}
check_exe() {
    local what="$1" exe="$2"
    local got
    got="$(run "$exe" --version)"
    case "$got" in
        "baton $version"*) echo "$what: $exe --version: $got" ;;
        *)
            echo "$what: $exe --version printed \`$got\`, not baton $version" >&2
            exit 1
            ;;
    esac
    (cd "$work" && run "$exe" demo >"$work/demo.out" 2>&1) || {
        cat "$work/demo.out" >&2
        echo "$what: baton demo failed" >&2
        exit 1
    }
    echo "$what: baton demo: exit 0, $(wc -l <"$work/demo.out") lines, last: $(tail -n 1 "$work/demo.out")"
}
mkdir -p "$work/home"

tgz="$out/baton-cli-$version.tgz"
[[ -f $tgz ]] || {
    echo "release.sh: no npm package to check (is npm installed?)" >&2
    exit 1
}
start=$SECONDS
npm install --prefix "$work/npm" --no-audit --no-fund --loglevel=error "$tgz"
echo "npm: installed in $((SECONDS - start)) s"
check_exe npm "$work/npm/node_modules/.bin/baton"
[[ -L $work/npm/node_modules/.bin/baton && $(readlink -f "$work/npm/node_modules/.bin/baton") == "$work/npm/node_modules/baton-cli/bin/baton" ]] ||
    { echo "npm: node_modules/.bin/baton is not a link to the package's binary" >&2; exit 1; }

# The installer from the local file, fetching the archive through a file:// address, into
# the default directory under the new HOME.
env -i HOME="$work/home" PATH="/usr/local/bin:/usr/bin:/bin" \
    BATON_INSTALLER_BASE_URL="file://$out" sh "$out/baton-cli-installer.sh"
check_exe installer "$work/home/.local/bin/baton"
# A damaged archive is refused, and nothing is installed.
cp "$out/$name.tar.gz" "$work/bad.tar.gz"
printf 'x' >>"$work/bad.tar.gz"
if env -i HOME="$work/home" PATH="/usr/local/bin:/usr/bin:/bin" \
    BATON_INSTALLER_ARCHIVE="$work/bad.tar.gz" sh "$out/baton-cli-installer.sh" --to "$work/bad-bin" 2>"$work/bad.err"; then
    echo "installer: a damaged archive was installed" >&2
    exit 1
fi
[[ ! -e $work/bad-bin/baton ]] || { echo "installer: a damaged archive left a binary" >&2; exit 1; }
echo "installer: a damaged archive is refused: $(cat "$work/bad.err")"
say "check: every artifact installs and runs"
