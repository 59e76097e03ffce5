#!/usr/bin/env python3
"""Benchmark containment setup: Landlock for a reviewer, against the copy a
CLI with no read-only mode works in where Landlock is missing (and that the
Executor always works in).

Builds a git repository of FILES files / MIB MiB (random, incompressible
content, committed, plus one uncommitted change) in a temp folder, then for
each of SAMPLES runs renders a run with a kimi analyser and a claude analyser
and `okstra dispatch`es it with fake CLIs that only record when they
started. It prints, as medians:

- `snapshot`: the run's snapshot of the working tree (once per run);
- `copy`: one worker's git copy (init, alternates, checkout);
- `copy, reused`: the same worker's next attempt (its prompt changed, so
  it runs again): the copy it left is reset in place (`checkout --force`,
  `clean`) instead of being made again — what every later attempt and
  convergence round of a worker costs, where okstra used to remove each
  copy when its attempt ended and make a new one for the next;
- `kimi start`: from the dispatch's start to kimi's CLI starting (snapshot +
  copy + engine);
- `claude start`: the same for claude, which needs no copy: it must not wait
  for kimi's copy;
- the baseline in the same go: what the previous isolation cost, a linked
  `git worktree add --detach` of the same snapshot (and its removal);
- the floor in the same go: `cp -r` of the working tree (no `.git`), what
  writing that many files costs on this disk at all.

Then, in the same go, the same run contained by Landlock (no copy at all):

- `kimi start (landlock)`: from the dispatch's start to kimi's CLI starting,
  confined in the project itself;
- `containment set-up per reviewer`: what a confined start costs, measured
  where it is paid: `okstra provider-exec kimi` of a CLI that exits at once,
  with `OKSTRA_CONFINE=landlock` (scratch folder, state folder, write set,
  `okstra sandbox-exec`, its ruleset and exec) minus the same without, as
  medians of EXECS runs each, interleaved.

Targets: containment set-up per reviewer <= 10 ms (median) under Landlock on
10 000 files / 200 MB; the Executor's one copy as before (the `copy` figure:
the same code makes it); claude's start unaffected by kimi's copy.

Each sample's copies are removed at its end (`okstra cleanup --execute`); a
burst of deletions slows file creation on this disk for a while (docs/benchmarks.md,
"Benchmarks"), so samples are PAUSE seconds apart (BENCH_PAUSE, default 30).

Usage: python3 benches/isolation.py [path/to/okstra] [samples] [files] [MiB]
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
SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 5
FILES = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
MIB = int(sys.argv[4]) if len(sys.argv) > 4 else 200
PAUSE = float(os.environ.get("BENCH_PAUSE", "30"))
EXECS = int(os.environ.get("BENCH_EXECS", "21"))

FAKE = """#!/bin/sh
# Records when it first started, answers with a result block, exits 0.
[ -e "$FAKE_DIR/{name}.start" ] || python3 -c 'import time; print(time.time())' > "$FAKE_DIR/{name}.start"
printf '%s\\n' '{line}'
"""
BLOCK = "=== OKSTRA RESULT BEGIN ===\\n## 1. Findings\\n=== OKSTRA RESULT END ==="
LINES = {
    "claude": '{"type":"result","subtype":"success","is_error":false,"result":"' + BLOCK + '"}',
    "kimi": '{"role":"assistant","content":"' + BLOCK + '"}',
}


def git(cwd, *args, env=None):
    return subprocess.run(["git", "-C", cwd, *args], check=True, capture_output=True, env=env).stdout.decode().strip()


def build_repository(root):
    project = os.path.join(root, "project")
    os.makedirs(project)
    size = MIB * 1024 * 1024 // FILES
    for i in range(FILES):
        folder = os.path.join(project, "src", f"d{i // 100:04d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{i:05d}.bin"), "wb") as out:
            out.write(os.urandom(size))
    with open(os.path.join(project, ".gitignore"), "w") as out:
        out.write(".okstra/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    git(project, "init", "-q", "-b", "main")
    # No background gc competing with the samples; packed, as real
    # repositories mostly are.
    git(project, "config", "gc.auto", "0")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "bench", env=env)
    git(project, "repack", "-adq")
    with open(os.path.join(project, "src", "d0000", "f00000.bin"), "ab") as out:
        out.write(b"uncommitted change\n")
    return project


def install_fakes(root):
    bin_dir = os.path.join(root, "bin")
    os.makedirs(bin_dir)
    for name, line in LINES.items():
        path = os.path.join(bin_dir, name)
        with open(path, "w") as out:
            out.write(FAKE.format(name=name, line=line))
        os.chmod(path, 0o755)
    return bin_dir


def sample(project, env, fake_dir, index):
    task = f"s{index}"
    env = dict(env, OKSTRA_CONTAINMENT="copies")
    rendered = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "bench", "--task-group", "iso", "--task-id", task,
         "--task-brief", os.path.join(project, "..", "brief.md"), "--project-root", project,
         "--workers", "claude,kimi,report-writer", "--lead-runtime", "external"],
        env=env, check=True, capture_output=True)
    run_dir = json.loads(rendered.stdout)["runDir"]
    for name in LINES:
        path = os.path.join(fake_dir, f"{name}.start")
        if os.path.exists(path):
            os.remove(path)
    started = time.time()
    subprocess.run([BINARY, "dispatch", "--workers", "claude,kimi", "--pass-env", "FAKE_*", run_dir],
                   env=env, capture_output=True)
    state_dir = os.path.join(run_dir, "state")
    state_file = next(f for f in os.listdir(state_dir) if f.startswith("team-state-"))
    with open(os.path.join(state_dir, state_file)) as src:
        state = json.load(src)
    kimi = next(r for r in state["dispatches"] if r["dispatchName"] == "kimi-worker")
    space = kimi.get("workspace") or {}
    if kimi.get("isolation") != "git-copy" or "copyMs" not in space:
        sys.exit(f"kimi was not isolated by a git copy: {json.dumps(kimi)}")

    def start(name):
        with open(os.path.join(fake_dir, f"{name}.start")) as src:
            return float(src.read()) - started

    # The snapshot's commit, for the baseline (cleanup removes its ref).
    snapshot = git(project, "rev-parse", space["snapshotRef"])
    first = (space["snapshotMs"] / 1000, space["copyMs"] / 1000, start("kimi"), start("claude"), snapshot)
    # The same worker again (a changed prompt is a new question): its copy
    # is reset in place.
    with open(kimi["promptPath"], "a") as prompt:
        prompt.write("\nOnce more.\n")
    subprocess.run([BINARY, "dispatch", "--workers", "kimi", "--pass-env", "FAKE_*", run_dir],
                   env=env, capture_output=True)
    with open(os.path.join(state_dir, state_file)) as src:
        state = json.load(src)
    again = [r for r in state["dispatches"] if r["dispatchName"] == "kimi-worker"][-1]
    if again.get("attempt") != 2 or "copyMs" not in (again.get("workspace") or {}):
        sys.exit(f"kimi did not run again in its copy: {json.dumps(again)}")
    subprocess.run([BINARY, "cleanup", "--execute", "--older-than", "0s", "--project-root", project],
                   env=env, check=True, capture_output=True)
    return first + (again["workspace"]["copyMs"] / 1000,)


def landlock_sample(project, env, fake_dir, index):
    """The same run contained by Landlock: kimi's start, and that no copy
    was made."""
    rendered = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "bench", "--task-group", "landlock", "--task-id", f"s{index}",
         "--task-brief", os.path.join(project, "..", "brief.md"), "--project-root", project,
         "--workers", "claude,kimi,report-writer", "--lead-runtime", "external"],
        env=env, check=True, capture_output=True)
    run_dir = json.loads(rendered.stdout)["runDir"]
    for name in LINES:
        path = os.path.join(fake_dir, f"{name}.start")
        if os.path.exists(path):
            os.remove(path)
    started = time.time()
    subprocess.run([BINARY, "dispatch", "--workers", "claude,kimi", "--pass-env", "FAKE_*", run_dir],
                   env=env, capture_output=True)
    state_dir = os.path.join(run_dir, "state")
    state_file = next(f for f in os.listdir(state_dir) if f.startswith("team-state-"))
    with open(os.path.join(state_dir, state_file)) as src:
        state = json.load(src)
    kimi = next(r for r in state["dispatches"] if r["dispatchName"] == "kimi-worker")
    if kimi.get("isolation") != "landlock" or kimi.get("workspace"):
        sys.exit(f"kimi was not contained by Landlock in the project: {json.dumps(kimi)}")
    with open(os.path.join(fake_dir, "kimi.start")) as src:
        return float(src.read()) - started


def confined_setup(project, env, root):
    """Median wall time of `okstra provider-exec kimi` of a CLI that exits at
    once, confined and not, EXECS runs each, interleaved."""
    prompt = os.path.join(root, "exec", "prompt.md")
    os.makedirs(os.path.dirname(prompt), exist_ok=True)
    with open(prompt, "w") as out:
        out.write("Say hi.\n")
    times = {False: [], True: []}
    for _ in range(EXECS):
        for confine in (False, True):
            run_env = dict(env)
            if confine:
                run_env["OKSTRA_CONFINE"] = "landlock"
            began = time.perf_counter()
            subprocess.run([BINARY, "provider-exec", "kimi", project, "m", prompt], env=run_env,
                           check=True, capture_output=True)
            times[confine].append(time.perf_counter() - began)
    return statistics.median(times[False]), statistics.median(times[True])


def worktree_baseline(project, root, commit):
    tree = os.path.join(root, "worktree")
    began = time.perf_counter()
    git(project, "worktree", "add", "--detach", "--quiet", tree, commit)
    added = time.perf_counter() - began
    git(project, "worktree", "remove", "--force", tree)
    return added


def copy_floor(project, root):
    target = os.path.join(root, "floor")
    began = time.perf_counter()
    subprocess.run(["cp", "-r", os.path.join(project, "src"), target], check=True)
    took = time.perf_counter() - began
    shutil.rmtree(target)
    return took


def main():
    if not os.path.exists(BINARY):
        sys.exit(f"no okstra binary at {BINARY}: cargo build --release, or pass its path")
    root = tempfile.mkdtemp(prefix="okstra-bench-isolation-")
    try:
        print(f"building a repository of {FILES} files / {MIB} MiB …", flush=True)
        project = build_repository(root)
        with open(os.path.join(root, "brief.md"), "w") as out:
            out.write("How is the data laid out?\n")
        fake_dir = os.path.join(root, "fake")
        os.makedirs(fake_dir)
        env = dict(os.environ, PATH=f"{install_fakes(root)}:/usr/bin:/bin", FAKE_DIR=fake_dir,
                   HOME=os.path.join(root, "home"), XDG_STATE_HOME=os.path.join(root, "state"),
                   OKSTRA_WRITABLE=fake_dir)
        env.pop("OKSTRA_CONTAINMENT", None)
        results, baseline, floor, landlock, plain, confined = [], [], [], [], [], []
        for index in range(SAMPLES):
            time.sleep(PAUSE)
            result = sample(project, env, fake_dir, index)
            results.append(result)
            baseline.append(worktree_baseline(project, root, result[4]))
            floor.append(copy_floor(project, root))
            landlock.append(landlock_sample(project, env, fake_dir, index))
            bare, boxed = confined_setup(project, env, root)
            plain.append(bare)
            confined.append(boxed)
            print(f"  sample {index + 1}: snapshot {result[0]:.2f} s, copy {result[1]:.2f} s, "
                  f"reused {result[5]:.2f} s, "
                  f"kimi starts at {result[2]:.2f} s, claude at {result[3]:.2f} s; "
                  f"worktree add {baseline[-1]:.2f} s, cp -r {floor[-1]:.2f} s; "
                  f"landlock: kimi starts at {landlock[-1]:.2f} s, set-up "
                  f"{(boxed - bare) * 1000:.1f} ms ({bare * 1000:.1f} -> {boxed * 1000:.1f} ms)", flush=True)
        median = lambda values: statistics.median(values)
        setup = median([boxed - bare for bare, boxed in zip(plain, confined)])
        copy = median([r[1] for r in results])
        print(f"median over {SAMPLES} runs, {FILES} files / {MIB} MiB:")
        print(f"  snapshot (once per run)      {median([r[0] for r in results]):.3f} s")
        print(f"  copy (per worker)            {copy:.3f} s   the Executor's one copy (and, without Landlock, each reviewer's)")
        print(f"  copy, reused (next attempt)  {median([r[5] for r in results]):.3f} s   (was: a new copy each time)")
        print(f"  kimi's CLI starts after      {median([r[2] for r in results]):.3f} s   (copies)")
        print(f"  claude's CLI starts after    {median([r[3] for r in results]):.3f} s   (no copy; must not wait for kimi's)")
        print(f"  baseline: git worktree add   {median(baseline):.3f} s")
        print(f"  floor: cp -r of the files    {median(floor):.3f} s")
        print(f"  landlock: kimi starts after  {median(landlock):.3f} s   (no copy)")
        print(f"  landlock: set-up per reviewer {setup * 1000:.1f} ms   target <= 10 ms "
              f"(provider-exec {median(plain) * 1000:.1f} -> {median(confined) * 1000:.1f} ms); "
              f"{copy / setup if setup > 0 else float('inf'):.0f}x less than a copy")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
