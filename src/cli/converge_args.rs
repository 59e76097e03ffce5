//! The flags of the convergence plumbing: `coverage`, `items`, `converge`.

use super::{Args, PathBuf, Subcommand, ValueHint};

/// `okstra coverage`.
#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Print the report inputs as JSON instead of one line per worker.
    #[arg(long)]
    pub json: bool,
}

/// `okstra items`.
#[derive(Debug, Args)]
pub struct ItemsArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Print one JSON object instead of one line per item.
    #[arg(long)]
    pub json: bool,
}

/// `okstra converge` (its help text is on the `Command` variant).
#[derive(Debug, Args)]
pub struct ConvergeArgs {
    #[command(subcommand)]
    pub command: ConvergeCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConvergeCommand {
    /// Compute round N: who reviews which items. Writes
    /// `state/round-plan-r<N>.json` and each reviewer's reverify prompt, and
    /// prints the prompts' paths.
    Plan(ConvergePlanArgs),
    /// Read round N's verdict tables into `state/convergence-ledger.json`;
    /// print the items still open.
    Record(ConvergeRoundArgs),
    /// Recompute every item's final class and the stop reason from the
    /// ledger, and write it back.
    Classify(ConvergeClassifyArgs),
}

/// `okstra converge plan`.
#[derive(Debug, Args)]
pub struct ConvergePlanArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// The round to plan (1 first; N ≥ 2 after round N-1 is recorded).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub round: u32,

    /// Show reviewers each item's owner and id (default: neutral labels in
    /// a shuffled order).
    #[arg(long)]
    pub no_blind: bool,

    /// Seed of the per-reviewer shuffle (default: one derived from the run
    /// id and the round, so a round planned again is the same; it is
    /// recorded in the plan either way).
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,

    /// Print the plan as JSON instead of the prompt paths.
    #[arg(long)]
    pub json: bool,
}

/// `okstra converge record`.
#[derive(Debug, Args)]
pub struct ConvergeRoundArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// The round whose verdicts to record.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub round: u32,

    /// Print the outcome as JSON instead of the open item ids.
    #[arg(long)]
    pub json: bool,
}

/// `okstra converge classify`.
#[derive(Debug, Args)]
pub struct ConvergeClassifyArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR", value_hint = ValueHint::DirPath)]
    pub run_dir: PathBuf,

    /// Print the outcome as JSON instead of one line per item.
    #[arg(long)]
    pub json: bool,
}
