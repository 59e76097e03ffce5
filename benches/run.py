#!/usr/bin/env python3
"""Benchmark `okstra run`: the orchestration's own time.

A whole headless run on a copy of examples/tiny-service, with the fake team
of tests/fixtures/team (every answer takes FAKE_SLEEP = 1 s): four
analysers, two convergence rounds (the catalog's maximum), a report writer.
That is four batches whose slowest worker takes 1 s each, so the
orchestration's own time is the wall time minus 4 s (dispatching, recovery,
plan, record, classify, coverage, usage, validate, render, events).
Target: <= 1 s. Median of SAMPLES, with `okstra --version` as the process
floor measured in the same go.

Usage: python3 benches/run.py [path/to/okstra] [samples]
"""

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
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 5
SLEEP = 1.0
BATCHES = 4


def main():
    root = tempfile.mkdtemp(prefix="okstra-bench-run-")
    shutil.copytree(os.path.join(REPO, "examples/tiny-service"), os.path.join(root, "project"))
    shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
    env = dict(os.environ, PATH=f"{REPO}/tests/fixtures/team:/usr/bin:/bin", **FAKE_KEYS, FAKE_SLEEP=str(SLEEP))
    walls = []
    for index in range(SAMPLES):
        start = time.perf_counter()
        subprocess.run(
            [BINARY, "run", "--yes", "--task-type", "project-analysis", "--project-id", "bench",
             "--task-group", "g", "--task-id", f"t{index}", "--task-brief", "brief.md",
             "--project-root", "project", "--workers", "claude,codex,antigravity,kimi,report-writer",
             # The fakes' FAKE_SLEEP: a CLI sees no variable okstra was not told to pass.
             "--pass-env", "FAKE_*"],
            cwd=root, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
    floor = []
    for _ in range(20):
        start = time.perf_counter()
        subprocess.run([BINARY, "--version"], check=True, stdout=subprocess.DEVNULL)
        floor.append(time.perf_counter() - start)
    wall = statistics.median(walls)
    if min(walls) < BATCHES * SLEEP:
        sys.exit(f"a run took {min(walls):.2f} s, less than its workers' {BATCHES * SLEEP} s: "
                 "the fakes did not sleep, so this measures nothing")
    print(f"okstra run, 4 analysers, 2 rounds, report writer: median {wall * 1000:.0f} ms "
          f"(min {min(walls) * 1000:.0f})")
    print(f"workers' own time (slowest of each of {BATCHES} batches): {BATCHES * SLEEP * 1000:.0f} ms")
    print(f"orchestration's own time: {(wall - BATCHES * SLEEP) * 1000:.0f} ms (target <= 1000 ms)")
    print(f"process floor (okstra --version): {statistics.median(floor) * 1000:.1f} ms")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
