//! The examples `--help` shows under each command (clap's `after_long_help`,
//! and the top level's `-h`), and the man pages' EXAMPLES.
//!
//! Kept as written: clap prints after-help text line for line, so an example
//! is never re-wrapped into one that cannot be pasted — as long as each line
//! fits 80 columns (a longer command continues with ` \`). Every `okstra …`
//! line pastes from the repository root: it parses (checked through the
//! hidden `okstra __check-args`) and the repository paths it names exist
//! (`tests/it/help.rs`). `<run-dir>` stands for a run folder of yours;
//! `examples/report` is a finished one in this repository.

/// `okstra -h`: how to start a run.
pub const START: &str = "\
Start a run:
  okstra ask \"Why are reservations oversold?\"
  okstra ask --render-only --project-root examples/tiny-service \\
    --task-brief examples/brief.md

`okstra --help` says more; `okstra man [COMMAND]` prints the manual.";

/// `okstra --help`.
pub const TOP: &str = "\
Examples:
  okstra ask \"Why are reservations oversold?\"
  okstra --render-only --yes --task-type project-analysis \\
    --project-id demo --task-group review --task-id first-look \\
    --task-brief examples/brief.md --project-root examples/tiny-service
  okstra --task-type error-analysis --project-id shop --task-group bugs \\
    --task-id checkout-500 --task-brief examples/brief.md";

pub const ASK: &str = "\
Examples:
  okstra ask \"Why are reservations oversold?\"
  okstra ask --project-root examples/tiny-service --task-brief examples/brief.md
  echo \"Where is stock reserved?\" | okstra ask - --yes --json
  okstra ask --render-only \"What does the inventory module do?\"
  okstra ask --lead --task-type implementation-planning \\
    \"Plan moving reservations to a database\"";

pub const RUN: &str = "\
Examples:
  okstra run <run-dir>
  okstra run --task-type project-analysis --project-id demo \\
    --task-group review --task-id first-look --task-brief examples/brief.md \\
    --project-root examples/tiny-service --yes
  okstra run --project-root examples/tiny-service \\
    --task-brief examples/brief.md --task-key demo/review/gate --yes \\
    --fail-on high";

pub const LAND: &str = "\
Examples:
  okstra land <run-dir> --check
  okstra land <run-dir>
  okstra land <run-dir> --json";

pub const CLEANUP: &str = "\
Examples:
  okstra cleanup
  okstra cleanup --project-root examples/tiny-service --older-than 30d
  okstra cleanup --older-than 0s --execute";

pub const STATUS: &str = "\
Examples:
  okstra status examples/report
  okstra status --project-root examples/tiny-service --active
  okstra status --all
  okstra status <run-dir> --watch --interval 2s --timeout 30m";

pub const CANCEL: &str = "\
Examples:
  okstra cancel <run-dir>
  okstra cancel <run-dir> --workers kimi";

pub const REPORT: &str = "\
Examples:
  okstra report examples/report --out-dir /tmp/okstra-report
  okstra report examples/report --format sarif --out -";

pub const USAGE: &str = "\
Examples:
  okstra usage examples/report
  okstra usage examples/report --json
  okstra usage --since 7d
  okstra usage --since 2026-11-01 --project-root examples/tiny-service";

pub const DOCTOR: &str = "\
Examples:
  okstra doctor
  okstra doctor --probe --provider grok";

pub const INSTALL: &str = "\
Examples:
  okstra install --claude-code
  okstra install --bin-dir ~/.local/bin --codex --dry-run
  okstra install --uninstall";

pub const COMPLETIONS: &str = "\
Examples:
  okstra completions bash > ~/.local/share/bash-completion/completions/okstra
  okstra completions fish > ~/.config/fish/completions/okstra.fish";

pub const MAN: &str = "\
Examples:
  okstra man > ~/.local/share/man/man1/okstra.1
  okstra man run | man -l -
  okstra man converge plan";

pub const SCHEMA: &str = "\
Examples:
  okstra schema
  okstra schema gate-answer > gate-answer.schema.json";

pub const VALIDATE: &str = "\
Examples:
  okstra validate examples/report
  okstra validate --json examples/report/report/data.json";

pub const GATE: &str = "\
Examples:
  okstra gate examples/report --fail-on high
  okstra gate examples/report --fail-on medium \\
    --classes full-consensus,partial-consensus
  okstra gate <run-dir> --fail-on high --new-only";

pub const PUBLISH_GITHUB: &str = "\
Examples:
  okstra publish github <run-dir> --repo acme/shop --pr 42
  okstra publish github <run-dir> --repo acme/shop --pr 42 --dry-run
  okstra publish github <run-dir> --repo acme/shop --pr 42 \\
    --api-url https://ghe.acme.dev/api/v3";

pub const EVENT: &str = "\
Examples:
  okstra event <run-dir> session --field sessionId=5f0c2a
  okstra event <run-dir> lead-usage --field inputTokens=1200 \\
    --field outputTokens=300";

pub const DISPATCH: &str = "\
Examples:
  okstra dispatch <run-dir>
  okstra dispatch <run-dir> --kind reverify-r1 --detach
  okstra dispatch <run-dir> --workers report-writer --json";

pub const AWAIT: &str = "\
Examples:
  okstra await <run-dir>
  okstra await <run-dir> --kind reverify-r1 --timeout 30m --json";

pub const NEXT: &str = "\
Examples:
  okstra next <run-dir> --json
  okstra next <run-dir> --wait --timeout 5m --json";

pub const SUBMIT: &str = "\
Examples:
  okstra submit <run-dir> claude-worker - --agent-id a1b2c3
  okstra submit <run-dir> approval answer.txt";

pub const ITEMS: &str = "\
Examples:
  okstra items examples/report
  okstra items examples/report --json";

pub const CONVERGE: &str = "\
Examples:
  okstra converge plan <run-dir> --round 1
  okstra converge record <run-dir> --round 1
  okstra converge classify <run-dir> --json";
