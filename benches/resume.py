#!/usr/bin/env python3
"""Benchmark resuming a finished run: `okstra run <run-dir>` on a run that
is already done (four analysers, two convergence rounds, a report writer)
must dispatch nothing and end with the same report. Target: <= 100 ms
median. Also prints the time to resume after the report's HTML was
deleted (one step to redo: rendering) and `okstra --version` as the process
floor, in the same go.

Usage: python3 benches/resume.py [path/to/okstra] [samples]
"""

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The preflight wants each provider's key variable set; the fakes take any value.
FAKE_KEYS = {"ANTHROPIC_API_KEY": "fake", "OPENAI_API_KEY": "fake",
             "GEMINI_API_KEY": "fake", "KIMI_MODEL_API_KEY": "fake"}
BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra")
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 21


def timed(command, env, cwd):
    start = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, out.stdout


def main():
    root = tempfile.mkdtemp(prefix="okstra-bench-resume-")
    shutil.copytree(os.path.join(REPO, "examples/tiny-service"), os.path.join(root, "project"))
    shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
    env = dict(os.environ, PATH=f"{REPO}/tests/fixtures/team:/usr/bin:/bin", **FAKE_KEYS)
    out = subprocess.run(
        [BINARY, "run", "--yes", "--json", "--task-type", "project-analysis", "--project-id", "bench",
         "--task-group", "g", "--task-id", "resume", "--task-brief", "brief.md",
         "--project-root", "project", "--workers", "claude,codex,antigravity,kimi,report-writer"],
        cwd=root, env=env, check=True, capture_output=True)
    run_dir = json.loads(out.stdout)["runDir"]
    data = os.path.join(run_dir, "report/data.json")
    before = hashlib.sha256(open(data, "rb").read()).hexdigest()
    finished, rerender, floor = [], [], []
    for _ in range(SAMPLES):
        wall, stdout = timed([BINARY, "run", run_dir, "--json"], env, root)
        outcome = json.loads(stdout)
        assert outcome["dispatched"] == 0 and outcome["valid"], outcome
        finished.append(wall)
        os.remove(os.path.join(run_dir, "report/final-report.html"))
        wall, _ = timed([BINARY, "run", run_dir, "--json"], env, root)
        rerender.append(wall)
        wall, _ = timed([BINARY, "--version"], env, root)
        floor.append(wall)
    assert hashlib.sha256(open(data, "rb").read()).hexdigest() == before, "the report changed"
    median = statistics.median(finished)
    print(f"resume of a finished run (4 analysers x 2 rounds): median {median * 1000:.1f} ms "
          f"(min {min(finished) * 1000:.1f}, max {max(finished) * 1000:.1f}; target <= 100 ms)")
    print(f"resume that re-renders the report: median {statistics.median(rerender) * 1000:.1f} ms")
    print(f"process floor (okstra --version): median {statistics.median(floor) * 1000:.1f} ms; "
          f"ratio {median / statistics.median(floor):.1f}x")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
