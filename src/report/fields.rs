//! The fields a report writer authors, as a compact digest generated from
//! the report's JSON Schema: what the writer needs of the 45 KB schema
//! (names, required or optional, types, closed lists, patterns, a first
//! sentence of description), for one task type, without the blocks okstra
//! writes itself ([`OWN_BLOCKS`]). Generated, so it can never drift from
//! the schema `okstra validate` applies.
//!
//! One line per field, indented by nesting: `name: shape`, `name?:` when
//! optional; `list of` (with `1+` when it may not be empty); alternatives
//! joined by ` | `; `text` a non-empty string; `/…/` a pattern.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::catalog::TaskType;

/// The top-level blocks okstra computes from the run's records and writes
/// into data.json itself: no author writes them.
pub const OWN_BLOCKS: [&str; 5] = [
    "reliability",
    "verification",
    "workerCoverage",
    "usageSummary",
    "landing",
];

/// The digest of the fields an author of a `task_type` report writes,
/// from the embedded schema `schema_name`.
pub fn digest(schema_name: &str, task_type: TaskType) -> Result<String> {
    let text = crate::schema::text(schema_name)?;
    let schema: Value = serde_json::from_str(text)
        .with_context(|| format!("the embedded schema `{schema_name}` is not JSON"))?;
    let walker = Walker {
        root: &schema,
        task_type: task_type.as_str(),
    };
    let mut out = String::new();
    walker.object(&schema, 0, &mut out);
    Ok(out)
}

struct Walker<'a> {
    root: &'a Value,
    task_type: &'a str,
}

/// Deepest nesting shown: the schema is shallower; this only bounds a
/// schema that refers to itself.
const MAX_DEPTH: usize = 8;

impl Walker<'_> {
    /// `node` with every `$ref` followed.
    fn resolve<'v>(&'v self, mut node: &'v Value) -> &'v Value {
        for _ in 0..MAX_DEPTH {
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(found) = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
            else {
                break;
            };
            node = found;
        }
        node
    }

    /// The node a property stands for: the task block and the verdict
    /// token of this task type, else the property's own.
    fn property<'v>(&'v self, name: &str, node: &'v Value) -> &'v Value {
        let defs = &self.root["$defs"];
        match name {
            "task" => {
                let block = format!("Task{}", camel(self.task_type));
                defs.get(&block).unwrap_or(node)
            }
            "verdictToken" => defs
                .get("VerdictTokens")
                .and_then(|tokens| tokens.get(self.task_type))
                .unwrap_or(node),
            _ => node,
        }
    }

    /// Each property of object `node`, one per line at `depth`.
    fn object(&self, node: &Value, depth: usize, out: &mut String) {
        let node = self.resolve(node);
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, property) in properties {
            if depth == 0 && OWN_BLOCKS.contains(&name.as_str()) {
                continue;
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let _ = write!(out, "{}{name}{optional}:", "  ".repeat(depth));
            if name == "taskType" {
                // The header's and the task block's: this run's.
                let _ = writeln!(out, " \"{}\"", self.task_type);
                continue;
            }
            let raw = self.property(name, property);
            let said = if raw.get("description").is_some() {
                note(raw)
            } else {
                note(self.resolve(raw))
            };
            self.value(self.resolve(raw), depth, &said, out);
        }
    }

    /// The shape of `node` after `name:` on the current line, and its
    /// nested fields on the next lines.
    fn value(&self, node: &Value, depth: usize, said: &str, out: &mut String) {
        let node = self.resolve(node);
        if depth >= MAX_DEPTH {
            out.push_str(" …\n");
            return;
        }
        if let Some(alternatives) = node.get("oneOf").and_then(Value::as_array) {
            let shapes: Vec<&Value> = alternatives.iter().map(|a| self.resolve(a)).collect();
            if shapes.iter().all(|shape| !is_object(shape)) {
                let words: Vec<String> = shapes.iter().map(|shape| self.simple(shape)).collect();
                let _ = writeln!(out, " {}{said}", words.join(" | "));
            } else {
                let _ = writeln!(out, " one of{said}");
                for shape in shapes {
                    let _ = write!(out, "{}- ", "  ".repeat(depth + 1));
                    let mut inner = String::new();
                    self.object(shape, depth + 2, &mut inner);
                    out.push_str(inner.trim_start_matches(' '));
                }
            }
            return;
        }
        if node.get("type").and_then(Value::as_str) == Some("array") {
            let least = node.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = self.resolve(node.get("items").unwrap_or(&Value::Null));
            let plural = if least > 0 {
                format!("list ({least}+) of")
            } else {
                "list of".to_owned()
            };
            if is_object(items) || items.get("oneOf").is_some() {
                let _ = write!(out, " {plural}");
                if is_object(items) {
                    let _ = writeln!(out, "{said}");
                    self.object(items, depth + 1, out);
                } else {
                    self.value(items, depth, said, out);
                }
            } else {
                let _ = writeln!(out, " {plural} {}{said}", self.simple(items));
            }
            return;
        }
        if is_object(node) {
            let _ = writeln!(out, "{said}");
            self.object(node, depth + 1, out);
            return;
        }
        let _ = writeln!(out, " {}{said}", self.simple(node));
    }

    /// A scalar's shape in a few words.
    fn simple(&self, node: &Value) -> String {
        let node = self.resolve(node);
        if let Some(constant) = node.get("const") {
            return constant.to_string();
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            let words: Vec<String> = values
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            return words.join(" | ");
        }
        match node.get("type").and_then(Value::as_str) {
            Some("string") => match node.get("pattern").and_then(Value::as_str) {
                Some(pattern) => format!("/{pattern}/"),
                None if node.get("minLength").and_then(Value::as_u64).unwrap_or(0) > 0 => {
                    "text".to_owned()
                }
                None => "text (may be empty)".to_owned(),
            },
            Some("integer") => match node.get("minimum").and_then(Value::as_i64) {
                Some(minimum) => format!("integer ≥ {minimum}"),
                None => "integer".to_owned(),
            },
            Some("number") => "number".to_owned(),
            Some("boolean") => "true | false".to_owned(),
            Some("null") => "null".to_owned(),
            _ => "any".to_owned(),
        }
    }
}

fn is_object(node: &Value) -> bool {
    node.get("type").and_then(Value::as_str) == Some("object") || node.get("properties").is_some()
}

/// ` — <the first sentence of its description>`, or nothing.
fn note(node: &Value) -> String {
    let Some(description) = node.get("description").and_then(Value::as_str) else {
        return String::new();
    };
    // The first `. ` that ends a sentence (not `e.g. `).
    let mut end = description.len();
    let mut from = 0;
    while let Some(at) = description[from..].find(". ") {
        let at = from + at;
        if !description[..at].ends_with("e.g") && !description[..at].ends_with("i.e") {
            end = at;
            break;
        }
        from = at + 2;
    }
    format!(" — {}", description[..end].trim().trim_end_matches('.'))
}

/// `project-analysis` → `ProjectAnalysis`.
fn camel(kebab: &str) -> String {
    kebab
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// The digest lines of the fields the JSON `pointers` name (their top-level
/// field and everything under it), for a repair that needs only those.
pub fn lines_for<'d>(digest: &'d str, pointers: &[&str]) -> Vec<&'d str> {
    let tops: Vec<&str> = pointers
        .iter()
        .filter_map(|pointer| pointer.trim_start_matches('/').split('/').next())
        .filter(|top| !top.is_empty())
        .collect();
    let mut shown = Vec::new();
    let mut inside = false;
    for line in digest.lines() {
        if !line.starts_with(' ') && !line.starts_with('-') {
            let name = line.split([':', '?']).next().unwrap_or_default();
            inside = tops.contains(&name);
        }
        if inside {
            shown.push(line);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = crate::report::CURRENT.1;

    #[test]
    fn the_digest_names_every_authored_field_of_the_schema_and_no_block_of_okstra() {
        let schema: Value = serde_json::from_str(crate::schema::text(SCHEMA).unwrap()).unwrap();
        for &task_type in TaskType::ALL {
            let digest = digest(SCHEMA, task_type).unwrap();
            let top: Vec<&str> = digest
                .lines()
                .filter(|line| !line.starts_with(' '))
                .map(|line| line.split([':', '?']).next().unwrap())
                .collect();
            let authored: Vec<&str> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|name| !OWN_BLOCKS.contains(name))
                .collect();
            assert_eq!(top, authored, "{task_type}");
            // This task type's block and verdict tokens, no other's.
            assert!(
                digest.contains(&format!("  taskType: \"{task_type}\"")),
                "{task_type}:\n{digest}"
            );
            let tokens = schema["$defs"]["VerdictTokens"][task_type.as_str()]["enum"]
                .as_array()
                .unwrap();
            let listed = tokens
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" | ");
            assert!(
                digest.contains(&format!("  verdictToken: {listed}\n")),
                "{task_type}:\n{digest}"
            );
            assert!(digest.len() < 6_000, "{task_type}: {} bytes", digest.len());
        }
    }

    #[test]
    fn the_digest_reads_as_fields_with_their_shapes() {
        let digest = digest(SCHEMA, TaskType::ProjectAnalysis).unwrap();
        for line in [
            "schemaVersion: \"2.2\"\n",
            "  reportOwner: \"Okstra lead\"\n",
            "  reportAuthor: Okstra lead | report-writer\n",
            "consensus: list of\n",
            "  id: /^C-[0-9]{3,}$/\n",
            "  severity?: critical | high | medium | low | info\n",
            "  components: list (1+) of\n",
            "    name: text\n",
            "recommendedNextSteps: list (1+) of one of\n",
            "  - kind: \"phase\"\n",
            "  nextRecommendedPhase: requirements-discovery | error-analysis",
            "  taskType: \"project-analysis\"\n",
            "  location: text — Where the evidence is, e.g. `src/main.rs:42`\n",
            "  severity?: critical | high | medium | low | info — How severe the disputed finding is",
        ] {
            assert!(digest.contains(line), "missing `{line}` in:\n{digest}");
        }
        assert!(!digest.contains("usageSummary"));
    }

    #[test]
    fn a_repair_sees_the_lines_of_the_fields_it_must_fix() {
        let digest = digest(SCHEMA, TaskType::ProjectAnalysis).unwrap();
        let lines = lines_for(&digest, &["/verdictCard/verdictToken", "/consensus/2/id"]);
        assert!(
            lines.iter().any(|l| l.starts_with("verdictCard:")),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.starts_with("consensus:")));
        assert!(!lines.iter().any(|l| l.starts_with("header:")));
        assert!(lines_for(&digest, &[""]).is_empty());
    }
}
