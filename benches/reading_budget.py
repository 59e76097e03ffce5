#!/usr/bin/env python3
"""Mandatory reading before a lead's first dispatch, in bytes, default roster.

Usage: benches/reading_budget.py <okstra binary> <brief.md>

Counts what the handoff says to read before dispatching: on a lazy runtime
(claude-code) the handoff plus the documents it lists under "Read now" (or,
for bundles older than that list, every document under "Read, in this
order"); on an eager runtime the handoff up to "Read when you reach it" (or
all of it). The same rule as `tests/it/contract.rs`, which holds every task
type and runtime to 30 000 bytes; this script also measures older binaries.
"""
import os, re, subprocess, sys, tempfile, pathlib
binary = sys.argv[1]
brief = sys.argv[2]
for task in ["project-analysis", "error-analysis", "implementation"]:
    for rt in ["claude-code", "codex", "antigravity", "external"]:
        with tempfile.TemporaryDirectory() as d:
            d = os.path.realpath(d)
            out = subprocess.run([binary, "--render-only", "--yes", "--task-type", task, "--project-id", "demo",
                "--task-group", "shop", "--task-id", "t1", "--project-root", d, "--task-brief", brief,
                "--lead-runtime", rt], capture_output=True, text=True, check=True).stdout.strip()
            h = pathlib.Path(out).read_text()
            if "\n# Read when you reach it" in h:
                n = len(h.split("\n# Read when you reach it")[0].encode())
            elif "\n## Read now\n" in h:
                sec = h.split("\n## Read now\n")[1].split("\n## ")[0]
                n = len(h.encode()) + sum(os.path.getsize(l.split("`")[1]) for l in sec.splitlines() if "`" in l)
            elif "\n## Read, in this order\n" in h and "delivers the bundle eagerly" not in h:
                sec = h.split("\n## Read, in this order\n")[1]
                n = len(h.encode()) + sum(os.path.getsize(l.split("`")[1]) for l in sec.splitlines() if l[:1].isdigit() and "`" in l)
            else:
                n = len(h.encode())
            print(f"{task:18} {rt:12} {n}")
