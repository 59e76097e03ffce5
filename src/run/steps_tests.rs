use super::*;

use DispatchKind::{Critic, Initial, Reverify};
use Need::{Done, Failed, Host, Run, Running};

fn w(id: &str, need: Need) -> Worker {
    Worker::new(id, need)
}

fn round(n: u32, reviewers: &[Need], recorded: bool, stops_after: bool) -> Round {
    Round {
        number: n,
        plan_fresh: true,
        stopped: false,
        reviewers: ["claude", "codex", "kimi"]
            .iter()
            .zip(reviewers)
            .map(|(id, need)| w(id, *need))
            .collect(),
        recorded_fresh: recorded,
        stops_after,
    }
}

/// A three-analyser run that has done everything up to the report.
fn finished() -> Facts {
    Facts {
        reviewers: vec![w("claude", Done), w("codex", Done), w("kimi", Done)],
        convergence: true,
        max_rounds: 2,
        rounds: vec![
            round(1, &[Done, Done, Done], true, false),
            round(2, &[Done, Done, Done], true, true),
        ],
        classified: true,
        report_writer: Some(w("report-writer", Done)),
        inputs_fresh: true,
        report: Report::Valid { rendered: true },
        ..Facts::default()
    }
}

fn dispatch(kind: DispatchKind, workers: &[&str]) -> Step {
    Step::Dispatch {
        kind,
        workers: workers.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// One row per rule: a change to a finished run → the step it leads to.
#[test]
fn advance_table() {
    type Change = fn(&mut Facts);
    let rows: Vec<(&str, Change, Step)> = vec![
        ("finished", |_| {}, Step::Done),
        (
            "analysers to start",
            |f| f.reviewers[1].need = Run,
            dispatch(Initial, &["codex"]),
        ),
        (
            "a native analyser the host runs",
            |f| f.reviewers[0].need = Host,
            Step::Host(vec!["claude".into()]),
        ),
        (
            "an analyser a live driver runs",
            |f| f.reviewers[2].need = Running,
            Step::Wait(vec!["kimi".into()]),
        ),
        (
            "starting comes before waiting",
            |f| {
                f.reviewers[0].need = Running;
                f.reviewers[1].need = Run;
            },
            dispatch(Initial, &["codex"]),
        ),
        (
            "no analyser completed",
            |f| {
                for r in &mut f.reviewers {
                    r.need = Failed;
                }
            },
            Step::End(Stop::NoReviewer),
        ),
        (
            "quorum lost: no convergence, straight to the report",
            |f| {
                f.reviewers[1].need = Failed;
                f.reviewers[2].need = Failed;
                f.rounds.clear();
            },
            Step::Done,
        ),
        ("round 1 not planned", |f| f.rounds.clear(), Step::Plan(1)),
        (
            "round 1 planned from old results",
            |f| f.rounds[0].plan_fresh = false,
            Step::Plan(1),
        ),
        (
            "round 1 reviewers to start",
            |f| f.rounds[0].reviewers[2].need = Run,
            dispatch(Reverify(1), &["kimi"]),
        ),
        (
            "round 1 not recorded",
            |f| f.rounds[0].recorded_fresh = false,
            Step::Record(1),
        ),
        (
            "round 2 not planned",
            |f| {
                f.rounds.truncate(1);
            },
            Step::Plan(2),
        ),
        (
            "convergence stopped after round 1",
            |f| {
                f.rounds.truncate(1);
                f.rounds[0].stops_after = true;
            },
            Step::Done,
        ),
        (
            "round 2's plan says it does not run",
            |f| {
                f.rounds[1].stopped = true;
                f.rounds[1].recorded_fresh = false;
            },
            Step::Done,
        ),
        ("not classified", |f| f.classified = false, Step::Classify),
        (
            "the fix cycle to decide",
            |f| f.fix_undecided = true,
            Step::FixRequest,
        ),
        (
            "the fix pass to run",
            |f| f.fix_pass = Some(w("claude", Run)),
            Step::FixPass,
        ),
        (
            "the fix pass done",
            |f| f.fix_pass = Some(w("claude", Done)),
            Step::Done,
        ),
        (
            "a fix pass that changed the code is checked before the report",
            |f| {
                f.fix_pass = Some(w("claude", Done));
                f.fix_check = Some(FixCheck {
                    planned: false,
                    verifiers: Vec::new(),
                });
            },
            Step::FixCheck,
        ),
        (
            "the fix check's verifiers to run",
            |f| {
                f.fix_check = Some(FixCheck {
                    planned: true,
                    verifiers: vec![w("codex", Run), w("kimi", Done)],
                });
            },
            dispatch(DispatchKind::FixCheck, &["codex"]),
        ),
        (
            "a fix-check verifier a live driver runs",
            |f| {
                f.fix_check = Some(FixCheck {
                    planned: true,
                    verifiers: vec![w("codex", Running), w("kimi", Done)],
                });
            },
            Step::Wait(vec!["codex".into()]),
        ),
        (
            "the fix check comes before the critic",
            |f| {
                f.fix_check = Some(FixCheck {
                    planned: true,
                    verifiers: vec![w("codex", Run)],
                });
                f.critic = Some(w("codex-critic", Run));
            },
            dispatch(DispatchKind::FixCheck, &["codex"]),
        ),
        (
            "a failed fix check does not stop the report",
            |f| {
                f.fix_check = Some(FixCheck {
                    planned: true,
                    verifiers: vec![w("codex", Failed), w("kimi", Failed)],
                });
            },
            Step::Done,
        ),
        (
            "the critic to run",
            |f| f.critic = Some(w("codex-critic", Run)),
            dispatch(Critic, &["codex-critic"]),
        ),
        (
            "a failed critic does not stop the report",
            |f| f.critic = Some(w("codex-critic", Failed)),
            Step::Done,
        ),
        (
            "no report writer",
            |f| f.report_writer = None,
            Step::End(Stop::NoReportWriter),
        ),
        (
            "inputs from old records",
            |f| f.inputs_fresh = false,
            Step::Inputs,
        ),
        (
            "the report writer to run",
            |f| {
                f.report_writer = Some(w("report-writer", Run));
                f.report = Report::Missing;
            },
            dispatch(Initial, &["report-writer"]),
        ),
        (
            "the report writer failed",
            |f| {
                f.report_writer = Some(w("report-writer", Failed));
                f.report = Report::Missing;
            },
            Step::End(Stop::ReportWriterFailed),
        ),
        (
            "an invalid report gets one repair",
            |f| f.report = Report::Invalid { repaired: false },
            Step::Repair,
        ),
        (
            "a repair that was interrupted runs again",
            |f| {
                f.report = Report::Invalid { repaired: false };
                f.repair = Some(w("report-writer", Run));
            },
            Step::Repair,
        ),
        (
            "still invalid after the repair",
            |f| f.report = Report::Invalid { repaired: true },
            Step::End(Stop::ReportInvalid),
        ),
        (
            "written, okstra's blocks not in it yet",
            |f| f.report = Report::Unfinalized,
            Step::Finalize,
        ),
        (
            "valid, not rendered",
            |f| f.report = Report::Valid { rendered: false },
            Step::Render,
        ),
        (
            "implementation: the Executor first",
            |f| f.executor = Some(w("claude", Run)),
            dispatch(Initial, &["claude"]),
        ),
        (
            "implementation: the Executor failed",
            |f| f.executor = Some(w("claude", Failed)),
            Step::End(Stop::ExecutorFailed),
        ),
        (
            "one analyser alone: no convergence",
            |f| {
                f.reviewers.truncate(1);
                f.convergence = false;
                f.rounds.clear();
            },
            Step::Done,
        ),
    ];
    for (name, change, expected) in rows {
        let mut facts = finished();
        change(&mut facts);
        assert_eq!(advance(&facts), expected, "{name}");
    }
}
