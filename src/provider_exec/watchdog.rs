//! The idle watchdog: "has the child been silent for too long?"
//!
//! The copy thread stamps [`Activity`] on every chunk it reads; nobody wakes
//! the supervisor for that. [`Watchdog::expired`] sleeps until the earliest
//! moment the child *could* be idle (last activity + timeout), then looks at
//! the stamp: if output arrived meanwhile it sleeps again until the moved
//! deadline, otherwise it reports the silence. So a silent child costs one
//! timer and zero wake-ups until the deadline, and a chatty one costs one
//! wake-up per timeout period, never one per chunk or per poll tick.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// When output was last seen, shared between the copy thread (writer) and the
/// supervisor (reader). Stored as nanoseconds since `base` so one atomic is enough.
#[derive(Debug)]
pub struct Activity {
    base: std::time::Instant,
    nanos: AtomicU64,
}

impl Activity {
    /// A clock whose last activity is `now`.
    pub fn new(now: Instant) -> Arc<Self> {
        Arc::new(Self {
            base: now.into_std(),
            nanos: AtomicU64::new(0),
        })
    }

    /// Record output seen at `at` (never moves the stamp backwards).
    pub fn touch_at(&self, at: std::time::Instant) {
        let since = at.saturating_duration_since(self.base);
        let nanos = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Record output seen now.
    pub fn touch(&self) {
        self.touch_at(std::time::Instant::now());
    }

    /// When output was last seen.
    pub fn last(&self) -> Instant {
        Instant::from_std(self.base + Duration::from_nanos(self.nanos.load(Ordering::Relaxed)))
    }
}

/// Why the watchdog fired: how long the child had been silent when it decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idle {
    pub silent_for: Duration,
}

/// Idle-deadline arithmetic over an [`Activity`] clock.
#[derive(Debug)]
pub struct Watchdog {
    /// `None` disables the watchdog (idle timeout `0`).
    timeout: Option<Duration>,
    activity: Arc<Activity>,
}

impl Watchdog {
    pub fn new(timeout: Option<Duration>, activity: Arc<Activity>) -> Self {
        Self { timeout, activity }
    }

    /// The moment the child becomes idle if nothing more arrives; `None` when
    /// disabled or so far away that it does not fit in an `Instant`.
    pub fn deadline(&self) -> Option<Instant> {
        self.activity.last().checked_add(self.timeout?)
    }

    /// The verdict at `now`: idle (with how long), or the deadline to sleep until.
    pub fn check(&self, now: Instant) -> Result<Idle, Option<Instant>> {
        match self.deadline() {
            Some(deadline) if now >= deadline => Ok(Idle {
                silent_for: now.saturating_duration_since(self.activity.last()),
            }),
            other => Err(other),
        }
    }

    /// Resolves when the child has been silent for the whole timeout; never
    /// resolves when the watchdog is disabled. Cancel-safe: it holds no state
    /// beyond the shared clock, so it can sit in a `select!` loop.
    pub async fn expired(&self) -> Idle {
        loop {
            match self.check(Instant::now()) {
                Ok(idle) => return idle,
                Err(Some(deadline)) => tokio::time::sleep_until(deadline).await,
                Err(None) => std::future::pending::<()>().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test(start_paused = true)]
    async fn fires_exactly_at_the_deadline_when_silent() {
        let start = Instant::now();
        let dog = Watchdog::new(Some(secs(10)), Activity::new(start));
        assert_eq!(dog.deadline(), Some(start + secs(10)));
        let idle = dog.expired().await;
        assert_eq!(Instant::now() - start, secs(10));
        assert_eq!(idle.silent_for, secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn activity_moves_the_deadline() {
        let start = Instant::now();
        let activity = Activity::new(start);
        let dog = Watchdog::new(Some(secs(10)), Arc::clone(&activity));
        tokio::time::sleep(secs(7)).await;
        activity.touch_at(Instant::now().into_std());
        assert_eq!(dog.deadline(), Some(start + secs(17)));
        assert!(dog.check(Instant::now() + secs(9)).is_err());
        dog.expired().await;
        assert_eq!(Instant::now() - start, secs(17));
    }

    #[tokio::test(start_paused = true)]
    async fn output_during_the_sleep_is_seen_when_it_wakes() {
        let start = Instant::now();
        let activity = Activity::new(start);
        let dog = Watchdog::new(Some(secs(10)), Arc::clone(&activity));
        let feeder = Arc::clone(&activity);
        tokio::spawn(async move {
            for _ in 0..5 {
                tokio::time::sleep(secs(4)).await;
                feeder.touch_at(Instant::now().into_std());
            }
        });
        dog.expired().await;
        // Last output at 20 s, so idle at 30 s.
        assert_eq!(Instant::now() - start, secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_timeout_never_fires() {
        let dog = Watchdog::new(None, Activity::new(Instant::now()));
        assert_eq!(dog.deadline(), None);
        let fired = tokio::time::timeout(secs(100_000), dog.expired()).await;
        assert!(fired.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_past_the_end_of_time_never_fires() {
        let dog = Watchdog::new(Some(Duration::MAX), Activity::new(Instant::now()));
        assert_eq!(dog.deadline(), None);
        assert!(dog.check(Instant::now()).is_err());
    }

    #[test]
    fn stamps_never_move_backwards() {
        let start = Instant::now();
        let activity = Activity::new(start);
        activity.touch_at(start.into_std() + secs(5));
        activity.touch_at(start.into_std() + secs(2));
        assert_eq!(activity.last(), start + secs(5));
    }
}
