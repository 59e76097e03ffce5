//! Severity: the one typed ladder every output ranks findings on, and the
//! documented map from the words workers write to it.
//!
//! The ladder is the report schema's (`$defs/Severity`): `critical` >
//! `high` > `medium` > `low` > `info`. Workers write their result profile's
//! own words; each maps to exactly one rung:
//!
//! | worker word | rung | written by |
//! |---|---|---|
//! | `critical`, `high`, `medium`, `low`, `info` | itself | report rows; any profile |
//! | `blocking` | `critical` | implementation verifiers (`Defects`) |
//! | `major` | `high` | implementation verifiers |
//! | `minor` | `low` | implementation verifiers |
//!
//! An item's severity is the cell under its table's `Severity` column (or,
//! for a table without one, its `Impact` column: the risk tables), or a
//! `severity: <word>` in a list item's text. Anything else has none.
//! [`of_result`] reads every item's severity from a worker's result; the
//! report validator holds each report row at or above the highest of its
//! source items, so the report writer cannot lower a finding past a gate.

use std::collections::HashMap;

use crate::items;
use crate::vocab::Severity;

/// Worker words are read here, not in `vocab`: the ladder is the wire's,
/// the map onto it is this module's.
impl Severity {
    /// The rung a worker's severity word stands for (case and emphasis
    /// ignored); `None` for a word on no ladder.
    pub fn from_worker(word: &str) -> Option<Severity> {
        let word = word
            .trim()
            .trim_matches(|c| c == '`' || c == '*' || c == '_')
            .to_ascii_lowercase();
        match word.as_str() {
            "blocking" => Some(Severity::Critical),
            "major" => Some(Severity::High),
            "minor" => Some(Severity::Low),
            other => other.parse().ok(),
        }
    }
}

/// Each item's severity in one worker result, by item id (items without one
/// are left out).
pub type Severities = HashMap<String, Severity>;

/// Column headers that hold an item's severity, in order of preference.
const COLUMNS: [&str; 2] = ["severity", "impact"];

/// Every item's severity in a worker result's `text`.
pub fn of_result(text: &str) -> Severities {
    // Most results name no severity at all: skip the item parse for them.
    if !mentions_severity(text) {
        return Severities::new();
    }
    of_items(text, &items::parse(text).items)
}

/// Every item's severity in a worker result's `text`, whose items `parsed`
/// are already parsed.
pub fn of_items(text: &str, parsed: &[items::Item]) -> Severities {
    let mut found = Severities::new();
    if !mentions_severity(text) {
        return found;
    }
    let lines: Vec<&str> = text.lines().collect();
    for item in parsed {
        let Some(line) = item.line.checked_sub(1).and_then(|index| lines.get(index)) else {
            continue;
        };
        let severity = if line.trim_start().starts_with('|') {
            table_severity(&lines, item.line - 1)
        } else {
            inline_severity(&item.text)
        };
        if let Some(severity) = severity {
            found.insert(item.id.clone(), severity);
        }
    }
    found
}

/// Whether `text` has the word `severity` or `impact` anywhere (ASCII case
/// ignored): the cheap test before the item parse.
fn mentions_severity(text: &str) -> bool {
    let bytes = text.as_bytes();
    COLUMNS.iter().any(|word| {
        bytes
            .windows(word.len())
            .any(|window| window.eq_ignore_ascii_case(word.as_bytes()))
    })
}

/// The cells of a table row, without the outer pipes, trimmed.
fn cells(row: &str) -> Vec<&str> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    row.split('|').map(str::trim).collect()
}

/// Whether `line` is a table's separator row (`|---|:--|`).
fn is_separator(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('|')
        && line.contains('-')
        && line
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// The severity of the table row at `lines[index]`: the cell under the
/// table's severity column, found from the header above the separator.
fn table_severity(lines: &[&str], index: usize) -> Option<Severity> {
    let mut at = index;
    while at > 0 {
        at -= 1;
        let line = lines[at].trim();
        if !line.starts_with('|') {
            return None;
        }
        if is_separator(line) {
            let header = cells(lines.get(at.checked_sub(1)?)?);
            let column = COLUMNS.iter().find_map(|wanted| {
                header
                    .iter()
                    .position(|cell| cell.trim_matches('*').eq_ignore_ascii_case(wanted))
            })?;
            return cells(lines[index])
                .get(column)
                .and_then(|cell| Severity::from_worker(cell));
        }
    }
    None
}

/// `severity: high` (or `Severity — major`) in a list item's text.
fn inline_severity(text: &str) -> Option<Severity> {
    let lower = text.to_ascii_lowercase();
    let at = lower.find("severity")?;
    let rest = &text[at + "severity".len()..];
    let word = rest
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | '—' | '*' | '='))
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()?;
    Severity::from_worker(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_is_ordered_and_the_worker_words_map_onto_it() {
        assert!(Severity::Critical > Severity::High);
        assert!(Severity::Low > Severity::Info);
        for (word, rung) in [
            ("critical", Severity::Critical),
            ("blocking", Severity::Critical),
            ("High", Severity::High),
            ("**major**", Severity::High),
            ("medium", Severity::Medium),
            ("`minor`", Severity::Low),
            ("low", Severity::Low),
            ("info", Severity::Info),
        ] {
            assert_eq!(Severity::from_worker(word), Some(rung), "{word}");
        }
        for word in ["", "urgent", "confirmed", "yes"] {
            assert_eq!(Severity::from_worker(word), None, "{word}");
        }
        assert_eq!(
            "severe".parse::<Severity>().unwrap_err(),
            "info|low|medium|high|critical"
        );
    }

    #[test]
    fn items_take_the_cell_under_their_tables_severity_column() {
        let text = "\
## 3. Defects

| ID | Defect | Location | Severity | Evidence |
|----|--------|----------|----------|----------|
| D-001 | holds counted | src/a.rs:1 | major | low risk of data loss |
| D-002 | typo | src/b.rs:2 | minor | a.rs:3 |
| D-003 | no severity given | src/b.rs:2 | | |

## 6. Risks

| ID | Risk | Likelihood | Impact | Mitigation |
|---|---|---|---|---|
| K-1 | data loss | low | high | back up |

## 5. Recommendations

| ID | Recommendation | Effort |
|---|---|---|
| R-1 | add a lock | high |

- [L-1] the cache leaks, severity: medium
- [L-2] nothing said about it
";
        let found = of_result(text);
        let mut pairs: Vec<(&str, Severity)> =
            found.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            vec![
                ("D-001", Severity::High),
                ("D-002", Severity::Low),
                ("K-1", Severity::High),
                ("L-1", Severity::Medium),
            ]
        );
        assert!(of_result("| F-1 | a finding | high |").is_empty());
    }
}
