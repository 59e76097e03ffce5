#!/usr/bin/env python3
"""Benchmark `okstra dispatch` and `okstra await`.

1. Five wrapper workers (claude, codex, antigravity, grok, kimi) whose fake
   CLIs each sleep FAKE_SLEEP seconds (2 s) and then answer: the whole
   `okstra dispatch` wall time, median of SAMPLES, against the baseline of
   one fake CLI run alone (`sh <fake>` with the same sleep) measured in the
   same go. The engine's own cost is the difference: target <= 150 ms.
2. `okstra await` on a run whose one worker stays silent for 6 s: how often
   the await process woke (voluntary context switches), target <= 1 per
   second of waiting (plus start-up).

Usage: python3 benches/dispatch.py [path/to/okstra] [samples]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra")
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 7
SLEEP = "2"
FAKES = {"claude": "claude.sh", "codex": "codex.sh", "agy": "agy.sh", "grok": "grok.sh", "kimi": "kimi.sh"}


def world():
    root = tempfile.mkdtemp(prefix="okstra-bench-dispatch-")
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "project"))
    for binary, script in FAKES.items():
        os.symlink(os.path.join(REPO, "tests/fixtures/workers", script), os.path.join(root, "bin", binary))
    with open(os.path.join(root, "brief.md"), "w") as brief:
        brief.write("why?\n")
    env = dict(os.environ, PATH=f"{root}/bin:/usr/bin:/bin", FAKE_SLEEP=SLEEP, FAKE_DIR=root)
    return root, env


def render(root, env, task_id, workers):
    out = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "bench", "--task-group", "g", "--task-id", task_id,
         "--task-brief", "brief.md", "--project-root", "project",
         "--workers", workers, "--lead-runtime", "external"],
        cwd=root, env=env, check=True, capture_output=True)
    return json.loads(out.stdout)["runDir"]


def main():
    root, env = world()
    dispatch, alone = [], []
    for index in range(SAMPLES):
        run = render(root, env, f"t{index}", "claude,codex,antigravity,grok,kimi,report-writer")
        start = time.perf_counter()
        subprocess.run([BINARY, "dispatch", run, "--pass-env", "FAKE_*"], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dispatch.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(["sh", os.path.join(REPO, "tests/fixtures/workers/kimi.sh")], env=env,
                       check=True, stdout=subprocess.DEVNULL)
        alone.append(time.perf_counter() - start)
    d, a = statistics.median(dispatch), statistics.median(alone)
    if min(dispatch) < float(SLEEP):
        sys.exit(f"a dispatch took {min(dispatch):.2f} s, less than its workers' {SLEEP} s: "
                 "the fakes did not sleep, so this measures nothing")
    print(f"dispatch, 5 workers x {SLEEP} s: median {d * 1000:.0f} ms (min {min(dispatch) * 1000:.0f})")
    print(f"one fake CLI alone:          median {a * 1000:.0f} ms")
    print(f"engine overhead:             {(d - a) * 1000:.0f} ms (target <= 150 ms)")

    # await's wake-ups while a worker is silent.
    slow = dict(env, FAKE_SLEEP="6")
    run = render(root, slow, "await", "claude,report-writer")
    dispatcher = subprocess.Popen([BINARY, "dispatch", run, "--detach", "--pass-env", "FAKE_*"], env=slow,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dispatcher.wait()
    waiter = subprocess.Popen([BINARY, "await", run], env=slow,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    switches, seconds = 0, 0.0
    start = time.perf_counter()
    while waiter.poll() is None:
        try:
            with open(f"/proc/{waiter.pid}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches"):
                        switches = int(line.split()[1])
        except OSError:
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    print(f"await over {seconds:.1f} s of waiting: {switches} voluntary wake-ups "
          f"({switches / max(seconds, 0.1):.2f}/s; target <= 1/s plus start-up)")


if __name__ == "__main__":
    main()
