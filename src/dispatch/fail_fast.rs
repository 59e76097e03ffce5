//! Failing fast: when a batch should stop spending before its attempts end
//! on their own. Two rules, both decided here from what the engine tells it
//! (pure: the engine does the stopping):
//!
//! - a provider whose attempt ended `auth` will fail the same way on every
//!   other attempt of the run: those are not started (each ends `auth`,
//!   "not started") and a running one is stopped;
//! - a batch given a quorum (the first batch of analysers or verifiers:
//!   two of two or more must complete for the findings to be checked, one
//!   of one) stops as soon as too few reviewers can still complete — its
//!   members that run or wait to, and every other reviewer who still can
//!   (one the host holds included), as `derive::quorum` counts them: the
//!   rest are stopped and the run ends, instead of waiting minutes for a
//!   CLI that is retrying an unreachable API. (A batch with nothing left
//!   running keeps what it paid for: the report says it was not
//!   cross-verified.)
//!
//! `okstra dispatch` uses neither (the lead that calls it decides).

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Provider;
use crate::derive::quorum::Quorum;
use crate::vocab::Ending;

/// What the engine stops early, and why.
#[derive(Debug, Clone, Default)]
pub struct FailFast {
    /// Providers whose attempt ended `auth` (earlier in the run, or in this
    /// batch), with the ending's detail.
    pub auth_failed: BTreeMap<Provider, String>,
    pub quorum: Option<Quorum>,
    /// Members of the quorum that completed in this batch.
    completed: BTreeSet<String>,
}

impl FailFast {
    /// For `okstra run`: the auth failures seen earlier in the run, and the
    /// batch's quorum if it has one.
    pub fn new(auth_failed: BTreeMap<Provider, String>, quorum: Option<Quorum>) -> FailFast {
        FailFast {
            auth_failed,
            quorum,
            completed: BTreeSet::new(),
        }
    }

    /// Why an attempt of `provider` must not start, if it must not.
    pub fn refuses(&self, provider: Provider) -> Option<String> {
        self.auth_failed.get(&provider).map(|detail| {
            format!(
                "not started: `{provider}` ended `auth` earlier in this run ({detail}); log in and resume"
            )
        })
    }

    /// Note how `dispatch_name` of `provider` ended. Returns the provider
    /// whose other attempts are now to stop (an `auth` ending seen for the
    /// first time).
    pub fn ended(
        &mut self,
        dispatch_name: &str,
        provider: Provider,
        ending: Ending,
        detail: &str,
    ) -> Option<Provider> {
        if ending == Ending::Completed {
            self.completed.insert(dispatch_name.to_owned());
        }
        if ending == Ending::Auth && !self.auth_failed.contains_key(&provider) {
            self.auth_failed.insert(provider, detail.to_owned());
            return Some(provider);
        }
        None
    }

    /// Why the batch stops now, if its quorum can no longer be reached:
    /// `pending` are the members still running or queued.
    pub fn lost_quorum(&self, pending: &BTreeSet<String>) -> Option<String> {
        self.quorum.as_ref()?.lost(&self.completed, pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_auth_ending_of_a_provider_stops_its_other_attempts() {
        let mut fail = FailFast::default();
        assert_eq!(fail.refuses(Provider::Claude), None);
        assert_eq!(
            fail.ended(
                "claude-worker",
                Provider::Claude,
                Ending::Auth,
                "Not logged in"
            ),
            Some(Provider::Claude)
        );
        assert_eq!(
            fail.ended("report-writer", Provider::Claude, Ending::Auth, "again"),
            None,
            "only the first ending stops the others"
        );
        assert_eq!(
            fail.refuses(Provider::Claude).unwrap(),
            "not started: `claude` ended `auth` earlier in this run (Not logged in); log in and resume"
        );
        assert_eq!(fail.refuses(Provider::Codex), None);
        assert_eq!(
            fail.ended("codex-worker", Provider::Codex, Ending::Network, ""),
            None
        );
    }

    #[test]
    fn a_batch_stops_once_its_quorum_cannot_be_reached() {
        let members = names(&["claude-worker", "codex-worker", "kimi-worker"]);
        let mut fail = FailFast::new(
            BTreeMap::new(),
            Some(Quorum {
                members: members.clone(),
                others: Vec::new(),
            }),
        );
        // Two can still complete: go on.
        fail.ended("kimi-worker", Provider::Kimi, Ending::Auth, "");
        assert_eq!(
            fail.lost_quorum(&names(&["claude-worker", "codex-worker"])),
            None
        );
        // One completed, one out: two are no longer possible.
        fail.ended("claude-worker", Provider::Claude, Ending::Completed, "");
        assert_eq!(fail.lost_quorum(&names(&["codex-worker"])), None);
        let why = fail.lost_quorum(&names(&[])).unwrap();
        assert!(
            why.starts_with("stopped early: at most 1 of the 2 reviewers"),
            "{why}"
        );
        // Without a quorum nothing stops.
        assert_eq!(FailFast::default().lost_quorum(&names(&[])), None);
    }
}
