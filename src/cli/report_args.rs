//! The flags of the commands that read, check and share a run's report:
//! `validate`, `gate`, `publish`, `report`.

use super::{Args, PathBuf, Subcommand, ValueHint, examples};

/// `okstra validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A run folder (data.json, roster and worker results are found through
    /// its run manifest) or a data.json file.
    #[arg(value_name = "RUN_DIR|DATA_JSON", value_hint = ValueHint::AnyPath)]
    pub target: PathBuf,

    /// Print one JSON object with every problem instead of one line each.
    #[arg(long)]
    pub json: bool,

    /// Check the JSON Schema only, skipping every invariant (for the
    /// benchmark that compares schema validation with other validators).
    #[arg(long, hide = true)]
    pub schema_only: bool,
}

/// `okstra gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// A run folder, a report folder or a data.json file.
    #[arg(value_name = "RUN_DIR|DATA_JSON", value_hint = ValueHint::AnyPath)]
    pub target: PathBuf,

    /// The lowest severity that fails the gate: critical, high, medium, low
    /// or info.
    #[arg(long, value_name = "SEVERITY", value_parser = crate::vocab::parse_threshold)]
    pub fail_on: crate::vocab::Severity,

    #[command(flatten)]
    pub rules: GateRules,

    /// Print the decision as one JSON object instead of one line per finding.
    #[arg(long)]
    pub json: bool,
}

/// Which findings a gate counts (shared by `gate` and `run --fail-on`).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Gate")]
pub struct GateRules {
    /// Convergence classes that count (comma-separated): full-consensus,
    /// partial-consensus, contested, worker-unique (anchored ones only).
    /// [default: full-consensus,partial-consensus,contested]
    #[arg(long, value_name = "CLASS,...", value_delimiter = ',', value_parser = crate::vocab::parse_class)]
    pub classes: Vec<crate::vocab::FinalClass>,

    /// Count only findings the change introduced: an anchor inside the
    /// changed hunks of a run scoped with --diff (unanchored ones count).
    #[arg(long)]
    pub new_only: bool,

    /// Count only findings whose fingerprint is not in this earlier SARIF
    /// log (from `okstra report --format sarif`).
    #[arg(long, value_name = "SARIF", value_hint = ValueHint::FilePath)]
    pub baseline: Option<PathBuf>,
}

/// `okstra publish`.
#[derive(Debug, Subcommand)]
pub enum PublishCommand {
    /// One review on a GitHub pull request: a summary and inline comments
    ///
    /// Posts one `COMMENT` review, pinned to the commit the run analysed, with
    /// one inline comment per finding anchored in the pull request's diff (at
    /// most 50; the rest, and findings outside the diff, in the summary). The
    /// token comes from GITHUB_TOKEN (or GH_TOKEN). Publishing the same run
    /// again finds its earlier review and posts nothing.
    #[command(verbatim_doc_comment, after_long_help = examples::PUBLISH_GITHUB)]
    Github(PublishGithubArgs),
}

/// `okstra publish github`.
#[derive(Debug, Args)]
pub struct PublishGithubArgs {
    /// The run folder whose report is published.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// The repository, `OWNER/NAME`.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,

    /// The pull request number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pr: u64,

    /// The REST API base the paths are appended to (GitHub Enterprise:
    /// `https://HOST/api/v3`). https only; plain http only for loopback.
    #[arg(long, value_name = "URL", default_value = "https://api.github.com")]
    pub api_url: String,

    /// Read the pull request, then print the exact review request body and
    /// post nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `okstra report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run folder or a data.json file.
    #[arg(value_name = "RUN_DIR|DATA_JSON", value_hint = ValueHint::AnyPath)]
    pub target: PathBuf,

    /// Where to write final-report.md and final-report.html. [default: beside
    /// data.json]
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath, conflicts_with = "out")]
    pub out_dir: Option<PathBuf>,

    /// What to write: `human` (final-report.md and final-report.html) or
    /// `sarif` (one SARIF 2.1.0 log for code scanning).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,

    /// With --format sarif: the file to write (`-` for stdout). [default:
    /// final-report.sarif beside data.json]
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, requires = "format")]
    pub out: Option<PathBuf>,

    /// Print the written paths as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What `okstra report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// The handoff Markdown and the human HTML.
    Human,
    /// A SARIF 2.1.0 log of the findings.
    Sarif,
}
