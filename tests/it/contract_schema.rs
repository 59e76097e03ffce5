//! Walking a JSON Schema for the contract test: does a field path such as
//! `dispatches[].usage` or `workers.<dispatch name>.usage` name a field,
//! following `$ref`s, combinators and `if`/`then` branches.

use std::collections::BTreeSet;

use serde_json::Value;

/// `a.b[].c` → `["a", "b", "[]", "c"]`.
pub fn path_segments(path: &str) -> Vec<String> {
    let mut segments = Vec::new();
    for part in path.split('.') {
        match part.split_once('[') {
            Some((name, _)) => {
                segments.push(name.to_owned());
                segments.push("[]".to_owned());
            }
            None => segments.push(part.to_owned()),
        }
    }
    segments
}

/// A node with its `$ref`s and combinator branches followed.
fn expand<'a>(root: &'a Value, node: &'a Value, out: &mut Vec<&'a Value>, depth: u32) {
    if depth > 12 {
        return;
    }
    out.push(node);
    if let Some(reference) = node["$ref"].as_str().and_then(|r| r.strip_prefix('#'))
        && let Some(target) = root.pointer(reference)
    {
        expand(root, target, out, depth + 1);
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for branch in node[key].as_array().into_iter().flatten() {
            expand(root, branch, out, depth + 1);
        }
    }
    for key in ["then", "else"] {
        if node[key].is_object() {
            expand(root, &node[key], out, depth + 1);
        }
    }
}

/// Every node of a schema from which a path may start.
pub fn all_nodes<'a>(node: &'a Value, out: &mut Vec<&'a Value>, depth: u32) {
    if depth > 40 {
        return;
    }
    match node {
        Value::Object(map) => {
            out.push(node);
            for value in map.values() {
                all_nodes(value, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for value in items {
                all_nodes(value, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// The nodes `segments` reach from `start` (empty when the path breaks).
pub fn resolve<'a>(root: &'a Value, start: &'a Value, segments: &[String]) -> Vec<&'a Value> {
    let mut current = vec![start];
    for segment in segments {
        let mut next = Vec::new();
        for node in current {
            let mut expanded = Vec::new();
            expand(root, node, &mut expanded, 0);
            for node in expanded {
                if segment == "[]" {
                    if node["items"].is_object() {
                        next.push(&node["items"]);
                    }
                } else if segment.starts_with('<') {
                    if node["additionalProperties"].is_object() {
                        next.push(&node["additionalProperties"]);
                    }
                    if let Some(map) = node["patternProperties"].as_object() {
                        next.extend(map.values());
                    }
                } else if let Some(child) = node["properties"].get(segment.as_str()) {
                    next.push(child);
                }
            }
        }
        if next.is_empty() {
            return next;
        }
        current = next;
    }
    current
}

/// The string values of an `enum` (null left out).
pub fn enum_of(node: &Value) -> BTreeSet<String> {
    node["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no enum in {node}"))
        .iter()
        .filter_map(|value| value.as_str().map(str::to_owned))
        .collect()
}
