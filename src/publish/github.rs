//! The pull-request review okstra posts, built without any I/O: which lines
//! of the pull request can take a comment ([`Commentable`]), the inline
//! comments and the summary body ([`review`]), the hidden marker that finds
//! an earlier review of the same run ([`marker`]), and the one function that
//! makes model text inert on GitHub ([`neutral`]).
//!
//! GitHub rejects a whole review when one comment names a line outside the
//! diff, so every comment's lines are checked against the pull request's
//! hunks first; a finding whose anchor is not in the diff goes into the
//! summary. At most [`MAX_COMMENTS`] inline comments, the most severe first;
//! the body stays under [`MAX_BODY_CHARS`].
//! See: <https://docs.github.com/en/rest/pulls/reviews#create-a-review-for-a-pull-request>

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::report::anchor::Anchor;
use crate::report::findings::{Finding, Verification};
use crate::vocab::Severity;

/// Inline comments per review; the rest go into the summary.
pub const MAX_COMMENTS: usize = 50;
/// Characters of the review body (GitHub refuses more than 65 536).
pub const MAX_BODY_CHARS: usize = 60_000;
/// Characters of one inline comment.
const MAX_COMMENT_CHARS: usize = 8_000;
/// Characters of a finding's text shown in the summary list.
const MAX_SUMMARY_TEXT: usize = 300;
/// A zero-width space: splits what GitHub would turn into a mention or a link.
const BREAK: char = '\u{200B}';

/// The right-hand (head) lines of a pull request that can take a comment,
/// per file: every added or context line of its patch, with its hunk.
#[derive(Debug, Default, Clone)]
pub struct Commentable {
    files: HashMap<String, HashMap<u32, usize>>,
    /// Where the project lies in the repository (`services/api/`, or
    /// empty): anchors are the project's paths, a pull request's files the
    /// repository's.
    prefix: String,
}

impl Commentable {
    /// No file yet, for a project at `prefix` in its repository.
    pub fn under(prefix: &str) -> Commentable {
        Commentable {
            files: HashMap::new(),
            prefix: prefix.to_owned(),
        }
    }

    /// `anchor`'s file as the pull request names it.
    pub fn path(&self, anchor: &Anchor) -> String {
        format!("{}{}", self.prefix, anchor.path)
    }

    /// Add one file's `patch` (as the pull request's files list gives it).
    pub fn add(&mut self, file: &str, patch: &str) {
        let lines = self.files.entry(file.to_owned()).or_default();
        let mut hunk = 0;
        let mut right: Option<u32> = None;
        for line in patch.lines() {
            if let Some(header) = line.strip_prefix("@@ ") {
                hunk += 1;
                right = header
                    .split_whitespace()
                    .find_map(|part| part.strip_prefix('+'))
                    .and_then(|range| range.split(',').next())
                    .and_then(|start| start.parse().ok());
                continue;
            }
            let Some(number) = right else { continue };
            match line.as_bytes().first() {
                Some(b'+' | b' ') | None => {
                    lines.insert(number, hunk);
                    right = Some(number + 1);
                }
                _ => {} // `-` (the base side) and `\ No newline`
            }
        }
    }

    /// Where an inline comment on `anchor` goes: `(start_line, line)` of
    /// the head side, `start_line` only for a range inside one hunk.
    pub fn place(&self, anchor: &Anchor) -> Option<(Option<u32>, u32)> {
        let lines = self.files.get(&self.path(anchor))?;
        let start = lines.get(&anchor.start);
        let end = lines.get(&anchor.end);
        match (start, end) {
            (Some(a), Some(b)) if a == b && anchor.start < anchor.end => {
                Some((Some(anchor.start), anchor.end))
            }
            _ => (anchor.start..=anchor.end)
                .find(|line| lines.contains_key(line))
                .map(|line| (None, line)),
        }
    }
}

/// The hidden marker that identifies the review of one run.
pub fn marker(task_key: &str, run_id: &str) -> String {
    let digest = crate::digest::sha256_hex(format!("{task_key}/{run_id}").as_bytes());
    format!("<!-- okstra-review run:{} -->", &digest[..24])
}

/// Model or file text made inert on GitHub: one line, no HTML, no link or
/// image syntax, no mention, no autolinked URL or issue reference.
pub fn neutral(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(flat.len() + 16);
    let mut chars = flat.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '[' | ']' | '`' | '!' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '@' | '#' => {
                out.push(c);
                if chars.peek().is_some_and(|next| next.is_alphanumeric()) {
                    out.push(BREAK);
                }
            }
            c => out.push(c),
        }
    }
    out.replace("://", &format!(":{BREAK}//"))
        .replace("www.", &format!("www{BREAK}."))
}

/// What the summary says about the run besides its findings.
#[derive(Debug, Clone)]
pub struct Summary {
    pub title: String,
    pub verdict_token: String,
    pub direction: String,
    pub statement: String,
    pub verification: Verification,
    /// `claude completed`, `grok timed-out` …
    pub coverage: Vec<String>,
    /// `$0.42` or `unknown`.
    pub cost: String,
    pub commit: String,
    pub marker: String,
    /// Claims the run refuted (withdrawn, or refuted by reviewers with
    /// evidence): counted in the body, never posted.
    pub refuted: usize,
}

/// The review request body: `COMMENT`, pinned to `commit`, with the
/// summary and at most [`MAX_COMMENTS`] inline comments. `findings` are
/// the reported ones, in report order; a refuted one is never an alert:
/// the summary only counts it.
pub fn review(summary: &Summary, findings: &[&Finding], diff: &Commentable) -> Value {
    let mut ordered: Vec<&Finding> = findings
        .iter()
        .copied()
        .filter(|f| !f.is_refuted())
        .collect();
    ordered.sort_by_key(|f| std::cmp::Reverse(f.rank()));
    let mut comments: Vec<Value> = Vec::new();
    let mut outside: Vec<&Finding> = Vec::new();
    let mut over_limit: Vec<&Finding> = Vec::new();
    for finding in ordered {
        let placed = finding
            .anchors
            .iter()
            .find_map(|anchor| diff.place(anchor).map(|place| (anchor, place)));
        match placed {
            Some(_) if comments.len() >= MAX_COMMENTS => over_limit.push(finding),
            Some((anchor, (start, line))) => {
                let mut comment = json!({
                    "path": diff.path(anchor),
                    "line": line,
                    "side": "RIGHT",
                    "body": comment_body(finding),
                });
                if let Some(start) = start {
                    comment["start_line"] = json!(start);
                    comment["start_side"] = json!("RIGHT");
                }
                comments.push(comment);
            }
            None => outside.push(finding),
        }
    }
    let body = summary_body(summary, diff, comments.len(), &outside, &over_limit);
    json!({
        "commit_id": summary.commit,
        "event": "COMMENT",
        "body": body,
        "comments": comments,
    })
}

/// One inline comment: class, severity, who found and who verified, the
/// finding, the suggested fix.
fn comment_body(finding: &Finding) -> String {
    let mut body = format!(
        "**okstra · {} · {} · {}**\n\n{}\n\nF{}",
        finding.row,
        finding.severity.map_or("unranked", Severity::as_str),
        finding.class,
        neutral(&finding.text),
        // `found by …`, in the words of the report and the summary.
        finding.credits().trim_start_matches('f'),
    );
    if !finding.severity_disputes.is_empty() {
        let _ = write!(
            body,
            " · severity disputed ({})",
            neutral(&finding.severity_disputes.join(", "))
        );
    }
    if let Some(fix) = &finding.suggested_fix {
        let _ = write!(body, "\n\n**Suggested fix:** {}", neutral(fix));
    }
    crate::fsread::clip(&body, MAX_COMMENT_CHARS)
}

/// One line of the summary's list.
fn summary_line(finding: &Finding, diff: &Commentable) -> String {
    let place = finding.anchors.first().map_or_else(
        || "unanchored".to_owned(),
        |a| format!("`{}{}`", diff.prefix, a.label()),
    );
    format!(
        "- **{}** · {} · {} · {place} — {} ({})\n",
        finding.row,
        finding.severity.map_or("unranked", Severity::as_str),
        finding.class,
        neutral(&crate::fsread::clip(&finding.text, MAX_SUMMARY_TEXT)),
        finding.credits(),
    )
}

fn summary_body(
    summary: &Summary,
    diff: &Commentable,
    inline: usize,
    outside: &[&Finding],
    over_limit: &[&Finding],
) -> String {
    let refuted = summary.refuted;
    let mut body = format!(
        "{}\n## okstra review: {}\n\n",
        summary.marker,
        neutral(&summary.title)
    );
    let _ = writeln!(
        body,
        "**Verdict:** `{}` ({}) — {}\n",
        neutral(&summary.verdict_token),
        neutral(&summary.direction),
        neutral(&summary.statement)
    );
    let _ = write!(
        body,
        "**{}**: {}.",
        neutral(&summary.verification.headline),
        neutral(&summary.verification.explanation)
    );
    if !summary.verification.cross_verified {
        body.push_str(" Each finding below is one model's word unless it says who verified it.");
    }
    body.push_str("\n\n");
    let _ = writeln!(
        body,
        "**Coverage:** {}\n",
        neutral(&summary.coverage.join(", "))
    );
    let _ = writeln!(
        body,
        "**Cost:** {} · **Commit analysed:** `{}`\n",
        summary.cost, summary.commit
    );
    let total = inline + outside.len() + over_limit.len();
    let _ = writeln!(
        body,
        "{total} finding{}: {inline} inline below, {} outside this pull request's diff{}.",
        if total == 1 { "" } else { "s" },
        outside.len(),
        if over_limit.is_empty() {
            String::new()
        } else {
            format!(
                ", {} in the diff beyond the {MAX_COMMENTS}-comment limit",
                over_limit.len()
            )
        }
    );
    if refuted > 0 {
        let _ = writeln!(
            body,
            "\n{refuted} refuted claim{} (withdrawn by {}owner or refuted by reviewers with \
             evidence) {} not posted; the run's report lists {} with the refutation.",
            if refuted == 1 { "" } else { "s" },
            if refuted == 1 { "its " } else { "their " },
            if refuted == 1 { "is" } else { "are" },
            if refuted == 1 { "it" } else { "them" }
        );
    }
    for (heading, list) in [
        ("Outside the diff", outside),
        ("Beyond the inline-comment limit", over_limit),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(body, "\n### {heading}\n\n");
        for (index, finding) in list.iter().enumerate() {
            let line = summary_line(finding, diff);
            if body.chars().count() + line.chars().count() + 200 > MAX_BODY_CHARS {
                let _ = writeln!(
                    body,
                    "- … and {} more (see the run's report)",
                    list.len() - index
                );
                break;
            }
            body.push_str(&line);
        }
    }
    crate::fsread::clip(&body, MAX_BODY_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::FinalClass;
    use crate::vocab::Rule;

    const PATCH: &str = "\
@@ -1,4 +1,5 @@
 import os
-old = 1
+new = 1
+more = 2
 x = 3
 y = 4
@@ -20,2 +21,2 @@ def f():
-    a
+    b
     c
";

    fn anchor(path: &str, start: u32, end: u32) -> Anchor {
        Anchor {
            path: path.into(),
            start,
            end,
        }
    }

    fn finding(row: &str, severity: Severity, at: Anchor) -> Finding {
        Finding {
            row: row.into(),
            rule: Rule::Finding,
            class: FinalClass::FullConsensus,
            severity: Some(severity),
            severity_disputes: Vec::new(),
            text: "see [x](https://evil.example) @octocat <img src=x>".into(),
            claim: "see x".into(),
            suggested_fix: Some("use `a`".into()),
            source_items: vec!["claude:F-1".into()],
            found_by: vec!["claude".into()],
            agreed_by: vec!["codex".into()],
            disagreed_by: vec!["kimi".into()],
            anchors: vec![at],
            fingerprint: "f:1".into(),
            pre_existing: None,
        }
    }

    #[test]
    fn only_lines_in_the_hunks_take_comments() {
        let mut diff = Commentable::default();
        diff.add("a.py", PATCH);
        assert_eq!(diff.place(&anchor("a.py", 2, 3)), Some((Some(2), 3)));
        assert_eq!(diff.place(&anchor("a.py", 5, 5)), Some((None, 5)));
        // 6..20 is outside every hunk; 21 is in the second one.
        assert_eq!(diff.place(&anchor("a.py", 6, 10)), None);
        assert_eq!(diff.place(&anchor("a.py", 5, 21)), Some((None, 5)));
        assert_eq!(diff.place(&anchor("a.py", 21, 22)), Some((Some(21), 22)));
        assert_eq!(diff.place(&anchor("b.py", 1, 1)), None);
    }

    #[test]
    fn model_text_is_made_inert() {
        let text = neutral("see [x](https://evil.example) ![i](y) @octocat #12 <b>\nwww.x.io `c`");
        assert!(!text.contains("](") || text.contains("\\]("), "{text}");
        assert!(text.contains("\\[x\\]"), "{text}");
        assert!(text.contains("\\!\\[i\\]"), "{text}");
        assert!(text.contains("@\u{200B}octocat"), "{text}");
        assert!(text.contains("#\u{200B}12"), "{text}");
        assert!(text.contains(":\u{200B}//"), "{text}");
        assert!(text.contains("www\u{200B}.x.io"), "{text}");
        assert!(text.contains("&lt;b&gt;"), "{text}");
        assert!(!text.contains('\n'));
        assert!(text.contains("\\`c\\`"), "{text}");
    }

    #[test]
    fn the_review_puts_diff_findings_inline_and_the_rest_in_the_summary() {
        let mut diff = Commentable::default();
        diff.add("a.py", PATCH);
        let inside = finding("C-001", Severity::High, anchor("a.py", 2, 3));
        let outside = finding("C-002", Severity::Critical, anchor("a.py", 8, 8));
        let summary = Summary {
            title: "Review".into(),
            verdict_token: "AT-RISK".into(),
            direction: "revise".into(),
            statement: "Fix it.".into(),
            verification: Verification {
                cross_verified: true,
                headline: "Cross-verified".into(),
                explanation: "2 of 2 reviewers".into(),
            },
            coverage: vec!["claude completed".into()],
            cost: "$0.10".into(),
            commit: "a".repeat(40),
            marker: marker("p/g/t", "r-001"),
            refuted: 1,
        };
        let mut refuted = finding("D-001", Severity::Critical, anchor("a.py", 3, 3));
        refuted.class = FinalClass::Refuted;
        refuted.severity = None;
        let body = review(&summary, &[&inside, &outside, &refuted], &diff);
        assert_eq!(body["event"], "COMMENT");
        assert_eq!(body["commit_id"], "a".repeat(40));
        let comments = body["comments"].as_array().unwrap();
        assert_eq!(comments.len(), 1);
        assert_eq!(comments[0]["path"], "a.py");
        assert_eq!(comments[0]["start_line"], 2);
        assert_eq!(comments[0]["line"], 3);
        let comment = comments[0]["body"].as_str().unwrap();
        assert!(comment.starts_with("**okstra · C-001 · high · full-consensus**"));
        assert!(comment.contains("Found by claude; verified by codex; disputed by kimi"));
        assert!(comment.contains("**Suggested fix:** use \\`a\\`"));
        let text = body["body"].as_str().unwrap();
        assert!(text.starts_with(&summary.marker), "{text}");
        assert!(text.contains("**C-002** · critical"), "{text}");
        assert!(
            text.contains("2 findings: 1 inline below, 1 outside"),
            "{text}"
        );
        // The refuted one sits in the diff but is never an alert.
        assert!(!text.contains("D-001"), "{text}");
        assert!(text.contains("1 refuted claim"), "{text}");

        let many: Vec<Finding> = (0..MAX_COMMENTS + 5)
            .map(|n| finding(&format!("C-{n:03}"), Severity::Low, anchor("a.py", 2, 2)))
            .collect();
        let refs: Vec<&Finding> = many.iter().collect();
        let body = review(&summary, &refs, &diff);
        assert_eq!(body["comments"].as_array().unwrap().len(), MAX_COMMENTS);
        assert!(
            body["body"]
                .as_str()
                .unwrap()
                .contains("5 in the diff beyond the 50-comment limit")
        );
        assert!(body["body"].as_str().unwrap().chars().count() <= MAX_BODY_CHARS);
    }
}
