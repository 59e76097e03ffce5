#!/usr/bin/env python3
"""Measure what a whole headless run sends its workers, and what its report
writer is told to read.

Two runs per binary on a copy of examples/tiny-service, with the fake team
(tests/fixtures/team) writing whole results the way a real model does
(FAKE_FULL=1) and a first report that breaks one rule (FAKE_BAD_REPORT=1),
so the run has three analysers, two convergence rounds (a false lead keeps
one claim open), the report writer and one repair:

- map: `okstra run --task-type project-analysis` on examples/brief.md;
- defects: `okstra ask "<a question that asks for bugs>"`, which picks the
  profile itself.

Printed per binary and run:

- prompt bytes: every prompt the run wrote (analysers, reviewers of both
  rounds, the report writer, its repair), and the largest of each kind;
- the writer's reading: the bytes of the files its prompt tells it to read
  (its reading-confirmation list, or its "Read first" line), besides the
  prompt itself, as they are when the run ends;
- reviewed: the share of the items the analysers wrote that round 1 sends
  to review (claims), the rest being descriptions nobody checks.

Not a test: it prints figures (the fakes answer at once; nothing is timed,
every count is deterministic). Targets (issue 34): prompt bytes <= 60 KB,
the writer's reading <= 40 KB, reviewed >= 70 % on the defect question.

Usage: python3 benches/prompt_bytes.py [label=]path/to/okstra[@repo] ...
  `@repo` takes the fake team from another checkout (its
  tests/fixtures/team), for a binary whose prompts the current fakes do not
  read, e.g. before=/tmp/okstra-main@/tmp/main-checkout target/debug/okstra
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKERS = "claude,codex,antigravity,report-writer"
FAKE_KEYS = {"ANTHROPIC_API_KEY": "fake", "OPENAI_API_KEY": "fake", "GEMINI_API_KEY": "fake",
             "KIMI_MODEL_API_KEY": "fake", "XAI_API_KEY": "fake"}
DEFECT_QUESTION = ("Find correctness bugs in src/inventory.py and src/server.py: inputs for which "
                   "reserve or release leaves the stock counts wrong")


def git(project, *args):
    subprocess.run(["git", "-C", project, *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@b",
                            GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@b"))


def kind_of(name):
    if "-reverify-r" in name:
        return "reviewer"
    if name.startswith("report-writer.repair"):
        return "repair"
    if name.startswith("report-writer"):
        return "writer"
    return "analyser"


def writer_reading(run_dir, prompt):
    """The files the writer's prompt tells it to read, besides itself."""
    paths = []
    block = re.search(r"## 0\. Reading confirmation\n\n(.*?)```", prompt, re.S)
    if block:
        for line in block.group(1).splitlines():
            match = re.match(r"- \[ \] [^:]+: (/\S+)$", line)
            if match and not line.startswith("- [ ] this prompt"):
                paths.append(match.group(1))
    read_first = re.search(r"^- \*\*Read first\*\*: (.*)$", prompt, re.M)
    if read_first:
        paths += [os.path.join(run_dir, span) for span in re.findall(r"`([^`]+)`", read_first.group(1))]
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p)), len(paths)


def measure(binary, team, scenario):
    root = tempfile.mkdtemp(prefix="okstra-bench-prompts-")
    try:
        project = os.path.join(root, "project")
        shutil.copytree(os.path.join(REPO, "examples/tiny-service"), project)
        shutil.copy(os.path.join(REPO, "examples/brief.md"), os.path.join(root, "brief.md"))
        git(project, "init", "-q")
        git(project, "add", "-A")
        git(project, "commit", "-qm", "tiny-service")
        env = dict(os.environ, PATH=f"{team}:/usr/bin:/bin", FAKE_FULL="1", FAKE_BAD_REPORT="1",
                   OKSTRA_PASS_ENV="FAKE_*", **FAKE_KEYS)
        if scenario == "map":
            argv = [binary, "run", "--yes", "--json", "--task-type", "project-analysis",
                    "--project-id", "bench", "--task-group", "prompts", "--task-id", "map",
                    "--task-brief", "brief.md", "--project-root", "project", "--workers", WORKERS]
        else:
            argv = [binary, "ask", "--yes", "--json", "--project-root", "project",
                    "--workers", WORKERS, DEFECT_QUESTION]
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{binary} {scenario}: exit {done.returncode}\n{done.stderr}")
        run_dir = json.loads(done.stdout)["runDir"]
        sizes = {}
        for name in sorted(os.listdir(os.path.join(run_dir, "prompts"))):
            if name.endswith(".md") and ".task." not in name:
                sizes[name] = os.path.getsize(os.path.join(run_dir, "prompts", name))
        kinds = {}
        for name, size in sizes.items():
            kinds.setdefault(kind_of(name), []).append(size)
        writer = open(os.path.join(run_dir, "prompts", "report-writer.md")).read()
        reading, files = writer_reading(run_dir, writer)
        plan = json.load(open(os.path.join(run_dir, "state", "round-plan-r1.json")))
        rounds = len([n for n in os.listdir(os.path.join(run_dir, "state")) if n.startswith("round-plan-r")])
        claims, described = len(plan["items"]), plan.get("descriptive", 0)
        return {
            "profile": json.load(open(os.path.join(run_dir, "run-manifest.json"))).get("focus", "map"),
            "prompts": len(sizes),
            "bytes": sum(sizes.values()),
            "kinds": {kind: (len(v), sum(v), max(v)) for kind, v in sorted(kinds.items())},
            "reading": reading,
            "reading_files": files,
            "reviewed": claims / max(claims + described, 1),
            "claims": claims,
            "written": claims + described,
            "rounds": rounds,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    binaries = []
    for arg in sys.argv[1:] or ["target/debug/okstra"]:
        label, _, rest = arg.rpartition("=")
        path, _, repo = rest.partition("@")
        team = os.path.join(os.path.abspath(repo) if repo else REPO, "tests/fixtures/team")
        binaries.append((label or path, os.path.abspath(path), team))
    print(f"{'binary':<10} {'run':<8} {'profile':<8} {'prompts':>7} {'bytes':>7}  "
          f"{'writer reads':>12}  {'reviewed':>14}  rounds  by kind (count, bytes, largest)")
    for label, path, team in binaries:
        for scenario in ("map", "defects"):
            r = measure(path, team, scenario)
            kinds = "; ".join(f"{k} {n}×, {b}, {m}" for k, (n, b, m) in r["kinds"].items())
            print(f"{label:<10} {scenario:<8} {r['profile']:<8} {r['prompts']:>7} {r['bytes']:>7}  "
                  f"{r['reading']:>7} ({r['reading_files']:>2})  "
                  f"{r['claims']:>3}/{r['written']:<3} {r['reviewed'] * 100:>4.0f} %  {r['rounds']:>6}  {kinds}")


if __name__ == "__main__":
    main()
