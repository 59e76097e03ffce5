#!/usr/bin/env python3
"""Benchmark okstra's anchor check: 1 000 anchors against the run's snapshot.

A project of 40 source files of 300 lines; four analysers' results of 250
items, each citing one `path:line` anchor with an excerpt (most verify,
some moved, some past the end, some in a file that does not exist).
`okstra items --json` checks them all when `state/anchors.json` does not
hold them (fresh) and only reads them back when it does (stored); the
difference is the check itself: reading the snapshot, normalising each file
once, finding every excerpt, writing the store. Run against a plain folder
(a copy in the run) and against git (a snapshot commit read with `git
cat-file`). Not a test: prints medians. Target: <= 50 ms for 1 000 anchors.

Usage: python3 benches/anchors.py [path/to/okstra] [samples]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra")
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 15
FILES, LINES, WORKERS, ITEMS = 40, 300, ["claude", "codex", "antigravity", "kimi"], 250


def source(n):
    return "".join(f"    value_{n}_{i} = compute({i}, \"{n}\")  # line {i}\n" for i in range(1, LINES + 1))


def result(worker):
    rows = ["## 5. Findings", "", "| ID | Finding | Evidence |", "|---|---|---|"]
    for k in range(ITEMS):
        n, line = k % FILES, (k * 7) % LINES + 1
        excerpt = f"value_{n}_{line} = compute({line}, \"{n}\")"
        if k % 10 == 3:
            anchor = f"src/m{n}.py:{(line + 40) % LINES + 1} `{excerpt}`"  # moved
        elif k % 10 == 7:
            anchor = f"src/m{n}.py:{LINES + 5}"  # past the end
        elif k % 25 == 0:
            anchor = f"src/gone{n}.py:{line}"  # not in the project
        else:
            anchor = f"src/m{n}.py:{line} `{excerpt}`"
        rows.append(f"| F-{k} | {worker} claim {k} | {anchor} |")
    return "\n".join(rows) + "\n"


def prepare(root, in_git):
    project = os.path.join(root, "project")
    os.makedirs(os.path.join(project, "src"))
    for n in range(FILES):
        with open(os.path.join(project, "src", f"m{n}.py"), "w") as f:
            f.write(source(n))
    with open(os.path.join(root, "brief.md"), "w") as f:
        f.write("# Bench\n\nFind everything.\n")
    if in_git:
        env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
                   GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
        with open(os.path.join(project, ".gitignore"), "w") as f:
            f.write(".okstra/\n")
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
            subprocess.run(["git", "-C", project, *args], check=True, env=env)
    out = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "bench", "--task-group", "anchors", "--task-id", "thousand",
         "--task-brief", "brief.md", "--project-root", "project", "--lead-runtime", "external",
         "--workers", ",".join(WORKERS + ["report-writer"])],
        cwd=root, check=True, capture_output=True, text=True)
    run_dir = json.loads(out.stdout)["runDir"]
    manifest = json.load(open(os.path.join(run_dir, "run-manifest.json")))
    for a in manifest["assignments"]:
        if a["role"] == "analyser":
            with open(a["resultPath"], "w") as f:
                f.write(result(a["workerId"]))
    return run_dir


def timed(run_dir, fresh):
    store = os.path.join(run_dir, "state", "anchors.json")
    times = []
    for _ in range(SAMPLES):
        if fresh and os.path.exists(store):
            os.remove(store)
        start = time.perf_counter()
        subprocess.run([BINARY, "items", run_dir, "--json"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    print(f"cpus: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    anchors = len(WORKERS) * ITEMS
    for in_git in (False, True):
        root = tempfile.mkdtemp(prefix="okstra-bench-anchors-")
        try:
            run_dir = prepare(root, in_git)
            timed(run_dir, True)  # takes the snapshot, warms the caches
            listed = json.loads(subprocess.run([BINARY, "items", run_dir, "--json"], check=True,
                                               capture_output=True, text=True).stdout)
            statuses = {}
            for item in listed["items"]:
                statuses[item["anchorStatus"]] = statuses.get(item["anchorStatus"], 0) + 1
            fresh, stored = timed(run_dir, True), timed(run_dir, False)
            check = fresh - stored
            kind = "git" if in_git else "folder"
            print(f"{kind:<6} {anchors} anchors {statuses}: okstra items fresh {fresh:.1f} ms, "
                  f"stored {stored:.1f} ms; the check itself {check:.1f} ms "
                  f"(<= 50 ms: {'met' if check <= 50 else 'NOT met'})")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
