//! How a dispatch attempt ended: the one closed list of ending classes, and
//! the one table that turns each into the final report's `terminalStatus`
//! and `failure.reason`.
//!
//! The words are the wire format of the team state (`dispatches[].ending`,
//! `workers.*.terminalStatus`), of `okstra await --json` and of the report's
//! coverage; the schemas list exactly these values and a test holds them to
//! it. Deciding *which* class an attempt gets (from its sidecar, log and
//! result files) is `dispatch::classify`; this module only names them.

closed_set! {
    /// The class of one finished attempt.
    Ending {
        /// The CLI finished and its result was recovered.
        Completed => "completed",
        /// The CLI finished but printed no complete result block.
        EmptyOutput => "empty-output",
        /// The idle watchdog stopped a silent CLI.
        IdleTimeout => "idle-timeout",
        /// The CLI is not logged in or its key was refused.
        Auth => "auth",
        /// The provider refused for rate for a while (a 429, an overload,
        /// a window that reopens within about an hour).
        RateLimit => "rate-limit",
        /// The account's quota is spent (a daily, weekly or monthly limit,
        /// credits or billing, or a retry-after beyond about an hour):
        /// waiting within a run does not help.
        Quota => "quota",
        /// The provider's API could not be reached.
        Network => "network",
        /// The CLI (or its wrapper) is not installed.
        CliMissing => "cli-missing",
        /// The CLI rejected the command line it was given.
        UsageError => "usage-error",
        /// The CLI failed in any other way.
        Crash => "crash",
        /// The CLI was killed by a signal nobody in okstra sent.
        Signalled => "signalled",
        /// okstra stopped it on the user's request (SIGINT/SIGTERM to dispatch).
        Cancelled => "cancelled",
        /// Never started: the run's token or cost budget was spent.
        Budget => "budget",
    }
}

impl Ending {
    /// The final report's `terminalStatus` for a worker whose last attempt
    /// ended this way, and the `failure.reason` it carries (none when it
    /// completed). The one place this mapping is written.
    pub fn report_status(self) -> (ReportStatus, Option<&'static str>) {
        let status = match self {
            Ending::Completed => return (ReportStatus::Completed, None),
            Ending::IdleTimeout => ReportStatus::TimedOut,
            Ending::Auth
            | Ending::RateLimit
            | Ending::Quota
            | Ending::Network
            | Ending::CliMissing
            | Ending::Budget => ReportStatus::Unavailable,
            Ending::EmptyOutput | Ending::UsageError | Ending::Crash => ReportStatus::Failed,
            Ending::Signalled | Ending::Cancelled => ReportStatus::Cancelled,
        };
        (status, Some(self.as_str()))
    }

    /// Whether the one shared retry may be spent on this ending. `crash` is
    /// retryable only when it was quick and printed nothing (decided by the
    /// caller, who knows the timing); `rate-limit` after a cooldown (a wait
    /// for the CLI's own retry-after hint comes first and spends nothing).
    /// `quota` never: the account stays refused for hours.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Ending::EmptyOutput | Ending::Network | Ending::RateLimit | Ending::Crash
        )
    }
}

closed_set! {
    /// Why a worker's work has no ending to tell: the words that stand
    /// where an ending would, so that a worker that did not run is never
    /// said to have run and printed nothing.
    NoEnding {
        /// No attempt of it is recorded: it has not run.
        NotDispatched => "not-dispatched",
        /// An attempt is recorded but no ending: it is queued or running
        /// still, or it was lost before an ending was written.
        NotEnded => "not-ended",
    }
}

/// Why a worker's work did not complete, as `okstra items` (its `skipped`)
/// and the convergence ledger (its `unavailable`) say it: how its latest
/// attempt ended (`empty-output` when it ended `completed` with no result),
/// or that there is no ending. It travels as its one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortfall {
    Ended(Ending),
    Unended(NoEnding),
}

impl Shortfall {
    pub fn as_str(self) -> &'static str {
        match self {
            Shortfall::Ended(ending) => ending.as_str(),
            Shortfall::Unended(none) => none.as_str(),
        }
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Shortfall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

closed_set! {
    /// The final report's `workerCoverage[].terminalStatus`.
    ReportStatus {
        Completed => "completed",
        Failed => "failed",
        TimedOut => "timed-out",
        Unavailable => "unavailable",
        Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn schema_enum(schema: &str, pointer: &str) -> Vec<String> {
        let value: Value = serde_json::from_str(crate::schema::text(schema).unwrap()).unwrap();
        value
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{schema} has no {pointer}"))
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn the_schemas_list_exactly_these_endings() {
        let ours: Vec<String> = Ending::ALL.iter().map(|e| e.as_str().to_owned()).collect();
        assert_eq!(
            schema_enum(
                "team-state.schema.json",
                "/$defs/dispatch/properties/ending/enum"
            ),
            ours
        );
        assert_eq!(
            schema_enum(
                "team-state.schema.json",
                "/properties/workers/additionalProperties/properties/terminalStatus/enum"
            ),
            ours
        );
    }

    #[test]
    fn the_report_accepts_every_mapped_status_and_reason() {
        let statuses = schema_enum(
            "final-report-v2.0.schema.json",
            "/$defs/WorkerCoverage/properties/terminalStatus/enum",
        );
        let reasons = schema_enum(
            "final-report-v2.0.schema.json",
            "/$defs/WorkerCoverage/properties/failure/properties/reason/enum",
        );
        let ours: Vec<&str> = ReportStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(statuses, ours);
        for ending in Ending::ALL {
            let (status, reason) = ending.report_status();
            assert!(statuses.iter().any(|s| s == status.as_str()));
            match reason {
                None => assert_eq!(*ending, Ending::Completed),
                Some(reason) => assert!(reasons.iter().any(|r| r == reason), "{reason}"),
            }
        }
    }

    #[test]
    fn a_missing_ending_is_never_spelt_as_an_ending() {
        for none in NoEnding::ALL {
            assert!(none.as_str().parse::<Ending>().is_err(), "{none}");
            assert_eq!(Shortfall::Unended(*none).to_string(), none.as_str());
        }
        assert_eq!(
            serde_json::to_value(Shortfall::Ended(Ending::EmptyOutput)).unwrap(),
            Value::String("empty-output".to_owned())
        );
    }

    #[test]
    fn endings_round_trip_through_text() {
        for ending in Ending::ALL {
            assert_eq!(ending.as_str().parse::<Ending>(), Ok(*ending));
            assert_eq!(
                serde_json::to_value(ending).unwrap(),
                Value::String(ending.as_str().to_owned())
            );
        }
        assert!("stale".parse::<Ending>().is_err());
    }
}

closed_set! {
    /// Where an attempt's result came from (the team state's
    /// `recoveredFrom`).
    Recovery {
        /// The wrapped CLI's final message in its stream.
        Stream => "stream",
        /// A result file the worker wrote itself.
        File => "file",
        /// A native sub-agent's final message, taken by okstra's
        /// sub-agent-stop hook.
        Hook => "hook",
        /// An answer passed to `okstra submit` (by the lead or the
        /// sub-agent).
        Relayed => "relayed",
    }
}

closed_set! {
    /// How an answer reached okstra.
    Provenance {
        /// okstra's sub-agent-stop hook took the sub-agent's final message.
        Hook => "hook",
        /// Someone (the sub-agent itself, or the lead) ran `okstra submit`.
        Relayed => "relayed",
    }
}
