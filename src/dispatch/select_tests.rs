use super::*;

fn planned(runner: Runner) -> Planned {
    Planned {
        dispatch_name: "codex-worker".into(),
        assignment_name: "codex-worker".into(),
        kind: Kind::Initial,
        attempt: 1,
        worker_id: "codex".into(),
        role: Role::Analyser,
        provider: Provider::Codex,
        model: "gpt-5.6-sol".into(),
        runner,
        paths: DispatchPaths::new(std::path::Path::new("/r"), "codex-worker"),
        prompt_sha256: None,
        inputs_sha256: None,
    }
}

fn record(ending: Option<Ending>, prompt: &str) -> DispatchRecord {
    let p = planned(Runner::CliWrapper);
    DispatchRecord {
        role: Some(p.role),
        provider: Some(p.provider),
        model: Some(p.model.clone()),
        runner: Some(p.runner),
        prompt_sha256: Some(prompt.into()),
        started_at: Some("2026-12-01T00:00:00Z".into()),
        dispatcher_pid: Some(1),
        ending,
        ..DispatchRecord::queued(&p.dispatch_name, Kind::Initial, 2, &p.worker_id, &p.paths)
    }
}

#[test]
fn kinds_parse() {
    assert_eq!(Kind::parse("initial"), Ok(Kind::Initial));
    assert_eq!(Kind::parse("reverify-r2"), Ok(Kind::Reverify(2)));
    assert_eq!(Kind::Reverify(3).as_string(), "reverify-r3");
    for bad in ["reverify-r0", "reverify-r", "reverify", "later", ""] {
        assert!(Kind::parse(bad).is_err(), "{bad}");
    }
}

/// One row: (latest ending, prompt now, liveness, resume, runner) → decision.
type Row = (
    Option<Option<Ending>>,
    &'static str,
    Live,
    bool,
    Runner,
    Decision,
);

/// One row per rule: (latest ending, prompt then → now, liveness, resume,
/// runner) → decision.
#[test]
fn decide_table() {
    use Decision::{Adopt, Settle, Skip as S, Start};
    let next = Start { attempt: 3 };
    let rows: Vec<Row> = vec![
        // Never dispatched: the first attempt.
        (
            None,
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        // Completed with the same prompt: paid for, never again.
        (
            Some(Some(Ending::Completed)),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            S(Skip::Completed),
        ),
        (
            Some(Some(Ending::Completed)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            S(Skip::Completed),
        ),
        // A changed prompt is a new question.
        (
            Some(Some(Ending::Completed)),
            "b",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::Crash)),
            "b",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        // Interrupted attempts run again.
        (
            Some(Some(Ending::Cancelled)),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::Signalled)),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::Budget)),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            next.clone(),
        ),
        // A failure the user can fix: once per explicit resume.
        (
            Some(Some(Ending::Auth)),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            S(Skip::Failed(Ending::Auth)),
        ),
        (
            Some(Some(Ending::Auth)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::Network)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::RateLimit)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            next.clone(),
        ),
        (
            Some(Some(Ending::CliMissing)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            next.clone(),
        ),
        // Any other failure stays failed.
        (
            Some(Some(Ending::Crash)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            S(Skip::Failed(Ending::Crash)),
        ),
        (
            Some(Some(Ending::IdleTimeout)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            S(Skip::Failed(Ending::IdleTimeout)),
        ),
        (
            Some(Some(Ending::EmptyOutput)),
            "a",
            Live::Nothing,
            true,
            Runner::CliWrapper,
            S(Skip::Failed(Ending::EmptyOutput)),
        ),
        // Unfinished: a live driver keeps it, a live wrapper is adopted,
        // a dead one is settled first.
        (
            Some(None),
            "a",
            Live::Driver,
            false,
            Runner::CliWrapper,
            S(Skip::Running),
        ),
        (
            Some(None),
            "a",
            Live::Wrapper,
            false,
            Runner::CliWrapper,
            Adopt(Box::new(record(None, "a"))),
        ),
        (
            Some(None),
            "a",
            Live::Nothing,
            false,
            Runner::CliWrapper,
            Settle(Box::new(record(None, "a"))),
        ),
        // The host's own sessions are the host's to run.
        (
            None,
            "a",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Host),
        ),
        (
            Some(Some(Ending::Completed)),
            "a",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Completed),
        ),
        (
            Some(Some(Ending::Completed)),
            "b",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Host),
        ),
        (
            Some(Some(Ending::Cancelled)),
            "a",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Host),
        ),
        // A native answer without a result gets its one retry from the host.
        (
            Some(Some(Ending::EmptyOutput)),
            "a",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Host),
        ),
        (
            Some(Some(Ending::Auth)),
            "a",
            Live::Nothing,
            false,
            Runner::NativeSession,
            S(Skip::Failed(Ending::Auth)),
        ),
    ];
    for (latest, now, live, resume, runner, expected) in rows {
        let mut last = latest.map(|ending| record(ending, "a"));
        if let Some(last) = &mut last {
            last.runner = Some(runner);
        }
        let mut expected = expected;
        if let (Adopt(r) | Settle(r), Some(last)) = (&mut expected, &last) {
            **r = last.clone();
        }
        let facts = Facts {
            prompt_sha256: Some(now.into()),
            live,
            resume,
            retry_spent: false,
        };
        assert_eq!(
            decide(&planned(runner), last.as_ref(), 3, &facts),
            expected,
            "{latest:?} {now} {live:?} resume={resume} {runner:?}"
        );
    }
}

#[test]
fn a_failed_native_attempt_is_final_once_the_retry_is_spent() {
    let mut last = record(Some(Ending::EmptyOutput), "a");
    last.runner = Some(Runner::NativeSession);
    let facts = Facts {
        prompt_sha256: Some("a".into()),
        retry_spent: true,
        ..Facts::default()
    };
    assert_eq!(
        decide(&planned(Runner::NativeSession), Some(&last), 3, &facts),
        Decision::Skip(Skip::Failed(Ending::EmptyOutput))
    );
}

#[test]
fn a_changed_model_or_provider_is_a_new_question() {
    let mut p = planned(Runner::CliWrapper);
    let last = record(Some(Ending::Completed), "a");
    let facts = Facts {
        prompt_sha256: Some("a".into()),
        ..Facts::default()
    };
    assert_eq!(
        decide(&p, Some(&last), 3, &facts),
        Decision::Skip(Skip::Completed)
    );
    p.model = "gpt-5.7".into();
    assert_eq!(
        decide(&p, Some(&last), 3, &facts),
        Decision::Start { attempt: 3 }
    );
    let mut p = planned(Runner::CliWrapper);
    p.provider = Provider::Claude;
    assert_eq!(
        decide(&p, Some(&last), 3, &facts),
        Decision::Start { attempt: 3 }
    );
}

#[test]
fn an_attempt_on_another_prompt_file_does_not_hide_the_rendered_one() {
    // The report writer completed on its own prompt, then a repair attempt
    // on `report-writer.repair.md`: its rendered prompt is still done.
    let planned = planned(Runner::CliWrapper);
    let first = record(Some(Ending::Completed), "a");
    let mut repair = record(Some(Ending::Completed), "r");
    repair.attempt = 3;
    repair.prompt_path = planned
        .paths
        .prompt_path
        .with_file_name("codex-worker.repair.md");
    let state = TeamState {
        dispatches: vec![first, repair],
        ..TeamState::default()
    };
    let facts = Facts {
        prompt_sha256: Some("a".into()),
        ..Facts::default()
    };
    assert_eq!(
        decide_in(&planned, &state, &facts),
        Decision::Skip(Skip::Completed)
    );
    // A new attempt on the rendered prompt is numbered after every other.
    let changed = Facts {
        prompt_sha256: Some("b".into()),
        ..Facts::default()
    };
    assert_eq!(
        decide_in(&planned, &state, &changed),
        Decision::Start { attempt: 4 }
    );
}
