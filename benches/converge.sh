#!/bin/sh
# Benchmark `okstra converge plan`, `record` and `classify` on a run with five
# analysers of 200 items each (round 1: 800 items per reviewer, 4 000 verdict
# rows). Not a test: prints figures. Target: each command ≤ 50 ms.
#
#   benches/converge.sh [RUNS]        (default 15 runs per command)
#
# OKSTRA=path/to/okstra skips the release build. Work files go to
# ${BENCH_DIR:-/tmp/okstra-bench-converge}.
set -eu
RUNS=${1:-15}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${BENCH_DIR:-/tmp/okstra-bench-converge}
if [ -z "${OKSTRA:-}" ]; then
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml"
    OKSTRA=$ROOT/target/release/okstra
fi
rm -rf "$WORK"
mkdir -p "$WORK/project"
printf '# Bench\n\nFind everything.\n' >"$WORK/brief.md"
"$OKSTRA" --render-only --yes --task-type project-analysis --project-id bench \
    --task-group converge --task-id five --task-brief "$WORK/brief.md" \
    --project-root "$WORK/project" --workers claude,codex,kimi,grok,antigravity,report-writer \
    --lead-runtime external --json >"$WORK/paths.json"

python3 - "$RUNS" "$OKSTRA" "$WORK" <<'PY'
import json, os, statistics, subprocess, sys, time
runs, okstra, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
run_dir = json.load(open(os.path.join(work, "paths.json")))["runDir"]
manifest = json.load(open(os.path.join(run_dir, "run-manifest.json")))
ITEMS = 200
for a in manifest["assignments"]:
    if a["role"] != "analyser":
        continue
    rows = "\n".join(
        f"| F-{n:03} | {a['workerId']} finding {n}: the total skips discounts | `src/m{n}.rs:{n}` |"
        for n in range(1, ITEMS + 1)
    )
    with open(a["resultPath"], "w") as f:
        f.write(f"# result\n\n## 1. Findings\n\n| ID | Finding | Evidence |\n|---|---|---|\n{rows}\n")

def timed(argv, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times), max(times)

print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
results = {}
plan_argv = [okstra, "converge", "plan", run_dir, "--round", "1", "--seed", "1"]
results["plan"] = timed(plan_argv, runs)
plan = json.load(open(os.path.join(run_dir, "state", "round-plan-r1.json")))
verdicts = ["AGREE", "DISAGREE", "SUPPLEMENT"]
for reviewer in plan["reviewers"]:
    lines = ["| Item | Verdict | Evidence | Addition |", "|---|---|---|---|"]
    for n, label in enumerate(reviewer["labels"]):
        verdict = verdicts[n % 3]
        addition = "also refunds" if verdict == "SUPPLEMENT" else ""
        lines.append(f"| {label['label']} | {verdict} | src/check.rs:{n + 1} shows it | {addition} |")
    with open(reviewer["resultPath"], "w") as f:
        f.write("# convergence round 1\n\n" + "\n".join(lines) + "\n")
results["record"] = timed([okstra, "converge", "record", run_dir, "--round", "1"], runs)
results["classify"] = timed([okstra, "converge", "classify", run_dir], runs)
labels = sum(len(r["labels"]) for r in plan["reviewers"])
print(f"{len(plan['items'])} items, {len(plan['reviewers'])} reviewers, {labels} labels")
for name, (med, lo, hi) in results.items():
    verdict = "met" if med <= 50 else "NOT met"
    print(f"okstra converge {name:<9} median {med:7.1f} ms wall (min {lo:.1f}, max {hi:.1f}, n={runs})  ≤ 50 ms: {verdict}")
print(f"load average after: {os.getloadavg()[0]:.2f}")
PY
