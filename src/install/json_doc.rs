//! A JSON settings file edited without disturbing it: objects keep their key
//! order (`serde_json`'s `Value` would sort them), so merging a hook into a
//! user's `settings.json` changes only the lines of that hook.
//!
//! [`merge_hook`] and [`unmerge_hook`] add and remove one hook group under
//! `hooks.<Event>[]`, the shape Claude Code and Codex share. They refuse a
//! file whose `hooks` or `hooks.<Event>` has another shape rather than guess.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

/// A JSON value whose objects remember their key order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// A settings file that does not have the shape a hook needs.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("the top level is not a JSON object")]
    NotObject,
    #[error("`hooks` is not a JSON object")]
    HooksNotObject,
    #[error("`hooks.{0}` is not a JSON array")]
    EventNotArray(String),
}

impl Json {
    /// Parse strict JSON (no comments, no trailing commas).
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Pretty-printed with two spaces, as Claude Code and Codex write it.
    pub fn to_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("an in-memory JSON value always serializes")
    }

    /// The same value as a `serde_json::Value` (for comparisons that ignore key order).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an in-memory JSON value always converts")
    }

    /// Build from a `serde_json::Value` (its objects' order is whatever it holds).
    #[cfg(test)]
    pub fn from_value(value: &Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn remove(&mut self, key: &str) {
        if let Json::Object(entries) = self {
            entries.retain(|(k, _)| k != key);
        }
    }

    fn is_empty_container(&self) -> bool {
        matches!(self, Json::Object(e) if e.is_empty())
            || matches!(self, Json::Array(a) if a.is_empty())
    }
}

/// Append `group` to `hooks.<event>` unless an equal group is already there.
/// Returns whether the document changed.
pub fn merge_hook(doc: &mut Json, event: &str, group: &Json) -> Result<bool, ShapeError> {
    let Json::Object(top) = doc else {
        return Err(ShapeError::NotObject);
    };
    if !top.iter().any(|(k, _)| k == "hooks") {
        top.push(("hooks".to_owned(), Json::Object(Vec::new())));
    }
    let hooks = doc.get_mut("hooks").expect("`hooks` was just ensured");
    let Json::Object(events) = hooks else {
        return Err(ShapeError::HooksNotObject);
    };
    if !events.iter().any(|(k, _)| k == event) {
        events.push((event.to_owned(), Json::Array(Vec::new())));
    }
    let list = hooks.get_mut(event).expect("the event was just ensured");
    let Json::Array(groups) = list else {
        return Err(ShapeError::EventNotArray(event.to_owned()));
    };
    let wanted = group.to_value();
    if groups.iter().any(|existing| existing.to_value() == wanted) {
        return Ok(false);
    }
    groups.push(group.clone());
    Ok(true)
}

/// Remove every group equal to `group` from `hooks.<event>`, then the event
/// and `hooks` themselves if that left them empty. Returns whether the
/// document changed. A document of another shape is left as it is.
pub fn unmerge_hook(doc: &mut Json, event: &str, group: &Value) -> bool {
    let Some(hooks) = doc.get_mut("hooks") else {
        return false;
    };
    let Some(Json::Array(groups)) = hooks.get_mut(event) else {
        return false;
    };
    let before = groups.len();
    groups.retain(|existing| existing.to_value() != *group);
    if groups.len() == before {
        return false;
    }
    if hooks
        .get_mut(event)
        .is_some_and(|list| list.is_empty_container())
    {
        hooks.remove(event);
    }
    if doc.get_mut("hooks").is_some_and(|h| h.is_empty_container()) {
        doc.remove("hooks");
    }
    true
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot represent"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    const USER: &str = r#"{
  "model": "opus",
  "env": {
    "Z": "1",
    "A": "2"
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  },
  "ratio": 1.5
}"#;

    fn ours() -> Value {
        json!({"hooks": [{"type": "command", "command": "okstra reap --execute", "timeout": 60}]})
    }

    #[test]
    fn parsing_and_printing_keeps_order_and_bytes() {
        assert_eq!(Json::parse(USER).unwrap().to_pretty(), USER);
    }

    #[test]
    fn merge_appends_once_and_unmerge_restores() {
        let mut doc = Json::parse(USER).unwrap();
        assert!(merge_hook(&mut doc, "Stop", &Json::from_value(&ours())).unwrap());
        assert!(merge_hook(&mut doc, "SubagentStop", &Json::from_value(&ours())).unwrap());
        assert!(!merge_hook(&mut doc, "Stop", &Json::from_value(&ours())).unwrap());
        let merged = doc.to_pretty();
        assert!(merged.contains("notify-send done"));
        assert!(merged.find("\"model\"").unwrap() < merged.find("\"env\"").unwrap());
        assert!(unmerge_hook(&mut doc, "Stop", &ours()));
        assert!(unmerge_hook(&mut doc, "SubagentStop", &ours()));
        assert!(!unmerge_hook(&mut doc, "Stop", &ours()));
        assert_eq!(doc.to_pretty(), USER);
    }

    #[test]
    fn an_empty_document_gains_and_loses_hooks_entirely() {
        let mut doc = Json::Object(Vec::new());
        merge_hook(&mut doc, "Stop", &Json::from_value(&ours())).unwrap();
        assert_eq!(doc.to_value(), json!({"hooks": {"Stop": [ours()]}}));
        unmerge_hook(&mut doc, "Stop", &ours());
        assert_eq!(doc, Json::Object(Vec::new()));
    }

    #[test]
    fn other_shapes_are_refused() {
        let mut doc = Json::parse("[]").unwrap();
        assert!(matches!(
            merge_hook(&mut doc, "Stop", &Json::from_value(&ours())),
            Err(ShapeError::NotObject)
        ));
        let mut doc = Json::parse(r#"{"hooks": []}"#).unwrap();
        assert!(matches!(
            merge_hook(&mut doc, "Stop", &Json::from_value(&ours())),
            Err(ShapeError::HooksNotObject)
        ));
        let mut doc = Json::parse(r#"{"hooks": {"Stop": {}}}"#).unwrap();
        assert!(matches!(
            merge_hook(&mut doc, "Stop", &Json::from_value(&ours())),
            Err(ShapeError::EventNotArray(_))
        ));
    }
}
