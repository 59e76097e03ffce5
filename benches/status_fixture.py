#!/usr/bin/env python3
"""Generate a synthetic okstra project for benchmarking `okstra status`.

usage: status_fixture.py <project-root> [runs] [workers-per-run]

Writes <runs> run folders (default 1000) under <project-root>/.okstra/tasks,
each with a run manifest of <workers-per-run> cli-wrapper assignments
(default 10) and one status sidecar per assignment (10 000 by default), in
the mix a busy project accumulates: mostly finished with results, some
failed, idle-killed or signalled, some still running (wrapper pid 1, which
is alive and started before any sidecar), some lost (a pid that cannot
exist), plus logs and heartbeat files for the running ones.
"""

import json
import os
import sys
import time

DEAD_PID = 2**22 + 7  # above Linux's pid_max ceiling: never a live process


def main():
    root = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    per_run = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    now = int(time.time())
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 3600))
    sidecars = 0
    for r in range(runs):
        run_id = "project-analysis-001"
        run_dir = os.path.join(
            root, ".okstra", "tasks", "bench", f"g{r // 100:02d}", f"t{r:04d}", run_id
        )
        for sub in ("prompts", "results", "state/heartbeats", "report"):
            os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
        assignments = []
        for w in range(per_run):
            name = f"w{w:02d}-worker"
            prompt = os.path.join(run_dir, "prompts", f"{name}.md")
            a = {
                "dispatchName": name,
                "workerId": f"w{w:02d}",
                "role": "analyser",
                "provider": "codex",
                "modelExecutionValue": "gpt-5.6-sol",
                "runner": "cli-wrapper",
                "wrapper": "okstra-codex-exec",
                "promptPath": prompt,
                "resultPath": os.path.join(run_dir, "results", f"{name}.md"),
                "workerResultsPath": os.path.join(
                    run_dir, "results", f"{name}.worker-results.md"
                ),
                "errorPath": os.path.join(run_dir, "results", f"{name}.error.md"),
                "heartbeatPath": os.path.join(
                    run_dir, "state", "heartbeats", f"{name}.jsonl"
                ),
            }
            assignments.append(a)
            kind = (r * per_run + w) % 100
            started = now - 1800
            side = {
                "schemaVersion": 1,
                "wrapper": "okstra-codex-exec",
                "role": "analyser",
                "pid": 1,
                "pgid": DEAD_PID,
                "started_ts": started,
                "log_path": prompt[:-3] + ".log",
                "stage": "exited",
            }
            finished = True
            if kind < 80:
                side.update(exit_code=0, ended_ts=started + 600, duration_ms=600000)
            elif kind < 88:
                side.update(exit_code=1, ended_ts=started + 60, duration_ms=60000)
                finished = False
            elif kind < 92:
                side.update(exit_code=124, ended_ts=started + 900, duration_ms=900000,
                            timeout=True, idle_at_ts=started + 900, idle_seconds=600,
                            terminated_by="idle-watchdog", reason="idle-timeout")
                finished = False
            elif kind < 94:
                side.update(exit_code=143, ended_ts=started + 30, duration_ms=30000,
                            terminated_by="signal", signal="SIGTERM", reason="signal")
                finished = False
            elif kind < 98:
                side["stage"] = "started"  # running: pid 1 is alive
                finished = False
                with open(side["log_path"], "w") as f:
                    f.write("working\n" * 20)
                with open(a["heartbeatPath"], "w") as f:
                    for i in range(5):
                        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60 * (5 - i)))
                        f.write(json.dumps({"ts": ts, "phase": "analysis",
                                            "summary": f"step {i}", "changedFiles": [],
                                            "blocker": None}) + "\n")
            else:
                side["stage"] = "started"  # lost: the wrapper pid cannot exist
                side["pid"] = DEAD_PID
                finished = False
            if finished:
                for path in (a["resultPath"], a["workerResultsPath"]):
                    with open(path, "w") as f:
                        f.write("result\n")
            with open(prompt, "w") as f:
                f.write("# prompt\n")
            with open(prompt + ".status.json", "w") as f:
                json.dump(side, f)
            sidecars += 1
        manifest = {
            "schemaVersion": 1,
            "createdAt": created,
            "runId": run_id,
            "sequence": 1,
            "taskKey": f"bench/g{r // 100:02d}/t{r:04d}",
            "taskType": "project-analysis",
            "runDir": run_dir,
            "projectRoot": root,
            "assignments": assignments,
            "leadEventsPath": os.path.join(run_dir, "state", "lead-events.jsonl"),
            "continues": None,
        }
        with open(os.path.join(run_dir, "run-manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
    print(f"{runs} runs, {sidecars} sidecars under {root}/.okstra", file=sys.stderr)


if __name__ == "__main__":
    main()
