//! What the report templates print: a serialisable view of a [`Report`].
//!
//! Everything decided from the data is decided here: which confidence the
//! verdict shows, the CSS classes (closed-set values only), token counts as
//! text, the notes and failures pulled out of the coverage rows, and how each
//! task-type field is laid out (text, bullets, `label: value` pairs or a table
//! with `id` first). The templates in `templates/report/` only lay it out;
//! the strings stay raw, and the Markdown filters or the HTML escape make
//! them safe to print (see `render.rs`).

use serde::Serialize;
use serde_json::Value;

use super::checks::{Checks, RowCheck};
use super::html::class;
use super::model::{
    Coverage, DifferenceRow, EvidenceRow, NextStep, Report, TokenUsage, cost, label, tokens,
};
use crate::vocab::{LandingState, ReliabilityReason, Word};

/// The whole report as the templates see it (`report` in their context).
#[derive(Debug, Serialize)]
pub struct View<'a> {
    pub schema_version: &'a str,
    pub header: Header<'a>,
    /// Whether the findings were cross-verified; `None` before schema 2.1.
    pub verification: Option<Verification<'a>>,
    /// An implementation run's landing gate; `None` for other runs.
    pub landing: Option<Landing<'a>>,
    pub verdict: Verdict<'a>,
    pub card: Card<'a>,
    pub summary: Summary<'a>,
    pub task: Task<'a>,
    pub next: Next<'a>,
    pub consensus: Vec<Consensus<'a>>,
    pub differences: Vec<Difference<'a>>,
    pub evidence: Vec<Evidence<'a>>,
    /// Whether okstra checked the evidence rows against the run's snapshot
    /// (`verification.evidence`): the tables then say what it found.
    pub evidence_checked: bool,
    pub coverage: Workers<'a>,
    pub usage: Usage<'a>,
    /// Who found and who verified each cited claim, when the report has a
    /// `verification` block.
    pub checks: Option<Checks<'a>>,
}

/// Who and what the report is about.
#[derive(Debug, Serialize)]
pub struct Header<'a> {
    pub title: &'a str,
    pub task_key: &'a str,
    pub task_type: &'a str,
    pub run_id: &'a str,
    pub report_owner: &'a str,
    pub report_author: &'a str,
    pub report_language: Option<&'a str>,
    /// The HTML `lang` attribute: the report language when it is a plain
    /// language tag, else `en`.
    pub lang: &'a str,
}

/// Whether the findings were cross-verified. Both layouts say so before
/// the verdict, in the words every output uses (`Reliability::headline`
/// and `explanation`); when they were not, an empty table says that no
/// finding was cross-verified rather than that there are none.
#[derive(Debug, Serialize)]
pub struct Verification<'a> {
    pub cross_verified: bool,
    /// `Cross-verified`, or `Not cross-verified (quorum-lost)`.
    pub headline: String,
    /// What was and was not checked, after the headline.
    pub explanation: String,
    /// The stable word for why not (`quorum-lost`, …).
    pub reason: Option<&'static str>,
    pub detail: &'a str,
    pub reviewers_completed: u32,
    pub reviewers_rostered: u32,
    pub rounds_run: u32,
}

/// Where an implementation run's change stands at the landing gate.
#[derive(Debug, Serialize)]
pub struct Landing<'a> {
    pub state: &'a Word<LandingState>,
    pub branch: Option<&'a str>,
    /// `<reason>: <detail>` each.
    pub reasons: Vec<String>,
}

/// The final verdict, as both layouts state it.
#[derive(Debug, Serialize)]
pub struct Verdict<'a> {
    pub token: &'a str,
    pub direction: &'a str,
    pub direction_class: &'a str,
    /// The final verdict's confidence, else the card's.
    pub confidence: &'a str,
    /// The final verdict's own confidence, when it states one.
    pub stated_confidence: Option<&'a str>,
    pub statement: &'a str,
}

/// The verdict card (v1 prints it as a table; v2 and the HTML take its
/// headline and risks).
#[derive(Debug, Serialize)]
pub struct Card<'a> {
    pub token: &'a str,
    pub direction: &'a str,
    pub headline: &'a str,
    pub confidence: &'a str,
    pub key_risks: &'a [String],
}

/// The summary for the user.
#[derive(Debug, Serialize)]
pub struct Summary<'a> {
    pub headline: &'a str,
    pub paragraphs: &'a [String],
}

/// The task block: narrative, then the task type's fields.
#[derive(Debug, Serialize)]
pub struct Task<'a> {
    pub kind: &'a str,
    pub narrative: &'a str,
    /// The task type's own fields, in key order.
    pub facts: Vec<Fact>,
}

/// One task-type field: its heading and how its value is laid out.
#[derive(Debug, Serialize)]
pub struct Fact {
    pub label: String,
    pub body: FactBody,
}

/// A field's value, laid out by its shape.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FactBody {
    /// An empty list.
    Empty,
    /// A list of objects: one column per key (`id` first), one row each.
    Table {
        headers: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A list of anything else: one bullet each.
    List { items: Vec<String> },
    /// An object: one `label: value` bullet per key.
    Fields { fields: Vec<Field> },
    /// A string, number, boolean or null.
    Text { text: String },
}

/// One `label: value` pair of an object field.
#[derive(Debug, Serialize)]
pub struct Field {
    pub label: String,
    pub text: String,
}

/// Routing and the recommended next steps.
#[derive(Debug, Serialize)]
pub struct Next<'a> {
    pub phase: Option<&'a str>,
    pub rounds: Option<u64>,
    pub steps: Vec<Step<'a>>,
}

/// One recommended next step.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step<'a> {
    Phase { phase: &'a str, reason: &'a str },
    Action { action: &'a str, reason: &'a str },
    Done { reason: &'a str },
}

/// One row where the workers agree.
#[derive(Debug, Serialize)]
pub struct Consensus<'a> {
    pub id: &'a str,
    pub convergence: &'a str,
    pub convergence_class: &'a str,
    pub severity: Option<&'a str>,
    pub finding: &'a str,
    pub sources: &'a [String],
    /// Who found it and who verified it, from the `verification` block.
    pub check: Option<RowCheck<'a>>,
}

/// One row where the workers differ.
#[derive(Debug, Serialize)]
pub struct Difference<'a> {
    pub id: &'a str,
    pub topic: &'a str,
    pub positions: Vec<Position<'a>>,
    pub resolution: &'a str,
    pub sources: &'a [String],
    /// Who found it and who said what, from the `verification` block.
    pub check: Option<RowCheck<'a>>,
}

/// One worker's stance on a difference.
#[derive(Debug, Serialize)]
pub struct Position<'a> {
    pub worker_id: &'a str,
    pub stance: &'a str,
}

/// One row of primary evidence.
#[derive(Debug, Serialize)]
pub struct Evidence<'a> {
    pub id: &'a str,
    pub claim: &'a str,
    pub location: &'a str,
    pub excerpt: Option<&'a str>,
    pub sources: &'a [String],
    /// What okstra found at the location (`verified`, `moved`,
    /// `unanchored`, `none`), when it checked the row.
    pub checked: Option<&'static str>,
    /// Where a moved excerpt was found, or why the location did not resolve.
    pub check_detail: Option<String>,
}

/// Worker coverage: the table, then every note, then every failure.
#[derive(Debug, Serialize)]
pub struct Workers<'a> {
    pub rows: Vec<WorkerRow<'a>>,
    pub notes: Vec<Note<'a>>,
    pub failures: Vec<Failure<'a>>,
}

/// One worker's line in the coverage table.
#[derive(Debug, Serialize)]
pub struct WorkerRow<'a> {
    pub worker_id: &'a str,
    pub provider: &'a str,
    pub role: &'a str,
    pub status: &'a str,
    pub status_class: &'a str,
    pub items: u64,
    /// Why the worker produced nothing, when it did not.
    pub reason: Option<&'a str>,
}

/// A coverage note, with the worker it is about.
#[derive(Debug, Serialize)]
pub struct Note<'a> {
    pub worker_id: &'a str,
    pub text: &'a str,
}

/// A worker that produced nothing: why, and its log's tail.
#[derive(Debug, Serialize)]
pub struct Failure<'a> {
    pub worker_id: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub detail: &'a str,
    pub log_tail: &'a [String],
}

/// Token usage: the lead's row first, then each worker's, then the total.
#[derive(Debug, Serialize)]
pub struct Usage<'a> {
    pub source: &'a str,
    pub rows: Vec<UsageRow<'a>>,
    pub total: UsageRow<'a>,
    /// The estimate made before the run, beside what it took.
    pub estimate: Option<String>,
}

/// One line of the token table; counts already grouped (`1,234`, `n/a`),
/// cost in dollars or `unpriced`.
#[derive(Debug, Serialize)]
pub struct UsageRow<'a> {
    /// `None` for the lead.
    pub worker_id: Option<&'a str>,
    pub provider: &'a str,
    pub input: String,
    pub output: String,
    pub cache_read: String,
    pub cost: String,
}

impl<'a> View<'a> {
    /// The view of `report`: borrows its text; only the task-type fields and
    /// token counts are turned into new strings.
    pub fn new(report: &'a Report) -> Self {
        let header = &report.header;
        let verdict = &report.final_verdict;
        let card = &report.verdict_card;
        View {
            schema_version: &report.schema_version,
            landing: report.landing.as_ref().map(|block| Landing {
                state: &block.state,
                branch: block.branch.as_deref(),
                reasons: block
                    .reasons
                    .iter()
                    .map(|r| format!("{}: {}", r.reason, r.detail))
                    .collect(),
            }),
            verification: report.reliability.as_ref().map(|block| Verification {
                cross_verified: block.cross_verified,
                headline: block.headline(),
                explanation: block.explanation(),
                reason: block.reason.map(ReliabilityReason::as_str),
                detail: &block.detail,
                reviewers_completed: block.reviewers_completed,
                reviewers_rostered: block.reviewers_rostered,
                rounds_run: block.rounds_run,
            }),
            header: Header {
                title: &header.title,
                task_key: &header.task_key,
                task_type: &header.task_type,
                run_id: &header.run_id,
                report_owner: &header.report_owner,
                report_author: &header.report_author,
                report_language: header.report_language.as_deref(),
                lang: header
                    .report_language
                    .as_deref()
                    .filter(|lang| lang.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
                    .unwrap_or("en"),
            },
            verdict: Verdict {
                token: &verdict.verdict_token,
                direction: &verdict.direction,
                direction_class: class(&verdict.direction),
                confidence: verdict.confidence.as_deref().unwrap_or(&card.confidence),
                stated_confidence: verdict.confidence.as_deref(),
                statement: &verdict.statement,
            },
            card: Card {
                token: &card.verdict_token,
                direction: &card.direction,
                headline: &card.headline,
                confidence: &card.confidence,
                key_risks: &card.key_risks,
            },
            summary: Summary {
                headline: &report.human_summary.headline,
                paragraphs: &report.human_summary.paragraphs,
            },
            task: Task {
                kind: &report.task.kind,
                narrative: &report.task.user_narrative,
                facts: report
                    .task
                    .facts
                    .iter()
                    .map(|(key, value)| Fact {
                        label: label(key),
                        body: FactBody::new(value),
                    })
                    .collect(),
            },
            next: Next {
                phase: report.workflow.next_recommended_phase.as_deref(),
                rounds: report.workflow.convergence_rounds,
                steps: report
                    .recommended_next_steps
                    .iter()
                    .map(Step::new)
                    .collect(),
            },
            consensus: report
                .consensus
                .iter()
                .map(|row| Consensus {
                    id: &row.id,
                    convergence: &row.convergence,
                    convergence_class: class(&row.convergence),
                    severity: row.severity.as_deref(),
                    finding: &row.finding,
                    sources: &row.source_items,
                    check: Checks::row(report, &row.source_items),
                })
                .collect(),
            differences: report
                .differences
                .iter()
                .map(|row| Difference::new(report, row))
                .collect(),
            evidence: report
                .primary_evidence
                .iter()
                .map(|row| Evidence::new(report, row))
                .collect(),
            evidence_checked: report
                .verification
                .as_ref()
                .is_some_and(|block| !block.evidence.is_empty()),
            coverage: Workers::new(&report.worker_coverage),
            usage: Usage::new(report),
            checks: Checks::new(report),
        }
    }
}

/// `estimated 30.0k–120.0k tokens, $0.30–$1.50 …; took 85.2k tokens, $0.92`.
fn estimate_line(summary: &super::model::UsageSummary) -> Option<String> {
    let estimate = summary.estimate.as_ref()?;
    let took = summary.totals.as_ref().map_or_else(
        || "not counted".to_owned(),
        |t| {
            let tokens = [
                t.input_tokens,
                t.output_tokens,
                t.cache_read_tokens,
                t.cache_write_tokens,
            ]
            .iter()
            .map(|n| n.unwrap_or(0))
            .sum::<u64>();
            format!("{} tokens, {}", crate::table::human(tokens), cost(t))
        },
    );
    Some(format!("estimated {}; took {took}", estimate.line()))
}

impl FactBody {
    fn new(value: &Value) -> Self {
        match value {
            Value::Array(items) if items.is_empty() => FactBody::Empty,
            Value::Array(items) if items.iter().all(Value::is_object) => {
                let columns = columns(items);
                FactBody::Table {
                    headers: columns.iter().map(|column| label(column)).collect(),
                    rows: items
                        .iter()
                        .map(|item| {
                            columns
                                .iter()
                                .map(|column| scalar(item.get(column.as_str())))
                                .collect()
                        })
                        .collect(),
                }
            }
            Value::Array(items) => FactBody::List {
                items: items.iter().map(|item| scalar(Some(item))).collect(),
            },
            Value::Object(fields) => FactBody::Fields {
                fields: fields
                    .iter()
                    .map(|(key, field)| Field {
                        label: label(key),
                        text: scalar(Some(field)),
                    })
                    .collect(),
            },
            other => FactBody::Text {
                text: scalar(Some(other)),
            },
        }
    }
}

impl<'a> Step<'a> {
    fn new(step: &'a NextStep) -> Self {
        match step {
            NextStep::Phase { phase, reason } => Step::Phase { phase, reason },
            NextStep::Action { action, reason } => Step::Action { action, reason },
            NextStep::Done { reason } => Step::Done { reason },
        }
    }
}

impl<'a> Difference<'a> {
    fn new(report: &'a Report, row: &'a DifferenceRow) -> Self {
        Difference {
            id: &row.id,
            topic: &row.topic,
            positions: row
                .positions
                .iter()
                .map(|position| Position {
                    worker_id: &position.worker_id,
                    stance: &position.stance,
                })
                .collect(),
            resolution: &row.resolution,
            sources: &row.source_items,
            check: Checks::row(report, &row.source_items),
        }
    }
}

impl<'a> Evidence<'a> {
    fn new(report: &'a Report, row: &'a EvidenceRow) -> Self {
        let checked = report
            .verification
            .as_ref()
            .and_then(|block| block.evidence.iter().find(|e| e.id == row.id));
        let check_detail = checked.and_then(|e| {
            let moved = e.anchors.iter().find_map(|a| {
                a.found_at
                    .as_ref()
                    .map(|at| format!("found at `{}:{at}`", a.path))
            });
            let failed = e.anchors.iter().find_map(|a| a.reason.clone());
            moved.or(failed)
        });
        Evidence {
            id: &row.id,
            claim: &row.claim,
            location: &row.location,
            excerpt: row.excerpt.as_deref(),
            sources: &row.source_items,
            checked: checked.map(|e| e.anchor_status.as_str()),
            check_detail,
        }
    }
}

impl<'a> Workers<'a> {
    fn new(entries: &'a [Coverage]) -> Self {
        Workers {
            rows: entries
                .iter()
                .map(|entry| WorkerRow {
                    worker_id: &entry.worker_id,
                    provider: &entry.provider,
                    role: &entry.role,
                    status: &entry.terminal_status,
                    status_class: class(&entry.terminal_status),
                    items: entry.items_reported,
                    reason: entry
                        .failure
                        .as_ref()
                        .map(|failure| failure.reason.as_str()),
                })
                .collect(),
            notes: entries
                .iter()
                .flat_map(|entry| {
                    entry.notes.iter().map(|note| Note {
                        worker_id: &entry.worker_id,
                        text: note,
                    })
                })
                .collect(),
            failures: entries
                .iter()
                .filter_map(|entry| {
                    entry.failure.as_ref().map(|failure| Failure {
                        worker_id: &entry.worker_id,
                        status: &entry.terminal_status,
                        reason: &failure.reason,
                        detail: &failure.detail,
                        log_tail: &failure.log_tail,
                    })
                })
                .collect(),
        }
    }
}

impl<'a> Usage<'a> {
    fn new(report: &'a Report) -> Self {
        let summary = &report.usage_summary;
        let parts: Vec<&TokenUsage> = std::iter::once(&summary.lead)
            .chain(summary.workers.iter().map(|w| &w.usage))
            .collect();
        // `okstra usage` writes the totals; an older report gets them added
        // up here, the same way (a missing number is left out, an unpriced
        // part makes the cost partial).
        let total = summary.totals.as_ref().map_or_else(
            || UsageRow::of_sum(&parts),
            |totals| UsageRow::new(None, "", totals),
        );
        Usage {
            source: &summary.source,
            rows: std::iter::once(UsageRow::new(None, "-", &summary.lead))
                .chain(summary.workers.iter().map(|worker| {
                    UsageRow::new(Some(&worker.worker_id), &worker.provider, &worker.usage)
                }))
                .collect(),
            total,
            estimate: estimate_line(summary),
        }
    }
}

impl<'a> UsageRow<'a> {
    fn new(worker_id: Option<&'a str>, provider: &'a str, usage: &TokenUsage) -> Self {
        UsageRow {
            worker_id,
            provider,
            input: tokens(usage.input_tokens),
            output: tokens(usage.output_tokens),
            cache_read: tokens(usage.cache_read_tokens),
            cost: cost(usage),
        }
    }

    /// The sum of `parts`.
    fn of_sum(parts: &[&TokenUsage]) -> Self {
        let sum = |bucket: fn(&TokenUsage) -> Option<u64>| {
            let known: Vec<u64> = parts.iter().filter_map(|p| bucket(p)).collect();
            (!known.is_empty()).then(|| known.iter().sum())
        };
        let priced: Vec<f64> = parts.iter().filter_map(|p| p.cost_usd).collect();
        let unpriced = parts.iter().any(|p| {
            (p.cost_usd.is_none() && (p.input_tokens.is_some() || p.output_tokens.is_some()))
                || p.cost_partial == Some(true)
        });
        let total = TokenUsage {
            input_tokens: sum(|u| u.input_tokens),
            output_tokens: sum(|u| u.output_tokens),
            cache_read_tokens: sum(|u| u.cache_read_tokens),
            cache_write_tokens: sum(|u| u.cache_write_tokens),
            cost_usd: (!priced.is_empty()).then(|| priced.iter().sum()),
            cost_partial: Some(unpriced),
            source: None,
        };
        UsageRow::new(None, "", &total)
    }
}

/// Column names of a list of objects: `id` first, then in key order.
fn columns(items: &[Value]) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    for item in items {
        if let Value::Object(fields) = item {
            for key in fields.keys() {
                if !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
        }
    }
    columns.sort_by_key(|column| (column != "id", column.clone()));
    columns
}

/// A value as one line of text: strings as is, lists joined, the rest as JSON.
fn scalar(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| scalar(Some(item)))
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    }
}
