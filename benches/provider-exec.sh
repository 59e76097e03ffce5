#!/bin/sh
# Benchmark okstra's provider-exec wrapper side by side with the reference
# Python wrapper (okstra-provider-exec.py), both driving the same fake `grok`.
# Not a test: it prints figures (medians and ratios) and never asserts.
#
# Usage: benches/provider-exec.sh <reference-dir> [okstra-binary]
#   <reference-dir>  folder holding okstra-provider-exec.py (kept outside the repo)
#   [okstra-binary]  default: target/release/okstra (build with `cargo build --release`)
# The wrapper measured is the one `okstra dispatch` starts: the
# okstra-provider-exec binary beside okstra-binary when there is one, else
# `okstra-binary provider-exec` (an older okstra, or a lone copied binary).
# Env: RUNS (start-up samples, default 40), STREAM_MIB (default 1024),
#      STREAM_RUNS (default 3), SILENT_SECS (default 5).
#
# Measures, for each wrapper:
#   start-up    wall time around a fake CLI that exits at once, minus the CLI alone
#   stream      1 GiB through the wrapper: wall time, the wrapper's *own* CPU
#               (utime+stime of the wrapper process, read from /proc while it
#               is an unreaped zombie, so the producer's CPU is excluded; the
#               user-space part shown apart: the rest is the kernel's pipe and
#               page-cache work, which both wrappers pay), and its peak RSS
#               (VmHWM sampled while it runs); `tee` as a throughput baseline and
#               `cat > log` as the CPU floor (copying the pipe into a file)
#   silent      context switches per second of all wrapper threads while the
#               CLI prints nothing (a poll loop shows up here; a sleep does not)
set -eu

ref_dir="${1:?usage: benches/provider-exec.sh <reference-dir> [okstra-binary]}"
okstra="${2:-target/release/okstra}"
[ -f "$ref_dir/okstra-provider-exec.py" ] || { echo "bench: error: no okstra-provider-exec.py in \`$ref_dir\`" >&2; exit 2; }
[ -x "$okstra" ] || { echo "bench: error: \`$okstra\` is not executable; run \`cargo build --release\`" >&2; exit 2; }
# The same choice as provider_exec::Launcher.
own="$(dirname "$okstra")/okstra-provider-exec"
if [ -f "$own" ] && [ -x "$own" ]; then
    wrapper="$own"
    lead=""
else
    wrapper="$okstra"
    lead="provider-exec"
fi

work="$(mktemp -d /dev/shm/okstra-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/bin" "$work/project"
printf 'benchmark prompt\n' > "$work/prompt.md"
# One fake `grok` whose behaviour is picked by FAKE_MODE.
cat > "$work/bin/grok" <<'FAKE'
#!/bin/sh
case "${FAKE_MODE:-exit}" in
    exit) exit 0 ;;
    stream) exec head -c "$FAKE_BYTES" /dev/zero ;;
    silent) exec sleep "$FAKE_SLEEP" ;;
esac
FAKE
chmod +x "$work/bin/grok"

# The wrapper hands its CLI an allowlisted environment: the fake's switches
# pass by name, as `--pass-env` would pass them.
OKSTRA_PASS_ENV="FAKE_MODE,FAKE_BYTES,FAKE_SLEEP" \
WRAPPER="$wrapper" LEAD="$lead" REF="$ref_dir/okstra-provider-exec.py" WORK="$work" \
PATH="$work/bin:$PATH" exec python3 - <<'PY'
import os, statistics, subprocess, sys, time

work, wrapper, ref = os.environ["WORK"], os.environ["WRAPPER"], os.environ["REF"]
lead = [os.environ["LEAD"]] if os.environ["LEAD"] else []
runs = int(os.environ.get("RUNS", "40"))
stream_mib = int(os.environ.get("STREAM_MIB", "1024"))
stream_runs = int(os.environ.get("STREAM_RUNS", "3"))
silent_secs = float(os.environ.get("SILENT_SECS", "5"))
tick = os.sysconf("SC_CLK_TCK")
prompt = f"{work}/prompt.md"
tail = [f"{work}/project", "bench-model", prompt, "", "worker", "600"]
wrappers = {
    "okstra": [wrapper, *lead, "grok", *tail],
    "reference": [sys.executable, ref, "grok", *tail],
}

def spawn(argv, env, stdout):
    return subprocess.Popen(argv, env={**os.environ, **env}, stdout=stdout,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

def self_cpu_at_exit(proc, sample=None):
    """Wait for exit without reaping, read the zombie's own utime+stime."""
    hwm = 0
    while True:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        if info is not None:
            break
        if sample:
            hwm = max(hwm, sample(proc.pid))
        time.sleep(0.02)
    with open(f"/proc/{proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / tick
    user = int(fields[11]) / tick
    proc.wait()
    return cpu, hwm, user

def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def ctx_switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total

def median_wall(argv, env, n):
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)

print(f"# provider-exec benchmark  ({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, "
      f"{os.cpu_count()} CPUs, {os.uname().release})")
print(f"okstra's wrapper: {' '.join([wrapper, *lead])} ({os.path.getsize(wrapper) / 2**20:.1f} MiB binary)")

# 1. start-up
direct = median_wall([f"{work}/bin/grok"], {"FAKE_MODE": "exit"}, runs)
print(f"\n## start-up (median of {runs}; fake CLI alone {direct*1000:.2f} ms)")
startup = {}
for name, argv in wrappers.items():
    total = median_wall(argv, {"FAKE_MODE": "exit"}, runs)
    startup[name] = total - direct
    print(f"{name:10s} total {total*1000:7.2f} ms   overhead {startup[name]*1000:7.2f} ms")
print(f"ratio reference/okstra overhead: {startup['reference']/startup['okstra']:.1f}x")

# 2. streaming
nbytes = stream_mib * 1024 * 1024
gib = nbytes / 2**30
env = {"FAKE_MODE": "stream", "FAKE_BYTES": str(nbytes)}
print(f"\n## stream {stream_mib} MiB (median of {stream_runs}; stdout to /dev/null, log on tmpfs)")
def tee_run():
    start = time.perf_counter()
    subprocess.run(f"head -c {nbytes} /dev/zero | tee {work}/tee.log > /dev/null", shell=True, check=True)
    return time.perf_counter() - start, 0.0, 0, 0.0
def cat_run():
    """The floor: `cat` copying the same pipe into a log, its own CPU."""
    producer = subprocess.Popen(["head", "-c", str(nbytes), "/dev/zero"], stdout=subprocess.PIPE)
    with open(f"{work}/cat.log", "wb") as log:
        start = time.perf_counter()
        cat = subprocess.Popen(["cat"], stdin=producer.stdout, stdout=log)
    producer.stdout.close()
    cpu, _, user = self_cpu_at_exit(cat)
    producer.wait()
    return time.perf_counter() - start, cpu, 0, user
rows = {"tee": [tee_run() for _ in range(stream_runs)],
        "cat > log": [cat_run() for _ in range(stream_runs)]}
for name, argv in wrappers.items():
    rows[name] = []
    for _ in range(stream_runs):
        with open(os.devnull, "wb") as devnull:
            start = time.perf_counter()
            proc = spawn(argv, env, devnull)
            cpu, hwm, user = self_cpu_at_exit(proc, vm_hwm_kib)
            wall = time.perf_counter() - start
        size = os.path.getsize(f"{work}/prompt.log")
        assert size == nbytes, f"{name}: log has {size} bytes"
        rows[name].append((wall, cpu, hwm, user))
stats = {}
for name, samples in rows.items():
    wall = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    hwm = max(s[2] for s in samples)
    user = statistics.median(s[3] for s in samples)
    stats[name] = (wall, cpu, hwm)
    extra = "" if name == "tee" else f"   own CPU {cpu/gib:6.2f} s/GiB (user {user/gib:4.2f})"
    if name in wrappers:
        extra += f"   peak RSS {hwm/1024:6.1f} MiB"
    print(f"{name:10s} wall {wall:6.2f} s   {gib/wall:6.2f} GiB/s{extra}")
for name in wrappers:
    print(f"{name}: throughput {stats['tee'][0]/stats[name][0]:.2f}x of tee")
print(f"CPU ratio reference/okstra: {stats['reference'][1]/max(stats['okstra'][1], 1/tick):.1f}x"
      f"   (reference/cat, the floor of copying a pipe into a file: "
      f"{stats['reference'][1]/max(stats['cat > log'][1], 1/tick):.1f}x)")

# 3. silent child
print(f"\n## silent CLI: wrapper context switches over {silent_secs:.0f} s")
for name, argv in wrappers.items():
    proc = spawn(argv, {"FAKE_MODE": "silent", "FAKE_SLEEP": str(silent_secs + 3)}, subprocess.DEVNULL)
    time.sleep(1.0)
    before = ctx_switches(proc.pid)
    time.sleep(silent_secs)
    after = ctx_switches(proc.pid)
    proc.wait()
    print(f"{name:10s} {(after-before)/silent_secs:6.2f} wake-ups/s")
PY
