#!/bin/sh
# Benchmark `okstra status --project-root` on a synthetic project of 1 000
# runs and 10 000 status sidecars (release build). Not a test: it prints
# figures, it asserts nothing. Target: median under 200 ms.
#
# usage: benches/status.sh [runs] [workers-per-run]
# needs: cargo, python3, hyperfine (falls back to a timed loop without it)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1000}
per_run=${2:-10}

cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="$here/target/release/okstra"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
python3 "$here/benches/status_fixture.py" "$work" "$runs" "$per_run"

# Warm the page cache once, then measure text and JSON output.
"$bin" status --project-root "$work" >/dev/null
if command -v hyperfine >/dev/null 2>&1; then
    hyperfine --warmup 3 --runs 21 --style basic --export-json "$work/times.json" \
        --command-name "status (text)" "$bin status --project-root $work" \
        --command-name "status --json" "$bin status --json --project-root $work"
    python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%s: median %.1f ms (min %.1f, user %.1f, sys %.1f)" % (r["command"], r["median"] * 1e3,
          r["min"] * 1e3, r["user"] * 1e3, r["system"] * 1e3))' "$work/times.json"
else
    for mode in "" "--json"; do
        times=""
        i=0
        while [ $i -lt 21 ]; do
            start=$(date +%s%N)
            "$bin" status $mode --project-root "$work" >/dev/null
            end=$(date +%s%N)
            times="$times $(( (end - start) / 1000000 ))"
            i=$((i + 1))
        done
        # shellcheck disable=SC2086 # one number per word, split on purpose
        median=$(printf '%s\n' $times | sort -n | sed -n 11p)
        echo "status $mode: median ${median} ms over 21 runs"
    done
fi
"$bin" status --project-root "$work" | tail -n 1
