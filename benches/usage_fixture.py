#!/usr/bin/env python3
"""Build the `okstra usage` benchmark fixture inside a rendered run.

usage: usage_fixture.py <run-dir> <home> <transcript-MB>

Writes ten dispatch records (six workers, four retries) with a log each
(about 1 MB of realistic stream lines per log, the usage line last), and a
Claude Code lead transcript of the given size under
<home>/claude/projects/<slug>/<session>.jsonl: assistant messages repeated
once per content block (as Claude Code writes them), large tool results,
sidechain replays. Records the lead session with a lead event line.
"""
import json
import os
import random
import sys

SESSION = "11111111-2222-4333-8444-555555555555"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "usage")
LOGS = {
    "claude": "claude-stream.jsonl",
    "codex": "codex.jsonl",
    "antigravity": "gemini.jsonl",
    "grok": "grok-build.jsonl",
    "kimi": "kimi.jsonl",
}


def filler(provider, n):
    """Stream lines without usage, shaped like each CLI's chatter."""
    text = "x" * 900
    if provider == "codex":
        return json.dumps({"type": "item.completed", "item": {"id": "item_%d" % n, "type": "agent_message", "text": text}})
    if provider == "claude":
        return json.dumps({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t%d" % n, "content": text}]}})
    if provider == "grok":
        return json.dumps({"type": "text", "data": text})
    if provider == "kimi":
        return json.dumps({"role": "assistant", "content": text})
    return json.dumps({"type": "message", "role": "assistant", "content": text, "delta": True})


def main():
    run_dir, home, megabytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
    manifest = json.load(open(os.path.join(run_dir, "run-manifest.json")))
    state_path = manifest["teamStatePath"]
    state = json.load(open(state_path))
    dispatches = []
    assignments = manifest["assignments"]
    plan = [(a, 1) for a in assignments] + [(a, 2) for a in assignments[:4]]
    for assignment, attempt in plan:
        name = assignment["dispatchName"]
        suffix = "" if attempt == 1 else ".attempt-%d" % attempt
        log = os.path.join(run_dir, "prompts", name + suffix + ".log")
        provider = assignment["provider"]
        lines = open(os.path.join(FIXTURES, LOGS[provider])).read().splitlines()
        with open(log, "w") as out:
            out.write(lines[0] + "\n")
            for n in range(1000):
                out.write(filler(provider, n) + "\n")
            for line in lines[1:]:
                out.write(line + "\n")
        dispatches.append({
            "dispatchName": name, "dispatchKind": "initial" if attempt == 1 else "retry",
            "attempt": attempt, "workerId": assignment["workerId"], "role": assignment["role"],
            "provider": provider, "model": assignment["modelExecutionValue"],
            "runner": assignment["runner"], "promptPath": assignment["promptPath"],
            "resultPath": assignment["resultPath"], "workerResultsPath": assignment["workerResultsPath"],
            "errorPath": assignment["errorPath"], "logPath": log, "usage": None,
        })
    state["dispatches"] = dispatches
    json.dump(state, open(state_path, "w"), indent=2)

    slug = "".join(c if c.isalnum() and c.isascii() else "-" for c in manifest["projectRoot"])
    folder = os.path.join(home, "claude", "projects", slug)
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(7)
    target = megabytes * 1024 * 1024
    written = 0
    message = 0
    with open(os.path.join(folder, SESSION + ".jsonl"), "w") as out:
        while written < target:
            message += 1
            usage = {"input_tokens": rng.randint(1, 50), "cache_creation_input_tokens": rng.randint(0, 3000),
                     "cache_read_input_tokens": rng.randint(10000, 90000), "output_tokens": 1,
                     "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}}
            usage["cache_creation"]["ephemeral_1h_input_tokens"] = usage["cache_creation_input_tokens"]
            base = {"type": "assistant", "timestamp": "2026-11-30T10:00:00.000Z", "sessionId": SESSION,
                    "requestId": "req_%d" % message, "isSidechain": False, "version": "2.1.197",
                    "cwd": manifest["projectRoot"], "uuid": "u%d" % message}
            model = "claude-opus-4-8" if message % 5 else "claude-haiku-4-5-20251001"
            blocks = rng.randint(1, 4)
            for block in range(blocks):
                usage = dict(usage, output_tokens=1 if block < blocks - 1 else rng.randint(50, 3000))
                line = dict(base, message={"id": "msg_%d" % message, "model": model, "role": "assistant",
                                           "content": [{"type": "text", "text": "y" * rng.randint(200, 2000)}],
                                           "usage": usage})
                text = json.dumps(line) + "\n"
                out.write(text)
                written += len(text)
            tool = {"type": "user", "sessionId": SESSION, "isSidechain": False,
                    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                              "content": "z" * rng.randint(500, 20000)}]}}
            text = json.dumps(tool) + "\n"
            out.write(text)
            written += len(text)
            if message % 50 == 0:
                replay = dict(base, isSidechain=True, requestId="req_side_%d" % message,
                              message={"id": "msg_%d" % (message - 1), "model": model, "usage": usage})
                text = json.dumps(replay) + "\n"
                out.write(text)
                written += len(text)
    event = {"schemaVersion": 1, "seq": 1, "ts": "2026-11-30T10:00:00Z", "kind": "session",
             "runId": manifest["runId"], "fields": {"sessionId": SESSION}}
    with open(manifest["leadEventsPath"], "a") as out:
        out.write(json.dumps(event) + "\n")
    print("%d messages, %.0f MB transcript" % (message, written / 1048576))


if __name__ == "__main__":
    main()
