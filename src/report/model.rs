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

use super::reliability::Reliability;

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
}

/// `landing`, written by okstra for an implementation run.
#[derive(Debug, Deserialize)]
pub struct Landing {
    pub state: String,
    pub branch: Option<String>,
    pub reasons: Vec<LandingReason>,
}

/// One reason the change may not land yet.
#[derive(Debug, Deserialize)]
pub struct LandingReason {
    pub reason: String,
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
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(
    clippy::struct_field_names,
    reason = "the names are the data.json wire format"
)]
pub struct TokenUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
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
    fn labels_split_camel_case() {
        assert_eq!(label("planSteps"), "Plan steps");
        assert_eq!(label("rootCause"), "Root cause");
        assert_eq!(label("scope"), "Scope");
    }
}
