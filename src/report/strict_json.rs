//! Parsing a report into a `serde_json::Value`, strictly and within a
//! memory budget.
//!
//! `serde_json` keeps the last of two equal keys in an object without a word;
//! in a report that hides a value the author wrote (a second `verdict`
//! wins). So a duplicated key is an error here, reported with its line.
//!
//! Memory: a `Value` costs 32 bytes (plus its array or map slot) whatever
//! the text it came from, so a report of tiny values (`[0,0,0,…]`: 2 bytes
//! each) would grow to 16× its size and more. The parse counts values and
//! stops past one per [`BYTES_PER_VALUE`] bytes of input, which keeps the
//! tree within a small multiple of the file (real reports are prose: one
//! value per 20 bytes or more).

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Least input bytes per parsed value accepted.
pub const BYTES_PER_VALUE: usize = 8;
/// Values always allowed, however small the file.
const MIN_VALUES: usize = 4096;

/// Parse `bytes` into a `Value`, refusing duplicate object keys and more
/// values than the input's size allows.
pub fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut budget = Budget {
        left: (bytes.len() / BYTES_PER_VALUE).max(MIN_VALUES),
        max: (bytes.len() / BYTES_PER_VALUE).max(MIN_VALUES),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Seed(&mut budget).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

struct Budget {
    left: usize,
    max: usize,
}

impl Budget {
    fn take<E: de::Error>(&mut self) -> Result<(), E> {
        if self.left == 0 {
            return Err(E::custom(format_args!(
                "more than {} values (one per {BYTES_PER_VALUE} bytes of the file); okstra \
                 refuses reports made mostly of tiny values",
                self.max
            )));
        }
        self.left -= 1;
        Ok(())
    }
}

struct Seed<'a>(&'a mut Budget);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        self.0.take()?;
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed(&mut *self.0))? {
            items.push(item);
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key `{}` in an object",
                    crate::fsread::escape(&key)
                )));
            }
            let value = map.next_value_seed(Seed(&mut *self.0))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_serde_json() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u00e9"}"#;
        assert_eq!(
            from_slice(text.as_bytes()).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert!(from_slice(b"{} x").is_err());
        assert!(from_slice(b"").is_err());
    }

    #[test]
    fn duplicate_keys_are_errors_at_any_depth() {
        let err = from_slice(b"{\"a\":1,\n\"a\":2}").unwrap_err();
        assert!(err.to_string().contains("duplicate key `a`"), "{err}");
        assert_eq!(err.line(), 2);
        assert!(from_slice(br#"{"x":[{"k":1,"k":1}]}"#).is_err());
        assert!(from_slice(br#"{"a":{"k":1},"b":{"k":1}}"#).is_ok());
    }

    #[test]
    fn tiny_values_past_the_budget_are_refused() {
        let zeros = format!("[{}0]", "0,".repeat(100_000));
        let err = from_slice(zeros.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("more than"), "{err}");
        let prose = format!("[{}\"x\"]", "\"some words of prose\",".repeat(100_000));
        assert!(from_slice(prose.as_bytes()).is_ok());
    }
}
