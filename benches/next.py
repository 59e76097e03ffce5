#!/usr/bin/env python3
"""`okstra next --json` when it has nothing to start, in milliseconds.

Usage: python3 benches/next.py <okstra binary> [runs]

One project with the fake team (`tests/fixtures/team/`), two runs of the
default roster led from claude-code:
- `host-work`: its native analyser is out with the host and the wrapper
  worker has finished, so `okstra next` only reads the run and hands out the
  same task again;
- `done`: driven to its rendered report (the native tasks played by the
  fake team and returned by the hook), so `okstra next` reads the run,
  checks the report is still the one rendered, and answers `done`.
Each is timed `runs` times, with `okstra --version` as the process floor;
medians are printed (the machines here are shared: compare within one go).
Target: under 50 ms.
"""
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
BINARY = os.path.realpath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 21


def median_ms(argv, cwd, env):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def next_answer(run, cwd, env, *extra):
    out = subprocess.run([BINARY, "next", run, "--json", *extra], cwd=cwd, env=env,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def render(root, env, task_id):
    out = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "demo", "--task-group", "bench", "--task-id", task_id,
         "--task-brief", "brief.md", "--lead-runtime", "claude-code"],
        cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["runDir"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(os.path.realpath(tmp)) / "project"
        shutil.copytree(REPO / "examples/tiny-service", root)
        shutil.copy(REPO / "examples/brief.md", root / "brief.md")
        env = dict(os.environ, PATH=f"{REPO / 'tests/fixtures/team'}:{os.environ['PATH']}",
                   HOME=str(root.parent))
        env.pop("CLAUDECODE", None)

        # host-work: the native task out, the wrapper worker done.
        waiting = render(root, env, "host-work")
        for _ in range(100):
            answer = next_answer(waiting, root, env)
            if answer["state"] == "host-work" and not answer["running"]:
                break
            time.sleep(0.2)
        assert answer["state"] == "host-work", answer

        # done: every native task played and returned by the hook.
        done = render(root, env, "done")
        for _ in range(100):
            answer = next_answer(done, root, env)
            if answer["state"] == "done":
                break
            if answer["state"] == "waiting":
                next_answer(done, root, env, "--wait", "--timeout", "60s")
            for task in answer["tasks"]:
                message = subprocess.run(["claude"], stdin=open(task["promptPath"]), cwd=root,
                                         env=dict(env, FAKE_PLAIN="1"), capture_output=True,
                                         text=True).stdout
                hook = json.dumps({"agent_id": "a1", "last_assistant_message": message})
                subprocess.run([BINARY, "hook", "subagent-stop"], input=hook, cwd=root, env=env,
                               capture_output=True, text=True)
        assert answer["state"] == "done", answer

        floor = median_ms([BINARY, "--version"], root, env)
        print(f"okstra --version            {floor:7.1f} ms (process floor)")
        for name, run in [("host-work", waiting), ("done", done)]:
            ms = median_ms([BINARY, "next", run, "--json"], root, env)
            print(f"okstra next ({name:9})     {ms:7.1f} ms")


if __name__ == "__main__":
    main()
