#!/usr/bin/env python3
"""Measure what convergence round 1 asks reviewers to do.

Four analysers (claude, codex, antigravity, kimi) answer a project-analysis
of examples/tiny-service with the fake team's full results (FAKE_FULL=1:
seven sections, about 25 items each, the same defects found by several
workers at overlapping lines, one false lead). Then `okstra converge plan
--round 1` computes the round. Printed per binary:

- items in the round, verdict requests (one per label a reviewer must
  answer) and the reverify prompt bytes (all reviewers' prompts together);
- whether any finding of the results' Findings sections was lost (not
  sent to any reviewer);
- the ratio against the first binary.

Not a test: it prints figures (the counts are deterministic; nothing is
timed). Target: verdict requests and prompt bytes at least 3x fewer than
main, with no finding lost.

Usage: python3 benches/review_volume.py [label=]path/to/okstra ...
  e.g. python3 benches/review_volume.py main=/tmp/okstra-main target/debug/okstra
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKERS = "claude,codex,antigravity,kimi,report-writer"


def findings_of(result_text):
    """The item ids of a result's Findings section (`## 5. Findings`)."""
    ids, inside = [], False
    for line in result_text.splitlines():
        if line.startswith("## "):
            inside = "findings" in line.lower()
            continue
        match = re.match(r"^\|\s*([A-Za-z0-9._-]+)\s*\|", line)
        if inside and match and match.group(1) != "ID" and set(match.group(1)) != {"-"}:
            ids.append(match.group(1))
    return ids


def measure(binary):
    root = tempfile.mkdtemp(prefix="okstra-bench-volume-")
    try:
        project = os.path.join(root, "project")
        shutil.copytree(os.path.join(REPO, "examples/tiny-service"), project)
        shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
        env = dict(os.environ, PATH=f"{REPO}/tests/fixtures/team:/usr/bin:/bin", FAKE_FULL="1")
        env.pop("FAKE_UNANCHORED", None)
        rendered = subprocess.run(
            [binary, "--render-only", "--headless", "--yes", "--json", "--task-type",
             "project-analysis", "--project-id", "bench", "--task-group", "volume", "--task-id",
             "four", "--task-brief", "brief.md", "--project-root", "project", "--workers", WORKERS],
            cwd=root, env=env, check=True, capture_output=True, text=True)
        run_dir = json.loads(rendered.stdout)["runDir"]
        subprocess.run([binary, "dispatch", run_dir], cwd=root, env=env, check=True,
                       capture_output=True)
        planned = subprocess.run([binary, "converge", "plan", run_dir, "--round", "1", "--json"],
                                 cwd=root, env=env, check=True, capture_output=True, text=True)
        plan = json.loads(planned.stdout)
        manifest = json.load(open(os.path.join(run_dir, "run-manifest.json")))
        findings = set()
        for assignment in manifest["assignments"]:
            if assignment["role"] != "analyser":
                continue
            with open(assignment["resultPath"]) as result:
                for ident in findings_of(result.read()):
                    findings.add(f"{assignment['workerId']}:{ident}")
        reviewed = {label["itemId"] for r in plan["reviewers"] for label in r["labels"]}
        sizes = [os.path.getsize(r["promptPath"]) for r in plan["reviewers"]]
        return {
            "items": len(plan["items"]),
            "requests": sum(len(r["labels"]) for r in plan["reviewers"]),
            "bytes": sum(sizes),
            "largest": max(sizes) if sizes else 0,
            "smallest": min(sizes) if sizes else 0,
            "findings": len(findings),
            "lost": sorted(findings - reviewed),
            "groups": len(plan.get("groups", [])),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    binaries = []
    for arg in sys.argv[1:] or ["target/debug/okstra"]:
        label, _, path = arg.rpartition("=")
        binaries.append((label or path, os.path.abspath(path)))
    results = [(label, measure(path)) for label, path in binaries]
    base = results[0][1]
    print(f"{'binary':<12} {'items':>5} {'requests':>8} {'prompt bytes':>12} "
          f"{'per reviewer':>17} {'findings':>8} {'lost':>4}  vs {results[0][0]}")
    for label, r in results:
        ratio = (f"requests {base['requests'] / max(r['requests'], 1):.2f}x fewer, "
                 f"bytes {base['bytes'] / max(r['bytes'], 1):.2f}x fewer")
        print(f"{label:<12} {r['items']:>5} {r['requests']:>8} {r['bytes']:>12} "
              f"{r['smallest']:>8}-{r['largest']:<8} {r['findings']:>8} {len(r['lost']):>4}  {ratio}")
        if r["lost"]:
            print(f"  lost: {', '.join(r['lost'])}")


if __name__ == "__main__":
    main()
