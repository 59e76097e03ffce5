#!/usr/bin/env bash
# The README's first command: okstra's main job end to end on a temporary
# copy of examples/tiny-service, with the fake provider CLIs of
# tests/fixtures/team standing in for the real ones (no account, no network).
#
# Nothing in the repository is written but cargo's target/: the copy, the
# run with its report, and okstra's per-user state for it (XDG_STATE_HOME,
# XDG_CACHE_HOME) live in one temporary folder, named at the end. Extra
# arguments go to `okstra run` (e.g. `--workers claude,codex,report-writer`).
# Exit status: okstra run's.
# docs/headless.md ("The demo, step by step") has the long form.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
example="$repo/examples/tiny-service"

say() { printf 'demo: %s\n' "$*" >&2; }

if ! command -v python3 >/dev/null 2>&1; then
  say "error: the fake provider CLIs (tests/fixtures/workers/team.py) need python3 on PATH"
  exit 2
fi

say "building okstra (cargo build: a first build takes several minutes on 2 cores; cargo shows its progress)"
# Both binaries: okstra starts the wrapper's own, okstra-provider-exec, beside it.
cargo build --locked --manifest-path "$repo/Cargo.toml" --bins

tmp=$(mktemp -d "${TMPDIR:-/tmp}/okstra-demo.XXXXXX")
project="$tmp/tiny-service"
mkdir -p "$project"
# The example as git has it: never a run an earlier demo or test left there.
if git -C "$example" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' file; do
    [ -f "$example/$file" ] || continue
    mkdir -p "$project/$(dirname "$file")"
    cp -p "$example/$file" "$project/$file"
  done < <(git -C "$example" ls-files -z --cached --others --exclude-standard)
else
  cp -R "$example/." "$project"
  rm -rf "$project/.okstra"
fi
cp "$repo/examples/brief.md" "$tmp/brief.md"

say "a copy of examples/tiny-service is in $project"
say "the workers are the fake CLIs of tests/fixtures/team: their answers are canned, written to take a run through every step (no model is asked)"

status=0
PATH="$repo/tests/fixtures/team:$PATH" \
  ANTHROPIC_API_KEY=fake OPENAI_API_KEY=fake GEMINI_API_KEY=fake KIMI_MODEL_API_KEY=fake \
  XDG_STATE_HOME="$tmp/state" XDG_CACHE_HOME="$tmp/cache" \
  cargo run --locked --quiet --manifest-path "$repo/Cargo.toml" --bin okstra -- \
  run --yes --task-type project-analysis --project-id example --task-group review \
  --task-id whole-run --task-brief "$tmp/brief.md" --project-root "$project" \
  --workers claude,codex,antigravity,kimi,report-writer "$@" || status=$?

say "everything the demo made is in $tmp (remove it with: rm -rf '$tmp')"
exit "$status"
