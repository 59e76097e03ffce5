#!/usr/bin/env python3
"""A host-led run, driven the way a lead model follows the bundle: what the
lead reads before its first action, the okstra commands it types for the
whole run, its `okstra event` lines, and the bytes of results it relays.

Usage: python3 benches/host_lead.py <okstra binary>

The workers are the fake team (`tests/fixtures/team/`): wrapper workers run
through okstra as usual; each native task okstra hands out is played by the
fake team on its task file, as the host's sub-agent, and its final message
comes back by the sub-agent-stop hook (what the host runs, not the lead) or,
on the submit path, by the lead typing the task's `submit` line with the
message. The lead types only `okstra next` (and its `wait` line) and, on the
submit path, the `submit` lines. Rosters: the default one, and the one issue
22 measured (claude, codex, grok, kimi, report writer, critic codex), both
led from claude-code. Targets: reading <= 12 KB, <= 15 commands of which
`okstra event` <= 2, 0 bytes relayed on the hook path.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
BINARY = os.path.realpath(sys.argv[1])
ROSTERS = {
    "default": ["--workers", "claude,codex,report-writer"],
    "issue-22": ["--workers", "claude,codex,grok,kimi,report-writer", "--critic", "codex"],
}


def reading(handoff):
    """The handoff plus every file its `Read now` list names (lazy delivery)."""
    text = handoff.read_text()
    now = text.split("\n## Read now\n")[1].split("\n## ")[0]
    files = [line.split("`")[1] for line in now.splitlines() if "`" in line]
    return len(text.encode()) + sum(os.path.getsize(f) for f in files)


def lead(root, env, roster, via):
    out = subprocess.run(
        [BINARY, "--render-only", "--yes", "--json", "--task-type", "project-analysis",
         "--project-id", "demo", "--task-group", "bench", "--task-id", f"{via}-{roster}",
         "--task-brief", "brief.md", "--lead-runtime", "claude-code", *ROSTERS[roster]],
        cwd=root, env=env, capture_output=True, text=True, check=True).stdout
    paths = json.loads(out)
    run = paths["runDir"]
    typed, events, relayed = [], 0, 0
    started = set()
    for _ in range(200):
        typed.append("okstra next")
        answer = json.loads(subprocess.run([BINARY, "next", run, "--json"], cwd=root, env=env,
                                           capture_output=True, text=True).stdout)
        state = answer["state"]
        if state in ("done", "failed"):
            return reading(pathlib.Path(paths["handoffPrompt"])), typed, events, relayed, answer
        if state == "waiting":
            typed.append("okstra next --wait")
            subprocess.run(answer["wait"], shell=True, cwd=root, env=env, capture_output=True)
            continue
        for task in answer["tasks"]:
            key = (task["dispatchName"], task.get("attempt"))
            if key in started:
                continue
            started.add(key)
            # The host's sub-agent: the fake team on the task file.
            message = subprocess.run(["claude"], stdin=open(task["promptPath"]), cwd=root,
                                     env=dict(env, FAKE_PLAIN="1"), capture_output=True,
                                     text=True).stdout
            if via == "hook":
                hook = json.dumps({"hook_event_name": "SubagentStop", "agent_id": "a1",
                                   "session_id": "s1", "last_assistant_message": message})
                subprocess.run([BINARY, "hook", "subagent-stop"], input=hook, cwd=root, env=env,
                               capture_output=True, text=True)
            else:
                typed.append(task["submit"])
                relayed += len(message.encode())
                subprocess.run(task["submit"], shell=True, input=message, cwd=root, env=env,
                               capture_output=True, text=True)
    raise SystemExit("the run did not end")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(os.path.realpath(tmp)) / "project"
        shutil.copytree(REPO / "examples/tiny-service", root)
        shutil.copy(REPO / "examples/brief.md", root / "brief.md")
        env = dict(os.environ, PATH=f"{REPO / 'tests/fixtures/team'}:{os.environ['PATH']}",
                   HOME=str(root.parent))
        env.pop("CLAUDECODE", None)
        print(f"{'roster':10} {'path':7} {'reading':>8} {'commands':>9} {'events':>7} {'relayed':>8}  state")
        for roster in ROSTERS:
            for via in ("hook", "submit"):
                read, typed, events, relayed, answer = lead(root, env, roster, via)
                print(f"{roster:10} {via:7} {read:>8} {len(typed):>9} {events:>7} {relayed:>8}  "
                      f"{answer['state']} ({answer.get('report', {}).get('verdict', answer.get('reason'))})")


if __name__ == "__main__":
    main()
