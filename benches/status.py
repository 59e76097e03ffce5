#!/usr/bin/env python3
"""Benchmark `okstra status --json` on one finished run with 200 attempt
records: a headless run of the fake team (two analysers, two convergence
rounds, a report writer, a valid report), its team state padded with
earlier attempts of every ending until it holds 200 records. status then
classifies every attempt, lists each on its own dispatch line, and checks
the report as `okstra validate` does for the run's line. Target: <= 50 ms
median. Also prints the same run with only its own records, and
`okstra --version` as the process floor, in the same go.

Usage: python3 benches/status.py [path/to/okstra] [samples]
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
# The preflight wants each provider's key variable set; the fakes take any value.
FAKE_KEYS = {"ANTHROPIC_API_KEY": "fake", "OPENAI_API_KEY": "fake",
             "GEMINI_API_KEY": "fake", "KIMI_MODEL_API_KEY": "fake"}
BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/okstra")
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 21
RECORDS = 200
ENDINGS = ["completed", "empty-output", "idle-timeout", "auth", "rate-limit", "network",
           "cli-missing", "usage-error", "crash", "signalled", "cancelled", "budget"]


def timed(command, env, cwd):
    start = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, out.stdout


def team_state_path(run_dir):
    state = os.path.join(run_dir, "state")
    return next(os.path.join(state, name) for name in sorted(os.listdir(state))
                if name.startswith("team-state-"))


def pad(run_dir, total):
    """Put earlier attempts before the run's own records until there are
    `total`: reverify dispatches of rounds the run never reached, each
    ended one of the endings in turn (so the rows still show the real
    latest attempts and the report stays valid)."""
    path = team_state_path(run_dir)
    state = json.load(open(path))
    own = state["dispatches"]
    extra = []
    index = 0
    while len(own) + len(extra) < total:
        worker = ("claude", "codex")[index % 2]
        name = f"{worker}-worker-reverify-r{100 + index // 2}"
        ending = ENDINGS[index % len(ENDINGS)]
        extra.append({
            "dispatchName": name, "dispatchKind": f"reverify-r{100 + index // 2}", "attempt": 1,
            "workerId": worker, "role": "analyser", "provider": worker, "model": "m",
            "runner": "cli-wrapper",
            "promptPath": os.path.join(run_dir, f"prompts/{name}.md"),
            "resultPath": os.path.join(run_dir, f"results/{name}.md"),
            "workerResultsPath": os.path.join(run_dir, f"results/{name}.worker-results.md"),
            "errorPath": os.path.join(run_dir, f"results/{name}.error.md"),
            "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:01:00Z",
            "ending": ending, "exitCode": 0 if ending == "completed" else 1,
            "detail": f"ended {ending}",
            "usage": {"inputTokens": 100, "outputTokens": 20},
        })
        index += 1
    state["dispatches"] = extra + own
    json.dump(state, open(path, "w"), indent=2)
    return len(state["dispatches"])


def measure(command, env, cwd):
    walls = []
    for _ in range(SAMPLES):
        wall, stdout = timed(command, env, cwd)
        walls.append(wall)
    return walls, stdout


def main():
    root = tempfile.mkdtemp(prefix="okstra-bench-status-")
    shutil.copytree(os.path.join(REPO, "examples/tiny-service"), os.path.join(root, "project"))
    shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
    env = dict(os.environ, PATH=f"{REPO}/tests/fixtures/team:/usr/bin:/bin", **FAKE_KEYS)
    out = subprocess.run(
        [BINARY, "run", "--yes", "--json", "--task-type", "project-analysis", "--project-id", "bench",
         "--task-group", "g", "--task-id", "status", "--task-brief", "brief.md",
         "--project-root", "project", "--workers", "claude,codex,report-writer"],
        cwd=root, env=env, check=True, capture_output=True)
    run_dir = json.loads(out.stdout)["runDir"]
    status = [BINARY, "status", "--json", run_dir]
    small, stdout = measure(status, env, root)
    own = len(json.loads(stdout)["runs"][0]["dispatches"])
    count = pad(run_dir, RECORDS)
    # okstra's blocks of the report (usage, coverage) from the padded
    # records, so the report stays valid against them.
    subprocess.run([BINARY, "report", run_dir, "--out-dir", os.path.join(root, "views")],
                   cwd=root, env=env, check=True, capture_output=True)
    big, stdout = measure(status, env, root)
    board = json.loads(stdout)["runs"][0]
    assert len(board["dispatches"]) == count, len(board["dispatches"])
    assert board["run"]["outcome"] == "report-valid", board["run"]
    floor, _ = measure([BINARY, "--version"], env, root)
    median = statistics.median(big)
    print(f"status --json, {count} attempt records: median {median * 1000:.1f} ms "
          f"(min {min(big) * 1000:.1f}, max {max(big) * 1000:.1f}; target <= 50 ms)")
    print(f"status --json, the run's own {own} records: median "
          f"{statistics.median(small) * 1000:.1f} ms")
    print(f"process floor (okstra --version): median {statistics.median(floor) * 1000:.1f} ms; "
          f"ratio {median / statistics.median(floor):.1f}x")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
