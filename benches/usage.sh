#!/bin/sh
# Benchmark `okstra usage` on a run of 10 dispatch attempts (six workers, four
# retries, ~1 MB of stream log each) plus a Claude Code lead transcript of
# MB megabytes (default 200), against the same run with a transcript a tenth
# that size: wall time (median of 5) and peak RSS. Not a test: it prints
# figures, it asserts nothing. Target: under 1 s, memory flat in the size.
#
# usage: benches/usage.sh [MB]
#   OKSTRA=<binary>           measure this okstra instead of building one
#   OKSTRA_BASELINE=<binary>  measure it too, in the same go, for a ratio
# needs: cargo, python3, /usr/bin/time (GNU, for peak RSS)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
size=${1:-200}

if [ -z "${OKSTRA:-}" ]; then
    cargo build --release --quiet --manifest-path "$here/Cargo.toml"
fi
bin="${OKSTRA:-$here/target/release/okstra}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

measure() { # <label> <megabytes>
    label=$1
    mb=$2
    dir="$work/$label"
    mkdir -p "$dir/proj" "$dir/home"
    printf '# Why do payments retry forever?\n' >"$dir/brief.md"
    run=$("$bin" --render-only --yes --task-type project-analysis \
        --project-id p --task-group g --task-id t --task-brief "$dir/brief.md" \
        --project-root "$dir/proj" --workers claude,codex,antigravity,grok,kimi,report-writer \
        --lead-runtime external 2>/dev/null)
    run=$(dirname "$run")
    python3 "$here/benches/usage_fixture.py" "$run" "$dir/home" "$mb"
    # Warm the page cache once.
    HOME="$dir/home" CLAUDE_CONFIG_DIR="$dir/home/claude" "$bin" usage "$run" --json >/dev/null 2>&1
    times=""
    rss=0
    i=0
    while [ $i -lt 5 ]; do
        HOME="$dir/home" CLAUDE_CONFIG_DIR="$dir/home/claude" /usr/bin/time -f '%e %M' \
            -o "$dir/time" "$bin" usage "$run" --json >/dev/null 2>"$dir/err"
        read -r elapsed peak <"$dir/time"
        times="$times $elapsed"
        [ "$peak" -gt "$rss" ] && rss=$peak
        i=$((i + 1))
    done
    # shellcheck disable=SC2086 # one number per word, split on purpose
    median=$(printf '%s\n' $times | sort -n | sed -n 3p)
    echo "$label (${mb} MB transcript): median ${median} s over 5 runs, peak RSS $((rss / 1024)) MiB"
}

measure baseline $((size / 10))
measure full "$size"
if [ -n "${OKSTRA_BASELINE:-}" ]; then
    bin=$OKSTRA_BASELINE
    measure baseline-binary-tenth $((size / 10))
    measure baseline-binary-full "$size"
fi
