//! Unit tests of the report module: schema versions, levels and loading.

use super::*;

#[test]
fn v1_and_v2_schemas_differ_only_in_version_header_and_verdict_tokens() {
    let load = |name: &str| -> Value { serde_json::from_str(schema::text(name).unwrap()).unwrap() };
    let mut v1 = load("final-report-v1.0.schema.json");
    let mut v2 = load("final-report-v2.0.schema.json");
    assert_eq!(
        v1.pointer("/properties/schemaVersion/const").unwrap(),
        "1.0"
    );
    assert_eq!(
        v2.pointer("/properties/schemaVersion/const").unwrap(),
        "2.0"
    );
    assert_eq!(
        v2.pointer("/$defs/Header/properties/reportOwner/const")
            .unwrap(),
        "Okstra lead"
    );
    for schema in [&mut v1, &mut v2] {
        let root = schema.as_object_mut().unwrap();
        root.remove("$id");
        root.remove("title");
        root["properties"]["schemaVersion"] = Value::Null;
        root["$defs"]["Header"]["properties"]["reportOwner"] = Value::Null;
        root["$defs"]["Header"]["properties"]["reportAuthor"] = Value::Null;
    }
    // v2 closes each task type's verdict tokens; v1 reports keep any token.
    let root = v2.as_object_mut().unwrap();
    assert!(root.remove("allOf").is_some());
    assert!(
        root["$defs"]
            .as_object_mut()
            .unwrap()
            .remove("VerdictTokens")
            .is_some()
    );
    assert_eq!(v1, v2);
}

/// 2.1 is 2.0 plus one required top-level block (`reliability`), one
/// optional ones (`landing`, `verification`), one more convergence class
/// (`unverifiable`), optional row fields (a severity on difference
/// rows, a suggested fix on both), an error-analysis task's optional
/// `openQuestions`, and two more usage sources
/// (`not-applicable` for a part no model did, `complete` for a whole
/// summary): additive, nothing else moves but descriptions.
#[test]
fn v2_1_is_v2_0_plus_reliability_landing_verification_and_a_class() {
    let load = |name: &str| -> Value { serde_json::from_str(schema::text(name).unwrap()).unwrap() };
    let v20 = load("final-report-v2.0.schema.json");
    let mut v21 = load("final-report-v2.1.schema.json");
    assert_eq!(
        v21.pointer("/properties/schemaVersion/const").unwrap(),
        "2.1"
    );
    let root = v21.as_object_mut().unwrap();
    for key in ["$id", "title", "description"] {
        root[key] = v20[key].clone();
    }
    root["properties"]["schemaVersion"] = v20["properties"]["schemaVersion"].clone();
    let properties = root["properties"].as_object_mut().unwrap();
    for name in ["reliability", "landing", "verification"] {
        assert!(properties.remove(name).is_some(), "{name}");
    }
    let required = root["required"].as_array_mut().unwrap();
    assert_eq!(required.pop().unwrap(), "reliability");
    let defs = root["$defs"].as_object_mut().unwrap();
    for name in [
        "Reliability",
        "ReliabilityReason",
        "ReliabilityRound",
        "UsageEstimate",
        "EstimateRange",
        "Landing",
        "Verification",
        "CheckedEvidence",
        "VerifiedItem",
        "Review",
        "AnchorStatus",
        "Anchor",
    ] {
        assert!(defs.remove(name).is_some(), "{name}");
    }
    for (row, field) in [
        ("ConsensusRow", "suggestedFix"),
        ("DifferenceRow", "severity"),
        ("DifferenceRow", "suggestedFix"),
        ("UsageSummary", "estimate"),
        ("TaskErrorAnalysis", "openQuestions"),
    ] {
        let properties = defs[row]["properties"].as_object_mut().unwrap();
        assert!(properties.remove(field).is_some(), "{row}.{field}");
    }
    let convergence = defs["Convergence"].as_object_mut().unwrap();
    assert!(convergence.remove("description").is_some());
    let classes = convergence["enum"].as_array_mut().unwrap();
    assert_eq!(classes.pop().unwrap(), "unverifiable");
    let sources = defs["TokenUsage"]["properties"]["source"]["enum"]
        .as_array_mut()
        .unwrap();
    assert_eq!(sources.pop().unwrap(), "not-applicable");
    let summary = defs["UsageSummary"]["properties"]["source"]["enum"]
        .as_array_mut()
        .unwrap();
    assert_eq!(summary.remove(0), "complete");
    // Only the descriptions of what okstra now writes itself changed.
    for pointer in [
        "/TokenUsage/properties/source/description",
        "/UsageSummary/properties/source/description",
        "/UsageSummary/description",
        "/WorkerCoverage/description",
    ] {
        let pointer = format!("/$defs{pointer}");
        *v21.pointer_mut(&pointer).unwrap() = v20.pointer(&pointer).unwrap().clone();
    }
    assert_eq!(v21, v20);
}

/// 2.2 is 2.1 plus one convergence class (`refuted`) and, in okstra's
/// `verification` block, the counted credits: `withdrawn`, `mergedWith`,
/// `agreedBy`, `disagreedBy`, `severity`, `severityDisputes` on each item
/// and `uncounted` on each review: additive, nothing else moves but
/// descriptions.
#[test]
fn v2_2_is_v2_1_plus_refuted_and_the_counted_credits() {
    let load = |name: &str| -> Value { serde_json::from_str(schema::text(name).unwrap()).unwrap() };
    let v21 = load("final-report-v2.1.schema.json");
    let mut v22 = load("final-report-v2.2.schema.json");
    assert_eq!(
        v22.pointer("/properties/schemaVersion/const").unwrap(),
        "2.2"
    );
    let root = v22.as_object_mut().unwrap();
    for key in ["$id", "title", "description"] {
        root[key] = v21[key].clone();
    }
    root["properties"]["schemaVersion"] = v21["properties"]["schemaVersion"].clone();
    let defs = root["$defs"].as_object_mut().unwrap();
    assert!(defs.remove("SeverityDispute").is_some());
    let item = defs["VerifiedItem"]["properties"].as_object_mut().unwrap();
    for field in [
        "withdrawn",
        "mergedWith",
        "agreedBy",
        "disagreedBy",
        "severity",
        "severityDisputes",
    ] {
        assert!(item.remove(field).is_some(), "{field}");
    }
    let review = defs["Review"]["properties"].as_object_mut().unwrap();
    assert!(review.remove("uncounted").is_some());
    let classes = defs["Convergence"]["enum"].as_array_mut().unwrap();
    assert_eq!(classes.pop().unwrap(), "refuted");
    for pointer in [
        "/Convergence/description",
        "/VerifiedItem/properties/foundBy/description",
        "/VerifiedItem/properties/corroboratedBy",
        "/Review/properties/counted/description",
    ] {
        let pointer = format!("/$defs{pointer}");
        *v22.pointer_mut(&pointer).unwrap() = v21.pointer(&pointer).unwrap().clone();
    }
    assert_eq!(v22, v21);
}

#[test]
fn every_listed_version_has_its_schema_and_the_last_is_current() {
    for (version, file) in SCHEMAS {
        let schema: Value = serde_json::from_str(schema::text(file).unwrap()).unwrap();
        assert_eq!(
            schema.pointer("/properties/schemaVersion/const"),
            Some(&Value::from(*version)),
            "{file}"
        );
    }
    assert_eq!(CURRENT, ("2.2", "final-report-v2.2.schema.json"));
    assert!(is_at_least("2.2", RELIABILITY_SINCE));
    assert!(is_at_least("2.1", RELIABILITY_SINCE));
    assert!(!is_at_least("2.0", RELIABILITY_SINCE));
    assert!(!is_at_least("9.9", RELIABILITY_SINCE));
    assert_eq!(schema_of("2.0"), Some("final-report-v2.0.schema.json"));
    assert_eq!(schema_of("3.0"), None);
}
