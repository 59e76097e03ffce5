#!/bin/sh
# Benchmark `okstra converge plan`, `record` and `classify` on a run with five
# analysers of 200 items each: 1 000 items × 5 reviewers (round 1: each
# item to the four other reviewers, 4 000 verdict rows). Every worker's item
# n sits at the same line, so items are shown in groups of four; reviewers
# answer with a command and its output (evidence that counts), one in three
# as DISAGREE or SUPPLEMENT, and call every other member of a group `same
# claim as` its first, so `record` and `classify` judge the findings those
# merge into. Not a test: prints figures. Target: each command ≤ 50 ms
# (median, release).
#
#   benches/converge.sh [RUNS]        (default 15 runs per command)
#
# OKSTRA=path/to/okstra skips the release build; OKSTRA_BASELINE=path/to/okstra
# measures a second binary on the same run in the same go (its own ledger
# and plan). Work files go to ${BENCH_DIR:-/tmp/okstra-bench-converge}.
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

python3 - "$RUNS" "$OKSTRA" "$WORK" "${OKSTRA_BASELINE:-}" <<'PY'
import json, os, re, shutil, statistics, subprocess, sys, time
runs, okstra, work, baseline = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
run_dir = json.load(open(os.path.join(work, "paths.json")))["runDir"]
manifest = json.load(open(os.path.join(run_dir, "run-manifest.json")))
ITEMS = 200
# The files the claims cite, so their anchors resolve and reviewers' merges
# and verdicts are judged (a claim whose anchor does not resolve is
# unverifiable, whatever its verdicts).
project = os.path.join(work, "project", "src")
os.makedirs(project, exist_ok=True)
for n in range(1, ITEMS + 1):
    with open(os.path.join(project, f"m{n}.rs"), "w") as f:
        f.write("".join(f"let total_{line} = sum(prices);\n" for line in range(1, n + 1)))
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

def answer(plan):
    """Every reviewer's verdict table for round 1 of `plan`."""
    verdicts = ["AGREE", "DISAGREE", "SUPPLEMENT"]
    for reviewer in plan["reviewers"]:
        lines = ["| Item | Verdict | Evidence | Addition |", "|---|---|---|---|"]
        for n, label in enumerate(reviewer["labels"]):
            name = label["label"]
            member = re.fullmatch(r"Item (\d+)([a-z]+)", name)
            if member and member.group(2) != "a":
                lines.append(f"| {name} | AGREE | same claim as Item {member.group(1)}a | |")
                continue
            verdict = verdicts[n % 3]
            addition = "also refunds" if verdict == "SUPPLEMENT" else ""
            evidence = f'`sed -n {n + 1}p src/check.rs` "total = sum(prices) at {n + 1}"'
            lines.append(f"| {name} | {verdict} | {evidence} | {addition} |")
        with open(reviewer["resultPath"], "w") as f:
            f.write("# convergence round 1\n\n" + "\n".join(lines) + "\n")

def measure(binary):
    """Plan, record and classify round 1 with `binary`, from a clean ledger."""
    state = os.path.join(run_dir, "state")
    for name in ("convergence-ledger.json", "round-plan-r1.json", "anchors.json", "snapshot.json"):
        path = os.path.join(state, name)
        if os.path.exists(path):
            os.remove(path)
    shutil.rmtree(os.path.join(run_dir, "snapshot"), ignore_errors=True)
    found = {}
    found["plan"] = timed([binary, "converge", "plan", run_dir, "--round", "1", "--seed", "1"], runs)
    plan = json.load(open(os.path.join(state, "round-plan-r1.json")))
    answer(plan)
    found["record"] = timed([binary, "converge", "record", run_dir, "--round", "1"], runs)
    found["classify"] = timed([binary, "converge", "classify", run_dir], runs)
    labels = sum(len(r["labels"]) for r in plan["reviewers"])
    ledger = json.load(open(os.path.join(state, "convergence-ledger.json")))
    classes = {}
    for item in ledger["items"]:
        classes[item.get("finalClass")] = classes.get(item.get("finalClass"), 0) + 1
    print(f"{binary}: {len(plan['items'])} items, {len(plan['reviewers'])} reviewers, {labels} labels; classes {classes}")
    for name, (med, lo, hi) in found.items():
        verdict = "met" if med <= 50 else "NOT met"
        print(f"  okstra converge {name:<9} median {med:7.1f} ms wall (min {lo:.1f}, max {hi:.1f}, n={runs})  ≤ 50 ms: {verdict}")

print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
measure(okstra)
if baseline:
    measure(baseline)
print(f"load average after: {os.getloadavg()[0]:.2f}")
PY
