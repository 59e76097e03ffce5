#!/usr/bin/env python3
"""Benchmark what provider-exec costs around a CLI's leftovers (issue 13).

Not a test: prints figures, asserts nothing.

    python3 benches/leftovers.py [okstra-binary ...]   (default target/release/okstra)

Several binaries (e.g. one built before a change) are measured side by side;
for each, the wrapper `okstra dispatch` starts: the okstra-provider-exec binary
beside it when there is one, else `<okstra-binary> provider-exec`.
For each it prints:
  exit after leftovers  wall time of a run whose CLI leaves `sleep 300` behind
                        and exits at once (target: about the CLI's own time,
                        never the 5 s grace period)
  group after SIGKILL   time from SIGKILL of the wrapper until the CLI's
                        grandchild is gone (target: under a second; `none`
                        means it still ran 2 s later)
  guardian              the guardian process's VmHWM and its context switches
                        over 3 s while the CLI is silent (target: 0)
"""

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = 5


def fake(work, body):
    path = os.path.join(work, "bin", "grok")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)


def argv(binary, work):
    own = os.path.join(os.path.dirname(binary), "okstra-provider-exec")
    lead = [own] if os.path.isfile(own) and os.access(own, os.X_OK) else [binary, "provider-exec"]
    return [*lead, "grok", os.path.join(work, "project"), "m",
            os.path.join(work, "prompt.md"), "", "worker", "600"]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name):
                return int(line.split()[1])
    return 0


def children(pid):
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            found += [int(p) for p in f.read().split()]
    return found


def measure(binary, work, env):
    # 1. a CLI that leaves a child and exits
    fake(work, "sleep 300 &\necho started\n")
    walls = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv(binary, work), env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
    # 2. SIGKILL of the wrapper while a grandchild runs
    pid_file = os.path.join(work, "grandchild.pid")
    fake(work, f"sleep 300 &\necho $! > {pid_file}\nwait\n")
    kills = []
    for _ in range(RUNS):
        if os.path.exists(pid_file):
            os.remove(pid_file)
        proc = subprocess.Popen(argv(binary, work), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
            time.sleep(0.005)
        grandchild = int(open(pid_file).read())
        time.sleep(0.2)
        start = time.perf_counter()
        proc.kill()
        proc.wait()
        while alive(grandchild) and time.perf_counter() - start < 2:
            time.sleep(0.001)
        if alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)
            kills.append(None)
        else:
            kills.append(time.perf_counter() - start)
    # 3. the guardian while the CLI is silent
    fake(work, "exec sleep 5\n")
    proc = subprocess.Popen(argv(binary, work), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    guardian = None
    for child in children(proc.pid):
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if f.read().split(b"\0")[0] == binary.encode():
                guardian = child
    guard = "none"
    if guardian:
        switches = lambda: (status_field(guardian, "voluntary_ctxt_switches")
                            + status_field(guardian, "nonvoluntary_ctxt_switches"))
        before = switches()
        time.sleep(3)
        guard = (f"VmHWM {status_field(guardian, 'VmHWM') / 1024:.2f} MiB, "
                 f"{switches() - before} context switches in 3 s")
    wrapper_hwm = status_field(proc.pid, "VmHWM") / 1024
    proc.wait()
    stopped = [k for k in kills if k is not None]
    kill_text = (f"median {statistics.median(stopped) * 1000:.1f} ms"
                 if stopped else "none")
    print(f"{binary}\n"
          f"  exit after leftovers  median {statistics.median(walls) * 1000:7.1f} ms (of {RUNS})\n"
          f"  group after SIGKILL   {kill_text} ({len(stopped)}/{RUNS} stopped within 2 s)\n"
          f"  guardian              {guard}\n"
          f"  wrapper VmHWM         {wrapper_hwm:.2f} MiB (silent CLI)")


def main():
    binaries = [os.path.abspath(b) for b in sys.argv[1:]] or [os.path.abspath("target/release/okstra")]
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as work:
        os.makedirs(os.path.join(work, "bin"))
        os.makedirs(os.path.join(work, "project"))
        with open(os.path.join(work, "prompt.md"), "w") as f:
            f.write("benchmark prompt\n")
        env = {**os.environ, "PATH": os.path.join(work, "bin") + ":" + os.environ["PATH"]}
        print(f"# leftovers benchmark ({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, "
              f"{os.cpu_count()} CPUs)")
        for binary in binaries:
            measure(binary, work, env)


if __name__ == "__main__":
    main()
