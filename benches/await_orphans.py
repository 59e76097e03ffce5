#!/usr/bin/env python3
"""Benchmark `okstra await` settling many orphaned attempt records: records
whose dispatcher died before their wrapper wrote anything (no sidecar), so
await must finish each from its files. Before the run-state rework each
settle re-read, re-validated and fsynced the whole team state (800 records
6 s, 2 000 records 47 s); now they are settled in one locked write.
Prints the median wall time per size, and `okstra --version` as the floor.

Usage: python3 benches/await_orphans.py [path/to/okstra] [samples]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra")
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SIZES = [200, 800, 2000]


def dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def orphans(run_dir, count, pid):
    path = None
    for name in os.listdir(os.path.join(run_dir, "state")):
        if name.startswith("team-state-"):
            path = os.path.join(run_dir, "state", name)
    state = json.load(open(path))
    records = []
    for index in range(count):
        name = f"claude-worker-{index}"
        records.append({
            "dispatchName": name, "dispatchKind": "initial", "attempt": 1, "workerId": "claude",
            "role": "analyser", "provider": "claude", "model": "opus", "runner": "cli-wrapper",
            "promptPath": os.path.join(run_dir, "prompts/claude-worker.md"),
            "resultPath": os.path.join(run_dir, f"results/{name}.md"),
            "workerResultsPath": os.path.join(run_dir, f"results/{name}.worker-results.md"),
            "errorPath": os.path.join(run_dir, f"results/{name}.error.md"),
            "logPath": os.path.join(run_dir, f"prompts/{name}.log"),
            "sidecarPath": os.path.join(run_dir, f"prompts/{name}.md.status.json"),
            "startedAt": "2026-12-01T00:00:00Z", "dispatcherPid": pid,
        })
    state["dispatches"] = records
    json.dump(state, open(path, "w"))


def main():
    root = tempfile.mkdtemp(prefix="okstra-bench-await-")
    shutil.copytree(os.path.join(REPO, "examples/tiny-service"), os.path.join(root, "project"))
    shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
    out = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--headless", "--task-type", "project-analysis",
         "--project-id", "bench", "--task-group", "g", "--task-id", "await", "--task-brief",
         "brief.md", "--project-root", "project", "--workers", "claude,report-writer"],
        cwd=root, check=True, capture_output=True)
    run_dir = json.loads(out.stdout)["runDir"]
    pid = dead_pid()
    for size in SIZES:
        walls = []
        for _ in range(SAMPLES):
            orphans(run_dir, size, pid)
            start = time.perf_counter()
            done = subprocess.run([BINARY, "await", run_dir, "--json"], cwd=root, capture_output=True)
            walls.append(time.perf_counter() - start)
            summary = json.loads(done.stdout)
            assert len(summary["dispatches"]) == size and all(
                d["ending"] is not None for d in summary["dispatches"]), done.stderr
        print(f"await over {size} orphaned records: median {statistics.median(walls) * 1000:.0f} ms")
    floor = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([BINARY, "--version"], check=True, capture_output=True)
        floor.append(time.perf_counter() - start)
    print(f"process floor (okstra --version): median {statistics.median(floor) * 1000:.1f} ms")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
