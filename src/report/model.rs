//! Typed view of a final report (`data.json`), used only after the raw JSON
//! has passed its schema, for rendering.
//!
//! The task block keeps its type-specific fields as raw JSON values: the
//! renderers lay them out generically (text → paragraph, list of text →
//! bullets, list of objects → table), so a new task-type field needs a schema
//! change but no renderer change.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::vocab::{LandReason, LandingState, Word};

use super::reliability::Reliability;
use super::verification::Verification;

/// A whole report, schema v1 or v2 (the shapes are the same; header values
/// and the Markdown layout differ; 2.1 adds `reliability`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: String,
    pub header: Header,
    pub final_verdict: FinalVerdict,
    pub verdict_card: VerdictCard,
    pub human_summary: HumanSummary,
    pub task: Task,
    pub consensus: Vec<ConsensusRow>,
    pub differences: Vec<DifferenceRow>,
    pub primary_evidence: Vec<EvidenceRow>,
    pub worker_coverage: Vec<Coverage>,
    pub usage_summary: UsageSummary,
    pub recommended_next_steps: Vec<NextStep>,
    pub workflow: Workflow,
    /// Whether the findings were cross-verified (schema 2.1 and later).
    #[serde(default)]
    pub reliability: Option<Reliability>,
    /// Where an implementation run's change stands at the landing gate.
    #[serde(default)]
    pub landing: Option<Landing>,
    /// Who found and who verified each claim (schema 2.1, when convergence
    /// ran).
    #[serde(default)]
    pub verification: Option<Verification>,
}

/// `landing`, written by okstra for an implementation run.
#[derive(Debug, Deserialize)]
pub struct Landing {
    pub state: Word<LandingState>,
    pub branch: Option<String>,
    pub reasons: Vec<LandingReason>,
}

/// One reason the change may not land yet.
#[derive(Debug, Deserialize)]
pub struct LandingReason {
    pub reason: Word<LandReason>,
    pub detail: String,
}

impl Report {
    /// Schema v1 keeps the historical Markdown layout.
    pub fn is_v1(&self) -> bool {
        self.schema_version == "1.0"
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    pub title: String,
    pub task_key: String,
    pub task_type: String,
    pub run_id: String,
    pub report_language: Option<String>,
    pub report_owner: String,
    pub report_author: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalVerdict {
    pub verdict_token: String,
    pub direction: String,
    pub statement: String,
    pub confidence: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictCard {
    pub verdict_token: String,
    pub direction: String,
    pub headline: String,
    pub confidence: String,
    #[serde(default)]
    pub key_risks: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct HumanSummary {
    pub headline: String,
    pub paragraphs: Vec<String>,
}

/// The task block: common fields plus the task type's own, in key order.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(rename = "taskType")]
    pub kind: String,
    pub user_narrative: String,
    #[serde(flatten)]
    pub facts: BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsensusRow {
    pub id: String,
    pub finding: String,
    pub convergence: String,
    pub severity: Option<String>,
    pub source_items: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DifferenceRow {
    pub id: String,
    pub topic: String,
    pub positions: Vec<Position>,
    pub resolution: String,
    pub source_items: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    pub worker_id: String,
    pub stance: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceRow {
    pub id: String,
    pub claim: String,
    pub location: String,
    pub excerpt: Option<String>,
    pub source_items: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub worker_id: String,
    pub provider: String,
    pub role: String,
    pub terminal_status: String,
    pub items_reported: u64,
    pub failure: Option<Failure>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub reason: String,
    pub detail: String,
    pub log_tail: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    pub lead: TokenUsage,
    pub workers: Vec<WorkerUsage>,
    pub source: String,
    /// The whole run, the lead included (written by `okstra usage`).
    #[serde(default)]
    pub totals: Option<TokenUsage>,
    /// What okstra estimated before the run (report schema 2.1, optional).
    #[serde(default)]
    pub estimate: Option<crate::estimate::Estimate>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Some tokens have no price: `cost_usd` counts only the priced ones.
    #[serde(default)]
    pub cost_partial: Option<bool>,
    #[serde(default)]
    pub source: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerUsage {
    pub worker_id: String,
    pub provider: String,
    pub usage: TokenUsage,
}

/// One recommended next step; the first one decides the routing.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum NextStep {
    Phase { phase: String, reason: String },
    Action { action: String, reason: String },
    Done { reason: String },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    pub next_recommended_phase: Option<String>,
    pub convergence_rounds: Option<u64>,
}

/// `1234567` → `1,234,567`; missing counts show as `n/a`.
pub fn tokens(count: Option<u64>) -> String {
    let Some(count) = count else {
        return "n/a".to_owned();
    };
    let digits = count.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// What the cost column says for `usage`, in okstra's one wording
/// (`crate::usage::Cost`): its dollars, `unpriced` when it has tokens but
/// no price (never zero), `≥ $X + unpriced` when only part is priced;
/// `n/a` when nothing was read.
pub fn cost(usage: &TokenUsage) -> String {
    let read = usage.input_tokens.is_some() || usage.output_tokens.is_some();
    if usage.cost_usd.is_none() && (usage.source.as_deref() == Some("unavailable") || !read) {
        return "n/a".to_owned();
    }
    crate::usage::Cost::new(
        usage.cost_usd,
        usage.cost_partial == Some(true) || usage.cost_usd.is_none(),
    )
    .to_string()
}

/// `planSteps` → `Plan steps`: a field name as a heading.
pub fn label(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for (index, ch) in key.chars().enumerate() {
        if index == 0 {
            out.extend(ch.to_uppercase());
        } else if ch.is_uppercase() {
            out.push(' ');
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_are_grouped() {
        assert_eq!(tokens(Some(0)), "0");
        assert_eq!(tokens(Some(999)), "999");
        assert_eq!(tokens(Some(1000)), "1,000");
        assert_eq!(tokens(Some(1_234_567)), "1,234,567");
        assert_eq!(tokens(None), "n/a");
    }

    #[test]
    fn costs_say_unpriced_never_zero() {
        let usage = |cost_usd, cost_partial, tokens: Option<u64>| TokenUsage {
            input_tokens: tokens,
            cache_write_tokens: None,
            output_tokens: tokens,
            cache_read_tokens: None,
            cost_usd,
            cost_partial,
            source: None,
        };
        assert_eq!(cost(&usage(Some(1.234), None, Some(5))), "$1.23");
        assert_eq!(cost(&usage(Some(0.0042), None, Some(5))), "$0.0042");
        assert_eq!(cost(&usage(Some(0.0), None, Some(0))), "$0.00");
        assert_eq!(cost(&usage(None, None, Some(5))), "unpriced");
        assert_eq!(
            cost(&usage(Some(0.5), Some(true), Some(5))),
            "≥ $0.50 + unpriced"
        );
        assert_eq!(cost(&usage(None, None, None)), "n/a");
    }

    #[test]
    fn labels_split_camel_case() {
        assert_eq!(label("planSteps"), "Plan steps");
        assert_eq!(label("rootCause"), "Root cause");
        assert_eq!(label("scope"), "Scope");
    }
}
