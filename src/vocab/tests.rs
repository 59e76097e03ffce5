//! Each closed set against the lists its schemas hold, so that a word added
//! on one side and not the other fails here rather than in a user's run.

use std::collections::BTreeSet;
use std::fmt::Display;

use serde_json::Value;

use super::*;

/// The words of the `enum` at `pointer` in the embedded schema `schema`
/// (`null`, which some lists allow for an absent value, left out).
fn schema_words(schema: &str, pointer: &str) -> BTreeSet<String> {
    let text = crate::schema::text(schema).unwrap_or_else(|e| panic!("{e}"));
    let value: Value = serde_json::from_str(text).expect("the embedded schemas are JSON");
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{schema} has no list at {pointer}"))
        .iter()
        .filter(|word| !word.is_null())
        .map(|word| {
            word.as_str()
                .unwrap_or_else(|| panic!("{schema}{pointer} holds {word}, not a word"))
                .to_owned()
        })
        .collect()
}

fn ours<T: Display>(all: &[T]) -> BTreeSet<String> {
    all.iter().map(ToString::to_string).collect()
}

/// Asserts the set equals the list at each `(schema, pointer)`.
fn assert_in_sync<T: Display>(all: &[T], places: &[(&str, &str)]) {
    let ours = ours(all);
    for (schema, pointer) in places {
        assert_eq!(schema_words(schema, pointer), ours, "{schema}{pointer}");
    }
}

#[test]
fn verdicts_match_the_schemas() {
    assert_in_sync(
        Verdict::ALL,
        &[
            (
                "convergence-ledger.schema.json",
                "/$defs/verdict/properties/verdict/enum",
            ),
            (
                "round-plan.schema.json",
                "/properties/items/items/properties/previousVerdicts/items/properties/verdict/enum",
            ),
            (
                "final-report-v2.2.schema.json",
                "/$defs/Review/properties/verdict/enum",
            ),
        ],
    );
}

#[test]
fn final_classes_match_the_schemas() {
    assert_in_sync(
        FinalClass::ALL,
        &[
            (
                "convergence-ledger.schema.json",
                "/$defs/item/properties/finalClass/enum",
            ),
            ("final-report-v2.2.schema.json", "/$defs/Convergence/enum"),
            (
                "report-inputs.schema.json",
                "/properties/findings/items/properties/convergence/enum",
            ),
        ],
    );
}

#[test]
fn stop_reasons_match_the_ledger_schema() {
    assert_in_sync(
        StopReason::ALL,
        &[(
            "convergence-ledger.schema.json",
            "/properties/stoppedBecause/enum",
        )],
    );
}

#[test]
fn severities_match_the_schemas() {
    assert_in_sync(
        Severity::ALL,
        &[
            ("final-report-v2.2.schema.json", "/$defs/Severity/enum"),
            (
                "report-inputs.schema.json",
                "/properties/findings/items/properties/severity/enum",
            ),
        ],
    );
}

#[test]
fn anchor_statuses_match_the_schemas() {
    assert_in_sync(
        AnchorStatus::ALL,
        &[
            ("convergence-ledger.schema.json", "/$defs/anchorStatus/enum"),
            ("round-plan.schema.json", "/$defs/anchorStatus/enum"),
            ("final-report-v2.2.schema.json", "/$defs/AnchorStatus/enum"),
        ],
    );
    // One anchor is found or not; `none` is an item's, with no anchor at all.
    let one_anchor: Vec<AnchorStatus> = AnchorStatus::ALL
        .iter()
        .copied()
        .filter(|status| *status != AnchorStatus::None)
        .collect();
    assert_in_sync(
        &one_anchor,
        &[
            (
                "convergence-ledger.schema.json",
                "/$defs/anchor/properties/status/enum",
            ),
            (
                "round-plan.schema.json",
                "/$defs/anchor/properties/status/enum",
            ),
            (
                "final-report-v2.2.schema.json",
                "/$defs/Anchor/properties/status/enum",
            ),
        ],
    );
}

#[test]
fn reliability_reasons_match_the_report_schema() {
    assert_in_sync(
        ReliabilityReason::ALL,
        &[(
            "final-report-v2.2.schema.json",
            "/$defs/ReliabilityReason/enum",
        )],
    );
}

#[test]
fn next_states_match_the_answer_schema() {
    assert_in_sync(
        NextState::ALL,
        &[("next-answer.schema.json", "/properties/state/enum")],
    );
}

#[test]
fn every_word_reads_back_as_itself() {
    fn round_trip<T>(all: &[T])
    where
        T: Copy + Display + PartialEq + std::fmt::Debug + std::str::FromStr + serde::Serialize,
        T::Err: std::fmt::Debug,
    {
        for word in all {
            let text = word.to_string();
            assert_eq!(text.parse::<T>().unwrap(), *word);
            assert_eq!(serde_json::to_value(word).unwrap(), Value::String(text));
        }
    }
    round_trip(Verdict::ALL);
    round_trip(FinalClass::ALL);
    round_trip(StopReason::ALL);
    round_trip(Severity::ALL);
    round_trip(AnchorStatus::ALL);
    round_trip(ReliabilityReason::ALL);
    round_trip(NextState::ALL);
    assert_eq!(
        "agree".parse::<Verdict>(),
        Err("AGREE|DISAGREE|SUPPLEMENT".to_owned())
    );
}

#[test]
fn isolation_words_read_old_records() {
    for word in [
        "cli-sandbox",
        "git-copy",
        "file-copy",
        "none",
        "git-worktree",
    ] {
        assert_eq!(word.parse::<Isolation>().unwrap().as_str(), word);
    }
    assert!("chroot".parse::<Isolation>().is_err());
    assert_eq!(WorkspaceKind::GitCopy.isolation(), Isolation::GitCopy);
    assert_eq!("file-copy".parse(), Ok(WorkspaceKind::FileCopy));
}

#[test]
fn recoveries_match_the_team_state_schema() {
    assert_in_sync(
        Recovery::ALL,
        &[(
            "team-state.schema.json",
            "/$defs/dispatch/properties/recoveredFrom/enum",
        )],
    );
}

#[test]
fn isolations_and_workspace_kinds_match_the_team_state_schema() {
    assert_in_sync(
        Isolation::ALL,
        &[(
            "team-state.schema.json",
            "/$defs/dispatch/properties/isolation/enum",
        )],
    );
    assert_in_sync(
        WorkspaceKind::ALL,
        &[(
            "team-state.schema.json",
            "/$defs/dispatch/properties/workspace/properties/kind/enum",
        )],
    );
}

#[test]
fn an_unknown_word_is_kept_shown_and_written_back_as_it_is() {
    let known: Word<Isolation> = serde_json::from_str("\"landlock\"").unwrap();
    assert_eq!(known, Word::Known(Isolation::Landlock));
    assert_eq!(known, Isolation::Landlock);
    assert_eq!(known.known(), Some(Isolation::Landlock));
    assert_eq!(known.to_string(), "landlock");

    let unknown: Word<Isolation> = serde_json::from_str("\"chroot\"").unwrap();
    assert_eq!(unknown, Word::Unknown("chroot".to_owned()));
    assert_ne!(unknown, Isolation::None);
    assert_eq!(unknown.known(), None);
    assert_eq!(unknown.to_string(), "chroot");
    assert_eq!(serde_json::to_string(&unknown).unwrap(), "\"chroot\"");

    // A word differing only in case is another word, kept as written.
    let shouted: Word<Isolation> = Word::parse("LANDLOCK");
    assert_eq!(shouted.to_string(), "LANDLOCK");
    assert!(serde_json::from_str::<Word<Isolation>>("1").is_err());
}

#[test]
fn landing_words_match_the_report_schema() {
    assert_in_sync(
        LandingState::ALL,
        &[(
            "final-report-v2.2.schema.json",
            "/$defs/Landing/properties/state/enum",
        )],
    );
    assert_in_sync(
        LandReason::ALL,
        &[(
            "final-report-v2.2.schema.json",
            "/$defs/Landing/properties/reasons/items/properties/reason/enum",
        )],
    );
}

#[test]
fn land_answer_words_match_its_schema() {
    let answer = "land-answer.schema.json";
    assert_in_sync(LandOutcome::ALL, &[(answer, "/properties/state/enum")]);
    assert_in_sync(Ancestry::ALL, &[(answer, "/properties/ancestry/enum")]);
    assert_in_sync(
        LandReason::ALL,
        &[(answer, "/properties/reasons/items/properties/reason/enum")],
    );
    assert_in_sync(
        FileAction::ALL,
        &[(answer, "/properties/files/items/properties/action/enum")],
    );
}

#[test]
fn continuation_kinds_match_the_task_manifest_schema() {
    assert_in_sync(
        ContinuationKind::ALL,
        &[(
            "task-manifest.schema.json",
            "/properties/continuation/properties/kind/enum",
        )],
    );
}

#[test]
fn an_ended_attempt_is_shown_as_its_ending() {
    for ending in Ending::ALL {
        let state = BoardState::Ended(*ending);
        assert_eq!(state.as_str(), ending.as_str());
        assert_eq!(
            serde_json::to_value(state).unwrap(),
            Value::String(ending.as_str().to_owned())
        );
        assert!(state.is_terminal() && !state.is_live());
    }
    assert_eq!(
        serde_json::to_value(BoardState::WithHost).unwrap(),
        Value::String("with-host".to_owned())
    );
}

#[test]
fn journal_steps_read_back_as_themselves() {
    let steps = [
        JournalStep::Plan(1),
        JournalStep::Record(12),
        JournalStep::Classify,
        JournalStep::FixRequest,
        JournalStep::FixCheck,
        JournalStep::Inputs,
        JournalStep::Render,
        JournalStep::Complete,
    ];
    let keys: Vec<String> = steps.iter().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "plan-r1",
            "record-r12",
            "classify",
            "fix-request",
            "fix-check",
            "inputs",
            "render",
            "complete"
        ]
    );
    for (step, key) in steps.iter().zip(&keys) {
        assert_eq!(key.parse::<JournalStep>(), Ok(*step));
    }
    for unknown in ["plan-r", "plan-rx", "record-r-1", "lint", "Classify"] {
        assert!(unknown.parse::<JournalStep>().is_err(), "{unknown}");
    }
}

#[test]
fn containments_match_the_run_manifest_schema() {
    assert_in_sync(
        Containment::ALL,
        &[("run-manifest.schema.json", "/properties/containment/enum")],
    );
}

#[test]
fn sidecar_words_match_the_status_schema() {
    assert_in_sync(
        Stage::ALL,
        &[("status.schema.json", "/properties/stage/enum")],
    );
    assert_in_sync(
        Reason::ALL,
        &[("status.schema.json", "/properties/reason/enum")],
    );
    assert_in_sync(
        TerminatedBy::ALL,
        &[("status.schema.json", "/properties/terminated_by/enum")],
    );
}

#[test]
fn uncounted_reasons_match_the_report_schema() {
    assert_in_sync(
        Uncounted::ALL,
        &[(
            "final-report-v2.2.schema.json",
            "/$defs/Review/properties/uncounted/enum",
        )],
    );
}
