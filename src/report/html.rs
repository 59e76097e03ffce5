//! The human HTML report, derived from data.json alone.
//!
//! One self-contained file: inline CSS, no scripts, no fonts or images from
//! anywhere, so it opens the same from a laptop's disk or a phone's mail
//! attachment. Every string that came from a model goes through [`escape`];
//! nothing from the report is ever emitted as markup. Layout is one readable
//! column (max width, viewport meta) whose tables scroll sideways on narrow
//! screens instead of squeezing the page.

use std::fmt::Write;

use serde_json::Value;

use super::markdown::{columns, scalar};
use super::model::{NextStep, Report, TokenUsage, label, tokens};

/// `writeln!` into a `String`, which cannot fail.
macro_rules! line {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

const STYLE: &str = "\
:root{color-scheme:light;--fg:#1d232b;--muted:#5b6572;--line:#d9dee5;--bg:#ffffff;--panel:#f4f6f9;\
--accent:#2457c5;--ok:#1f7a3d;--warn:#a86200;--bad:#b3261e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.55 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}
main{max-width:60rem;margin:0 auto;padding:1.25rem 1rem 3rem}
h1{font-size:1.6rem;line-height:1.25;margin:.5rem 0 .25rem}
h2{font-size:1.25rem;margin:2rem 0 .75rem;padding-bottom:.25rem;border-bottom:2px solid var(--line)}
h3{font-size:1.05rem;margin:1.25rem 0 .5rem}
p{margin:.5rem 0}
.meta{color:var(--muted);font-size:.9rem;margin:0 0 1rem}
.meta span{display:inline-block;margin-right:1rem}
.card{background:var(--panel);border-left:6px solid var(--accent);border-radius:8px;padding:1rem 1.25rem;margin:1rem 0}
.card.proceed{border-color:var(--ok)}.card.block{border-color:var(--bad)}
.card.revise,.card.proceed-with-changes,.card.investigate-further{border-color:var(--warn)}
.token{font:700 1.1rem ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:.02em}
.headline{font-size:1.2rem;font-weight:600;margin:.25rem 0 .5rem}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:999px;background:var(--line);font-size:.8rem;white-space:nowrap}
.badge.full-consensus,.badge.completed,.badge.pass{background:#d6f0dd;color:var(--ok)}
.badge.partial-consensus{background:#e3ecfb;color:var(--accent)}
.badge.contested,.badge.fail{background:#fbe0de;color:var(--bad)}
.badge.worker-unique,.badge.skipped{background:#fdecd2;color:var(--warn)}
.badge.failed,.badge.timed-out,.badge.unavailable,.badge.cancelled{background:#fbe0de;color:var(--bad)}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5rem 0 1rem;border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;vertical-align:top;padding:.45rem .6rem;border-bottom:1px solid var(--line)}
th{background:var(--panel);white-space:nowrap}
td{min-width:6rem;overflow-wrap:anywhere}
tr:last-child td{border-bottom:0}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em}
code{background:var(--panel);padding:.05rem .3rem;border-radius:4px;overflow-wrap:anywhere}
pre{background:#1d232b;color:#e8ecf1;padding:.75rem;border-radius:6px;overflow-x:auto;white-space:pre}
ol,ul{padding-left:1.4rem}
.none{color:var(--muted);font-style:italic}
footer{margin-top:2.5rem;color:var(--muted);font-size:.85rem}
@media (max-width:40rem){body{font-size:15px}h1{font-size:1.35rem}main{padding:1rem .75rem 2rem}}
";

/// Escape text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // NUL, ESC and the other controls are dropped: HTML forbids them.
            other if crate::fsread::is_stray_control(other) && other != '\r' => {}
            other => out.push(other),
        }
    }
    out
}

/// A CSS class from a closed-set value (schema enums); anything else maps to
/// nothing, so a class attribute can never carry model text.
fn class(value: &str) -> &str {
    if value.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
        value
    } else {
        ""
    }
}

/// Render the human HTML for `report`.
pub fn render(report: &Report) -> String {
    let mut out = String::with_capacity(32 * 1024);
    let header = &report.header;
    let lang = header
        .report_language
        .as_deref()
        .filter(|lang| lang.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .unwrap_or("en");
    line!(out, "<!DOCTYPE html>");
    line!(out, "<html lang=\"{}\">", escape(lang));
    line!(out, "<head>");
    line!(out, "<meta charset=\"utf-8\">");
    line!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    );
    line!(out, "<title>{}</title>", escape(&header.title));
    line!(out, "<style>\n{STYLE}</style>");
    line!(out, "</head>");
    line!(out, "<body>");
    line!(out, "<main>");
    line!(out, "<h1>{}</h1>", escape(&header.title));
    line!(
        out,
        "<p class=\"meta\"><span>Task <code>{}</code></span><span>{}</span><span>Run <code>{}</code></span></p>",
        escape(&header.task_key),
        escape(&header.task_type),
        escape(&header.run_id)
    );
    summary(report, &mut out);
    verdict(report, &mut out);
    task(report, &mut out);
    next_steps(report, &mut out);
    consensus(report, &mut out);
    differences(report, &mut out);
    evidence(report, &mut out);
    coverage(report, &mut out);
    usage(report, &mut out);
    line!(
        out,
        "<footer>Report schema {} · owner {} · author {} · derived from <code>data.json</code> by okstra</footer>",
        escape(&report.schema_version),
        escape(&header.report_owner),
        escape(&header.report_author)
    );
    line!(out, "</main>");
    line!(out, "</body>");
    line!(out, "</html>");
    out
}

fn paragraphs(text: &str, out: &mut String) {
    for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        line!(out, "<p>{}</p>", escape(paragraph).replace('\n', "<br>"));
    }
}

fn summary(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Summary</h2>");
    line!(
        out,
        "<p class=\"headline\">{}</p>",
        escape(&report.human_summary.headline)
    );
    for paragraph in &report.human_summary.paragraphs {
        paragraphs(paragraph, out);
    }
    line!(out, "</section>");
}

fn verdict(report: &Report, out: &mut String) {
    let verdict = &report.final_verdict;
    let card = &report.verdict_card;
    line!(out, "<section>");
    line!(out, "<h2>Verdict</h2>");
    line!(out, "<div class=\"card {}\">", class(&verdict.direction));
    line!(
        out,
        "<div><span class=\"token\">{}</span> · <span class=\"badge\">{}</span> · confidence {}</div>",
        escape(&verdict.verdict_token),
        escape(&verdict.direction),
        escape(verdict.confidence.as_deref().unwrap_or(&card.confidence))
    );
    line!(out, "<p class=\"headline\">{}</p>", escape(&card.headline));
    paragraphs(&verdict.statement, out);
    if !card.key_risks.is_empty() {
        line!(out, "<h3>Key risks</h3>");
        line!(out, "<ul>");
        for risk in &card.key_risks {
            line!(out, "<li>{}</li>", escape(risk));
        }
        line!(out, "</ul>");
    }
    line!(out, "</div>");
    line!(out, "</section>");
}

fn task(report: &Report, out: &mut String) {
    let task = &report.task;
    line!(out, "<section>");
    line!(out, "<h2>What we found ({})</h2>", escape(&task.kind));
    paragraphs(&task.user_narrative, out);
    for (key, value) in &task.facts {
        line!(out, "<h3>{}</h3>", escape(&label(key)));
        fact(value, out);
    }
    line!(out, "</section>");
}

fn fact(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) if items.is_empty() => none(out),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let columns = columns(items);
            let headers: Vec<String> = columns.iter().map(|c| label(c)).collect();
            let rows = items.iter().map(|item| {
                columns
                    .iter()
                    .map(|column| escape(&scalar(item.get(column.as_str()))))
                    .collect::<Vec<_>>()
            });
            table(&headers, rows, out);
        }
        Value::Array(items) => {
            line!(out, "<ul>");
            for item in items {
                line!(out, "<li>{}</li>", escape(&scalar(Some(item))));
            }
            line!(out, "</ul>");
        }
        Value::Object(fields) => {
            line!(out, "<ul>");
            for (key, field) in fields {
                line!(
                    out,
                    "<li><strong>{}:</strong> {}</li>",
                    escape(&label(key)),
                    escape(&scalar(Some(field)))
                );
            }
            line!(out, "</ul>");
        }
        other => paragraphs(&scalar(Some(other)), out),
    }
}

fn none(out: &mut String) {
    line!(out, "<p class=\"none\">None.</p>");
}

/// A scrollable table; `rows` hold cells that are already escaped HTML.
fn table<S: AsRef<str>>(
    headers: &[S],
    rows: impl IntoIterator<Item = Vec<String>>,
    out: &mut String,
) {
    line!(out, "<div class=\"scroll\"><table>");
    out.push_str("<thead><tr>");
    for header in headers {
        let _ = write!(out, "<th>{}</th>", escape(header.as_ref()));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>\n");
    }
    line!(out, "</tbody></table></div>");
}

fn badge(value: &str) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        class(value),
        escape(value)
    )
}

fn sources(items: &[String]) -> String {
    items
        .iter()
        .map(|item| format!("<code>{}</code>", escape(item)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn next_steps(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Next steps</h2>");
    line!(out, "<ol>");
    for step in &report.recommended_next_steps {
        match step {
            NextStep::Phase { phase, reason } => line!(
                out,
                "<li>Run the <strong>{}</strong> phase: {}</li>",
                escape(phase),
                escape(reason)
            ),
            NextStep::Action { action, reason } => line!(
                out,
                "<li><strong>{}</strong>: {}</li>",
                escape(action),
                escape(reason)
            ),
            NextStep::Done { reason } => {
                line!(out, "<li>Nothing further: {}</li>", escape(reason));
            }
        }
    }
    line!(out, "</ol>");
    line!(out, "</section>");
}

fn consensus(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Where the workers agree</h2>");
    if report.consensus.is_empty() {
        none(out);
    } else {
        let rows = report.consensus.iter().map(|row| {
            vec![
                escape(&row.id),
                badge(&row.convergence),
                row.severity
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), escape),
                escape(&row.finding),
                sources(&row.source_items),
            ]
        });
        table(
            &["ID", "Convergence", "Severity", "Finding", "Sources"],
            rows,
            out,
        );
    }
    line!(out, "</section>");
}

fn differences(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Where they differ</h2>");
    if report.differences.is_empty() {
        none(out);
    } else {
        let rows = report.differences.iter().map(|row| {
            let positions: Vec<String> = row
                .positions
                .iter()
                .map(|p| {
                    format!(
                        "<code>{}</code>: {}",
                        escape(&p.worker_id),
                        escape(&p.stance)
                    )
                })
                .collect();
            vec![
                escape(&row.id),
                escape(&row.topic),
                positions.join("<br>"),
                escape(&row.resolution),
                sources(&row.source_items),
            ]
        });
        table(
            &["ID", "Topic", "Positions", "Resolution", "Sources"],
            rows,
            out,
        );
    }
    line!(out, "</section>");
}

fn evidence(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Primary evidence</h2>");
    if report.primary_evidence.is_empty() {
        none(out);
    } else {
        let rows = report.primary_evidence.iter().map(|row| {
            vec![
                escape(&row.id),
                escape(&row.claim),
                format!("<code>{}</code>", escape(&row.location)),
                row.excerpt
                    .as_deref()
                    .map_or_else(|| "-".to_owned(), |e| format!("<code>{}</code>", escape(e))),
                sources(&row.source_items),
            ]
        });
        table(
            &["ID", "Claim", "Location", "Excerpt", "Sources"],
            rows,
            out,
        );
    }
    line!(out, "</section>");
}

fn coverage(report: &Report, out: &mut String) {
    line!(out, "<section>");
    line!(out, "<h2>Workers</h2>");
    let rows = report.worker_coverage.iter().map(|entry| {
        vec![
            format!("<code>{}</code>", escape(&entry.worker_id)),
            escape(&entry.provider),
            escape(&entry.role),
            badge(&entry.terminal_status),
            entry.items_reported.to_string(),
            entry
                .failure
                .as_ref()
                .map_or_else(|| "-".to_owned(), |failure| escape(&failure.reason)),
        ]
    });
    table(
        &[
            "Worker",
            "Provider",
            "Role",
            "Status",
            "Items",
            "Why it produced nothing",
        ],
        rows,
        out,
    );
    for entry in &report.worker_coverage {
        for note in &entry.notes {
            line!(
                out,
                "<p class=\"note\"><code>{}</code>: {}</p>",
                escape(&entry.worker_id),
                escape(note)
            );
        }
    }
    for entry in &report.worker_coverage {
        let Some(failure) = &entry.failure else {
            continue;
        };
        line!(
            out,
            "<h3><code>{}</code>: {}</h3>",
            escape(&entry.worker_id),
            escape(&failure.reason)
        );
        paragraphs(&failure.detail, out);
        if failure.log_tail.is_empty() {
            line!(out, "<p class=\"none\">The log was empty.</p>");
        } else {
            line!(out, "<pre>{}</pre>", escape(&failure.log_tail.join("\n")));
        }
    }
    line!(out, "</section>");
}

fn usage_cells(who: String, provider: &str, usage: &TokenUsage) -> Vec<String> {
    vec![
        who,
        escape(provider),
        tokens(usage.input_tokens),
        tokens(usage.output_tokens),
        tokens(usage.cache_read_tokens),
    ]
}

fn usage(report: &Report, out: &mut String) {
    let summary = &report.usage_summary;
    line!(out, "<section>");
    line!(out, "<h2>Token usage</h2>");
    line!(
        out,
        "<p class=\"meta\">Source: {}</p>",
        escape(&summary.source)
    );
    let lead = std::iter::once(usage_cells("lead".to_owned(), "-", &summary.lead));
    let workers = summary.workers.iter().map(|worker| {
        usage_cells(
            format!("<code>{}</code>", escape(&worker.worker_id)),
            &worker.provider,
            &worker.usage,
        )
    });
    table(
        &["Who", "Provider", "Input", "Output", "Cache read"],
        lead.chain(workers),
        out,
    );
    line!(out, "</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_model_text_is_escaped() {
        assert_eq!(
            escape("<script>alert(1)</script>\"'&"),
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
        );
    }

    #[test]
    fn classes_only_take_closed_set_values() {
        assert_eq!(class("full-consensus"), "full-consensus");
        assert_eq!(class("x\" onmouseover=\"y"), "");
    }
}
