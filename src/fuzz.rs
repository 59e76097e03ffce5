//! Shared inputs for the property tests of every parser of files a CLI or a
//! user can write (run manifests, sidecars, heartbeats, lead events, run
//! logs, worker results, reports): random bytes, random JSON, and valid
//! samples with random damage. The properties live beside each parser
//! (`lifecycle/proptests.rs`, `report/proptests.rs`, `run_log.rs`).
//!
//! `cargo test` runs a few cases; `PROPTEST_CASES=20000 cargo test proptest`
//! runs a longer campaign.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;

/// Cases per property: few by default, more on demand.
pub fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(48);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Far beyond what parsing a few KiB can take, unless it is not linear.
const BOUND: Duration = Duration::from_secs(2);

/// Run `parse`, failing the case if it takes longer than [`BOUND`] (a panic
/// fails it by itself).
pub fn bounded<T>(parse: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = parse();
    assert!(start.elapsed() < BOUND, "took {:?}", start.elapsed());
    out
}

/// Any JSON value, a few levels deep.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::String),
        "[a-zA-Z_]{1,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,12}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// `sample` (valid input) with up to 8 random edits: bytes replaced,
/// inserted or removed, or the text cut short.
pub fn damaged(sample: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    let edit = (any::<prop::sample::Index>(), any::<u8>(), 0..4_u8);
    (
        prop::collection::vec(edit, 0..8),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(edits, cut)| {
            let mut bytes = sample.to_vec();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    bytes.push(byte);
                    continue;
                }
                let at = at.index(bytes.len());
                match kind {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    2 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, b"{[\"\\,:0e-"[usize::from(byte) % 9]),
                }
            }
            if cut.index(4) == 0 && !bytes.is_empty() {
                let len = cut.index(bytes.len());
                bytes.truncate(len);
            }
            bytes
        })
}

/// Random bytes, biased towards JSON punctuation and newlines.
pub fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            any::<u8>(),
            prop::sample::select(b"{}[]\",:\n0-e.tfn \\".to_vec()),
        ],
        0..512,
    )
}
