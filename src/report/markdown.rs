//! The AI handoff Markdown, derived from data.json alone.
//!
//! Schema v1 keeps the historical numbered layout with its visible
//! `## Verdict Card` / `## 7. Final Verdict` pair. Schema v2 states the verdict
//! once, from `finalVerdict` plus the card's headline and risks, and orders
//! the rest for an agent picking up the work: routing first, then findings
//! with their traceable `sourceItems`. The output depends only on the data, so
//! the same report always renders to the same bytes.

use std::fmt::Write;

use serde_json::Value;

use super::model::{
    ConsensusRow, Coverage, DifferenceRow, EvidenceRow, NextStep, Report, Task, UsageSummary,
    label, tokens,
};

/// `writeln!` into a `String`, which cannot fail.
macro_rules! line {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Render the handoff Markdown for `report`.
pub fn render(report: &Report) -> String {
    let mut out = String::with_capacity(16 * 1024);
    if report.is_v1() {
        render_v1(report, &mut out);
    } else {
        render_v2(report, &mut out);
    }
    // Model text may carry NUL or terminal escapes; none reach the file.
    out.retain(|c| !crate::fsread::is_stray_control(c));
    out
}

fn render_v2(report: &Report, out: &mut String) {
    let header = &report.header;
    let verdict = &report.final_verdict;
    let card = &report.verdict_card;
    line!(out, "# {}", inline(&header.title));
    line!(out);
    metadata(report, out);
    line!(out, "## Verdict");
    line!(out);
    line!(
        out,
        "`{}` → `{}` (confidence: {})",
        verdict.verdict_token,
        verdict.direction,
        verdict.confidence.as_deref().unwrap_or(&card.confidence)
    );
    line!(out);
    line!(out, "{}", verdict.statement.trim_end());
    line!(out);
    key_risks(&card.key_risks, out);
    line!(out, "## Next steps");
    line!(out);
    next_steps(report, out);
    line!(out, "## Summary for the user");
    line!(out);
    human_summary(report, out);
    line!(out, "## Task: {}", report.task.kind);
    line!(out);
    task_block(&report.task, "###", out);
    line!(out, "## Consensus");
    line!(out);
    consensus(&report.consensus, out);
    line!(out, "## Differences");
    line!(out);
    differences(&report.differences, out);
    line!(out, "## Primary evidence");
    line!(out);
    evidence(&report.primary_evidence, out);
    line!(out, "## Worker coverage");
    line!(out);
    coverage(&report.worker_coverage, "###", out);
    line!(out, "## Usage");
    line!(out);
    usage(&report.usage_summary, out);
}

fn render_v1(report: &Report, out: &mut String) {
    let header = &report.header;
    let verdict = &report.final_verdict;
    let card = &report.verdict_card;
    line!(
        out,
        "# {} - Multi-Agent Cross Verification Final Report",
        inline(&header.task_key)
    );
    line!(out);
    metadata(report, out);
    line!(out, "## Verdict Card");
    line!(out);
    line!(out, "| Field | Value |");
    line!(out, "|---|---|");
    line!(out, "| Verdict token | `{}` |", card.verdict_token);
    line!(out, "| Direction | `{}` |", card.direction);
    line!(out, "| Headline | {} |", cell(&card.headline));
    line!(out, "| Confidence | {} |", card.confidence);
    line!(out, "| Key risks | {} |", cell(&card.key_risks.join("; ")));
    line!(out);
    line!(out, "## 1. Summary");
    line!(out);
    human_summary(report, out);
    line!(out, "## 2. Task Findings ({})", report.task.kind);
    line!(out);
    task_block(&report.task, "###", out);
    line!(out, "## 3. Primary Evidence");
    line!(out);
    evidence(&report.primary_evidence, out);
    line!(out, "## 4. Consensus");
    line!(out);
    consensus(&report.consensus, out);
    line!(out, "## 5. Differences");
    line!(out);
    differences(&report.differences, out);
    line!(out, "## 6. Worker Coverage");
    line!(out);
    coverage(&report.worker_coverage, "###", out);
    line!(out, "## 7. Final Verdict");
    line!(out);
    line!(out, "- Verdict token: `{}`", verdict.verdict_token);
    line!(out, "- Direction: `{}`", verdict.direction);
    if let Some(confidence) = &verdict.confidence {
        line!(out, "- Confidence: {confidence}");
    }
    line!(out);
    line!(out, "{}", verdict.statement.trim_end());
    line!(out);
    line!(out, "## 8. Recommended Next Steps");
    line!(out);
    next_steps(report, out);
    line!(out, "## 9. Usage");
    line!(out);
    usage(&report.usage_summary, out);
}

fn metadata(report: &Report, out: &mut String) {
    let header = &report.header;
    line!(out, "- Task key: `{}`", header.task_key);
    line!(out, "- Task type: `{}`", header.task_type);
    line!(out, "- Run: `{}`", header.run_id);
    line!(out, "- Schema: `{}`", report.schema_version);
    line!(out, "- Report owner: {}", header.report_owner);
    line!(out, "- Report author: {}", header.report_author);
    if let Some(language) = &header.report_language {
        line!(out, "- Report language: {language}");
    }
    line!(out);
}

fn key_risks(risks: &[String], out: &mut String) {
    if risks.is_empty() {
        return;
    }
    line!(out, "Key risks:");
    line!(out);
    for risk in risks {
        line!(out, "- {}", inline(risk));
    }
    line!(out);
}

fn next_steps(report: &Report, out: &mut String) {
    let next = report
        .workflow
        .next_recommended_phase
        .as_deref()
        .map_or_else(|| "none".to_owned(), |phase| format!("`{phase}`"));
    line!(out, "`workflow.nextRecommendedPhase`: {next}");
    if let Some(rounds) = report.workflow.convergence_rounds {
        line!(out, "(convergence rounds run: {rounds})");
    }
    line!(out);
    for (index, step) in report.recommended_next_steps.iter().enumerate() {
        let number = index + 1;
        match step {
            NextStep::Phase { phase, reason } => {
                line!(out, "{number}. Run phase `{phase}`: {}", inline(reason));
            }
            NextStep::Action { action, reason } => {
                line!(out, "{number}. {}: {}", inline(action), inline(reason));
            }
            NextStep::Done { reason } => {
                line!(out, "{number}. Nothing further: {}", inline(reason));
            }
        }
    }
    line!(out);
}

fn human_summary(report: &Report, out: &mut String) {
    line!(out, "**{}**", inline(&report.human_summary.headline));
    line!(out);
    for paragraph in &report.human_summary.paragraphs {
        line!(out, "{}", paragraph.trim_end());
        line!(out);
    }
}

/// The narrative, then each task-type field as its own sub-section.
fn task_block(task: &Task, level: &str, out: &mut String) {
    line!(out, "{}", task.user_narrative.trim_end());
    line!(out);
    for (key, value) in &task.facts {
        line!(out, "{level} {}", label(key));
        line!(out);
        fact(value, out);
    }
}

fn fact(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) if items.is_empty() => line!(out, "_none_"),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let columns = columns(items);
            let header: Vec<String> = columns.iter().map(|c| label(c)).collect();
            line!(out, "| {} |", header.join(" | "));
            line!(out, "|{}", "---|".repeat(columns.len()));
            for item in items {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|column| cell(&scalar(item.get(column.as_str()))))
                    .collect();
                line!(out, "| {} |", cells.join(" | "));
            }
        }
        Value::Array(items) => {
            for item in items {
                line!(out, "- {}", inline(&scalar(Some(item))));
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields {
                line!(out, "- {}: {}", label(key), inline(&scalar(Some(field))));
            }
        }
        other => line!(out, "{}", scalar(Some(other)).trim_end()),
    }
    line!(out);
}

/// Column names of a list of objects: `id` first, then in key order.
pub fn columns(items: &[Value]) -> Vec<String> {
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
pub fn scalar(value: Option<&Value>) -> String {
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

fn consensus(rows: &[ConsensusRow], out: &mut String) {
    if rows.is_empty() {
        line!(out, "_none_");
        line!(out);
        return;
    }
    line!(
        out,
        "| ID | Convergence | Severity | Finding | Source items |"
    );
    line!(out, "|---|---|---|---|---|");
    for row in rows {
        line!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.id,
            row.convergence,
            row.severity.as_deref().unwrap_or("-"),
            cell(&row.finding),
            sources(&row.source_items)
        );
    }
    line!(out);
}

fn differences(rows: &[DifferenceRow], out: &mut String) {
    if rows.is_empty() {
        line!(out, "_none_");
        line!(out);
        return;
    }
    line!(
        out,
        "| ID | Topic | Positions | Resolution | Source items |"
    );
    line!(out, "|---|---|---|---|---|");
    for row in rows {
        let positions: Vec<String> = row
            .positions
            .iter()
            .map(|position| format!("`{}`: {}", position.worker_id, cell(&position.stance)))
            .collect();
        line!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.id,
            cell(&row.topic),
            positions.join("<br>"),
            cell(&row.resolution),
            sources(&row.source_items)
        );
    }
    line!(out);
}

fn evidence(rows: &[EvidenceRow], out: &mut String) {
    if rows.is_empty() {
        line!(out, "_none_");
        line!(out);
        return;
    }
    line!(out, "| ID | Claim | Location | Excerpt | Source items |");
    line!(out, "|---|---|---|---|---|");
    for row in rows {
        line!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.id,
            cell(&row.claim),
            code_cell(&row.location),
            row.excerpt
                .as_deref()
                .map_or_else(|| "-".to_owned(), code_cell),
            sources(&row.source_items)
        );
    }
    line!(out);
}

fn coverage(entries: &[Coverage], level: &str, out: &mut String) {
    line!(
        out,
        "| Worker | Provider | Role | Status | Items | Failure reason |"
    );
    line!(out, "|---|---|---|---|---|---|");
    for entry in entries {
        line!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            entry.worker_id,
            entry.provider,
            entry.role,
            entry.terminal_status,
            entry.items_reported,
            entry
                .failure
                .as_ref()
                .map_or("-", |failure| failure.reason.as_str())
        );
    }
    line!(out);
    for entry in entries {
        for note in &entry.notes {
            line!(out, "- `{}`: {}", entry.worker_id, note.trim_end());
        }
    }
    if entries.iter().any(|e| !e.notes.is_empty()) {
        line!(out);
    }
    for entry in entries {
        let Some(failure) = &entry.failure else {
            continue;
        };
        line!(
            out,
            "{level} `{}`: {} ({})",
            entry.worker_id,
            entry.terminal_status,
            failure.reason
        );
        line!(out);
        line!(out, "{}", failure.detail.trim_end());
        line!(out);
        if failure.log_tail.is_empty() {
            line!(out, "_empty log_");
        } else {
            let fence = fence_for(&failure.log_tail);
            line!(out, "{fence}text");
            for log_line in &failure.log_tail {
                line!(out, "{log_line}");
            }
            line!(out, "{fence}");
        }
        line!(out);
    }
}

fn usage(summary: &UsageSummary, out: &mut String) {
    line!(out, "Source: {}", summary.source);
    line!(out);
    line!(
        out,
        "| Who | Provider | Input tokens | Output tokens | Cache read tokens |"
    );
    line!(out, "|---|---|---|---|---|");
    let lead = &summary.lead;
    line!(
        out,
        "| lead | - | {} | {} | {} |",
        tokens(lead.input_tokens),
        tokens(lead.output_tokens),
        tokens(lead.cache_read_tokens)
    );
    for worker in &summary.workers {
        line!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            worker.worker_id,
            worker.provider,
            tokens(worker.usage.input_tokens),
            tokens(worker.usage.output_tokens),
            tokens(worker.usage.cache_read_tokens)
        );
    }
    line!(out);
}

fn sources(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text for one line (a heading, a bullet): line breaks become spaces.
fn inline(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text for a table cell: one line, `|` escaped so it cannot split the row.
fn cell(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "-".to_owned();
    }
    text.lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("<br>")
        .replace('|', "\\|")
}

/// A code span in a table cell, with a delimiter longer than any backtick run
/// inside it.
fn code_cell(text: &str) -> String {
    let one_line = inline(text).replace('|', "\\|");
    if one_line.is_empty() {
        return "-".to_owned();
    }
    let ticks = "`".repeat(longest_run(&one_line, '`') + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{one_line}{pad}{ticks}")
}

/// A code fence that no line of `lines` can close early.
fn fence_for(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .map(|line| longest_run(line, '`'))
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut longest, mut current) = (0, 0);
    for c in text.chars() {
        if c == ch {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_a_table_row() {
        assert_eq!(cell("a | b\nc"), "a \\| b<br>c");
        assert_eq!(cell("  "), "-");
    }

    #[test]
    fn code_spans_and_fences_outgrow_their_content() {
        assert_eq!(code_cell("a`b"), "``a`b``");
        assert_eq!(code_cell("`x`"), "`` `x` ``");
        assert_eq!(fence_for(&["````".to_owned()]), "`````");
        assert_eq!(fence_for(&["plain".to_owned()]), "```");
    }
}
