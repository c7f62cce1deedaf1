#!/bin/sh
# Installs baton @VERSION@, the `baton` binary of the baton-cli package, for @TARGETS@.
#
#   sh baton-cli-installer.sh [--to DIR]
#
# It fetches baton-cli-<target>.tar.gz from $BATON_INSTALLER_BASE_URL (an https:// address,
# or with curl a file:///directory), or takes the archive from
# $BATON_INSTALLER_ARCHIVE, checks its SHA-256 against the one written here when the release
# was built, and puts `baton` in DIR: --to, else $BATON_INSTALL_DIR, else
# ${XDG_BIN_HOME:-$HOME/.local/bin}. It changes no shell profile; it says when DIR is not on
# the PATH.
set -eu

version='@VERSION@'
base_url="${BATON_INSTALLER_BASE_URL:-@BASE_URL@}"

say() { printf 'baton-cli-installer: %s\n' "$*" >&2; }
die() {
    say "$*"
    exit 1
}

dir="${BATON_INSTALL_DIR:-${XDG_BIN_HOME:-${HOME:?HOME is not set: name a directory with --to}/.local/bin}}"
while [ $# -gt 0 ]; do
    case "$1" in
        --to)
            [ $# -ge 2 ] || die "--to needs a directory"
            dir="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,12p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown argument \`$1\` (try --help)" ;;
    esac
    shift
done

case "$(uname -s) $(uname -m)" in
    "Linux x86_64" | "Linux amd64") target=x86_64-unknown-linux-gnu ;;
    *) die "no build of baton $version for $(uname -s) $(uname -m): this release has @TARGETS@ only (docs/install.md: build from source with cargo install baton-cli)" ;;
esac

case "$target" in
    @TARGET@) sha256=@SHA256@ ;;
esac

archive="baton-cli-$target.tar.gz"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ -n "${BATON_INSTALLER_ARCHIVE:-}" ]; then
    cp "$BATON_INSTALLER_ARCHIVE" "$tmp/$archive" || die "cannot read $BATON_INSTALLER_ARCHIVE"
else
    [ -n "$base_url" ] || die "no download address: set BATON_INSTALLER_BASE_URL (the directory holding $archive) or BATON_INSTALLER_ARCHIVE (the archive itself)"
    url="${base_url%/}/$archive"
    say "downloading $url"
    if command -v curl >/dev/null 2>&1; then
        curl --proto '=https,file' --tlsv1.2 -fsSL "$url" -o "$tmp/$archive" || die "cannot download $url"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$tmp/$archive" "$url" || die "cannot download $url"
    else
        die "neither curl nor wget is installed"
    fi
fi

if command -v sha256sum >/dev/null 2>&1; then
    got="$(sha256sum "$tmp/$archive" | cut -d ' ' -f 1)"
elif command -v shasum >/dev/null 2>&1; then
    got="$(shasum -a 256 "$tmp/$archive" | cut -d ' ' -f 1)"
else
    die "neither sha256sum nor shasum is installed: cannot check the archive"
fi
[ "$got" = "$sha256" ] || die "$archive has SHA-256 $got, not the $sha256 this release was built with: not installed"

tar -xzf "$tmp/$archive" -C "$tmp" || die "cannot unpack $archive"
mkdir -p "$dir" || die "cannot create $dir"
# A copy beside the old binary, then a rename over it: a baton that is running (a hook, a
# supervisor) keeps its own file.
cp "$tmp/baton-cli-$target/baton" "$dir/.baton.new.$$" || die "cannot write to $dir"
chmod 755 "$dir/.baton.new.$$"
mv -f "$dir/.baton.new.$$" "$dir/baton" || die "cannot write $dir/baton"
say "installed $("$dir/baton" --version) as $dir/baton"

case ":${PATH:-}:" in
    *":$dir:"*) ;;
    *) say "$dir is not on your PATH: add it (export PATH=\"$dir:\$PATH\") to run baton by name" ;;
esac
