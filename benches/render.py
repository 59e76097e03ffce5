#!/usr/bin/env python3
"""Benchmark `okstra --render-only`: median whole-process wall time.

Measures, in one go on the same machine: `okstra --version` (the process
start-up floor), then renders with rosters of growing size, so the figures
can be read as medians and as ratios against the floor. Each sample is a
fresh process rendering into a fresh run folder of one scratch project.

Usage: [BENCH_DIR=dir] python3 benches/render.py [path/to/okstra] [samples]
(BENCH_DIR picks the filesystem the scratch project lives on; default: $TMPDIR.)
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra"
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 60

ROSTERS = [
    ("default (claude,codex,report-writer)", []),
    ("4 workers", ["--workers", "claude,codex,grok,report-writer"]),
    ("6 workers + critic", ["--workers", "claude,codex,antigravity,grok,kimi,report-writer", "--critic", "grok"]),
]


def median_ms(argv, cwd):
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def main():
    binary = os.path.abspath(BINARY)
    project = tempfile.mkdtemp(prefix="okstra-bench-", dir=os.environ.get("BENCH_DIR"))
    try:
        with open(os.path.join(project, "brief.md"), "w") as brief:
            brief.write("# Why is checkout slow?\n")
        base = [binary, "--render-only", "--yes", "--task-type", "project-analysis",
                "--task-key", "bench/render/run", "--task-brief", "brief.md"]
        floor, _ = median_ms([binary, "--version"], project)
        print(f"samples per row: {SAMPLES}")
        print(f"{'okstra --version (floor)':42} median {floor:6.2f} ms")
        for name, extra in ROSTERS:
            median, best = median_ms(base + extra, project)
            print(f"{name:42} median {median:6.2f} ms  min {best:6.2f} ms  "
                  f"render cost {median - floor:5.2f} ms  ratio to floor {median / floor:4.1f}x")
    finally:
        shutil.rmtree(project)


if __name__ == "__main__":
    main()
