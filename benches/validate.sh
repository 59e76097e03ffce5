#!/bin/sh
# Benchmark `okstra validate` on a ~10 MB, 20 000-row report and compare the
# schema part with Python's check-jsonschema. Not a test: prints figures.
#
#   benches/validate.sh [RUNS]        (default 15 runs per command)
#
# Needs python3 (with venv) and network access for `pip install
# check-jsonschema` on first use. Work files go to ${BENCH_DIR:-/tmp/okstra-bench}.
set -eu
RUNS=${1:-15}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${BENCH_DIR:-/tmp/okstra-bench}
VENV=${BENCH_VENV:-/tmp/okstra-bench-venv}
RUN_DIR=$WORK/run

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
OKSTRA=$ROOT/target/release/okstra
rm -rf "$RUN_DIR"
python3 "$ROOT/benches/gen_report.py" "$RUN_DIR" --rows 20000
DATA=$RUN_DIR/report/data.json
SCHEMA=$ROOT/schemas/final-report-v2.0.schema.json
if [ ! -x "$VENV/bin/check-jsonschema" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet check-jsonschema
fi
echo "data.json: $(wc -c <"$DATA") bytes, rows: 20000"
"$OKSTRA" validate "$RUN_DIR" >/dev/null # must be valid: fails the script otherwise
"$VENV/bin/check-jsonschema" --schemafile "$SCHEMA" "$DATA" >/dev/null

python3 - "$RUNS" "$OKSTRA" "$RUN_DIR" "$DATA" "$SCHEMA" "$VENV/bin/check-jsonschema" <<'PY'
import os, resource, statistics, subprocess, sys, time
runs, okstra, run_dir, data, schema, cj = sys.argv[1:]
runs = int(runs)
def cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
def median_ms(argv, n):
    times, cpus = [], []
    for _ in range(n):
        cpu0, start = cpu(), time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
        cpus.append((cpu() - cpu0) * 1000)
    return statistics.median(times), min(times), max(times), statistics.median(cpus)
print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
cases = [
    ("okstra validate (full: schema + invariants + worker results)", [okstra, "validate", run_dir], runs),
    ("okstra validate --schema-only", [okstra, "validate", "--schema-only", data], runs),
    ("check-jsonschema --schemafile (schema only)", [cj, "--schemafile", schema, data], max(3, runs // 3)),
]
results = {}
for name, argv, n in cases:
    med, lo, hi, cpu_med = median_ms(argv, n)
    results[name] = med
    print(f"{name:<64} median {med:9.1f} ms wall, {cpu_med:8.1f} ms cpu  (min {lo:.1f}, max {hi:.1f}, n={n})")
full, schema_only, python = (results[c[0]] for c in cases)
print(f"speed-up, schema only: {python / schema_only:.1f}x; full okstra validate vs check-jsonschema schema-only: {python / full:.1f}x")
print(f"target < 200 ms for the full validate: {'met' if full < 200 else 'NOT met'}")
print(f"load average after: {os.getloadavg()[0]:.2f}")
PY
