//! The engine holding attempts back before they start: for a closed gate,
//! or until a rate-limited CLI's retry-after has passed. A held
//! attempt's record says why (`okstra status`, the board), and each new
//! reason is one `worker-held` lead event.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::dispatch::attempt;
use crate::dispatch::limit;
use crate::dispatch::select::Planned;
use crate::run::team_state::{self, Change};

use super::{Engine, Queued};

impl Engine {
    /// The same dispatch again once `wait` (the CLI's retry-after `hint`
    /// plus jitter) has passed: recorded now, held until then, the shared
    /// retry not spent.
    pub(super) fn wait_out(
        &mut self,
        planned: &Planned,
        hint: Duration,
        wait: Duration,
    ) -> Result<Queued> {
        let mut next = planned.clone();
        next.attempt = planned.attempt + 1;
        let mut queued = Queued {
            planned: next,
            not_before: Instant::now() + wait,
            record: None,
            held_for: None,
        };
        let why = format!(
            "waiting {} for `{}` to take requests again (its retry-after: {}); the retry is not spent",
            limit::human(wait),
            planned.provider,
            limit::human(hint)
        );
        self.hold(&mut queued, &why, "rate-limit")?;
        Ok(queued)
    }

    /// Hold `queued` back for `why`: its record (written now if it has none
    /// yet) says so for `okstra status` and the board, and a change is said
    /// once on the board; each new `reason` once as a `worker-held` lead
    /// event.
    pub(super) fn hold(
        &mut self,
        queued: &mut Queued,
        why: &str,
        reason: &'static str,
    ) -> Result<()> {
        let record = queued.record.get_or_insert_with(|| {
            let sha = queued.planned.prompt_hash();
            attempt::record(&queued.planned, sha)
        });
        if !record.hold(why) {
            return Ok(());
        }
        team_state::update(&self.run, &[Change::Put(record)])?;
        self.view.note(&format!("{}: {why}", record.dispatch_name));
        if queued.held_for != Some(reason) {
            queued.held_for = Some(reason);
            attempt::announce_held(&self.run, record, reason);
        }
        Ok(())
    }
}
