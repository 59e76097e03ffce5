#!/bin/sh
# Put one `okstra-<provider>-exec` per provider on PATH: each is a symlink to
# the `okstra` binary, which fixes the provider from the name it was run as.
#
# Usage: scripts/install-wrappers.sh [target-dir]   (default: ~/.local/bin)
# The okstra binary is `$OKSTRA` if set, else the one found on PATH.
set -eu

target="${1:-${HOME:?}/.local/bin}"
okstra="${OKSTRA:-$(command -v okstra || true)}"
if [ -z "$okstra" ] || [ ! -x "$okstra" ]; then
    echo "install-wrappers: error: no executable \`okstra\` found; put it on PATH or set OKSTRA" >&2
    exit 1
fi
case "$okstra" in
    /*) ;;
    *) okstra="$(cd "$(dirname "$okstra")" && pwd -P)/$(basename "$okstra")" ;;
esac

mkdir -p "$target"
for provider in claude codex antigravity grok kimi; do
    link="$target/okstra-$provider-exec"
    ln -sf "$okstra" "$link"
    echo "$link -> $okstra"
done
