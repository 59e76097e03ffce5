//! A blocking step outside the engine that SIGTERM or SIGINT may end.
//!
//! The engine watches signals while it runs workers (`dispatch::engine`);
//! before it starts, a driver may still be probing the provider CLIs (the
//! preflight), and `okstra cancel` (SIGTERM) or Ctrl-C (SIGINT) must not
//! kill it where it stands — an exit by the raw signal, no event recorded,
//! the lease let go by the kernel, a probe left running. [`watch`] runs
//! such a step on a thread of its own while the calling thread waits for
//! either the step's end or one of those signals: both are blocked for the
//! duration (a thread started meanwhile inherits the mask; a child gets
//! the default mask back, std resets it), and read from a `signalfd`. On
//! return the caller's mask is as it was. A thread started before, with
//! the signals unblocked, would still take them: call it where the process
//! has no other thread (the driver before its engine starts).
//!
//! Not Linux: no `signalfd`, and the step simply runs.

use nix::sys::signal::Signal;

/// How often the waiting thread looks at the step and the signals.
#[cfg(target_os = "linux")]
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run `step` to its end, unless SIGTERM or SIGINT arrives first: then
/// `Err(signal)`, at once (the step's thread is left to end by itself, or
/// with the process). A panic in `step` is the caller's.
#[cfg(target_os = "linux")]
pub fn watch<T: Send + 'static>(step: impl FnOnce() -> T + Send + 'static) -> Result<T, Signal> {
    use nix::sys::signal::{SigSet, SigmaskHow};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use std::sync::mpsc::{self, RecvTimeoutError};

    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    mask.add(Signal::SIGINT);
    let Ok(before) = mask.thread_swap_mask(SigmaskHow::SIG_BLOCK) else {
        return Ok(step());
    };
    let restore = || {
        let _ = before.thread_set_mask();
    };
    let Ok(signals) = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
    else {
        restore();
        return Ok(step());
    };
    let pending = || {
        signals
            .read_signal()
            .ok()
            .flatten()
            .and_then(|info| Signal::try_from(i32::try_from(info.ssi_signo).ok()?).ok())
    };
    let (sender, receiver) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = sender.send(step());
    });
    let ended = loop {
        if let Some(signal) = pending() {
            break Err(signal);
        }
        match receiver.recv_timeout(POLL) {
            // A signal that came with the end still counts: it was sent to
            // stop this process, and nothing after the step would see it.
            Ok(value) => break pending().map_or(Ok(value), Err),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                restore();
                if let Err(panic) = worker.join() {
                    std::panic::resume_unwind(panic);
                }
                unreachable!("the step's thread ends by sending its value or by a panic");
            }
        }
    };
    restore();
    ended
}

#[cfg(not(target_os = "linux"))]
pub fn watch<T: Send + 'static>(step: impl FnOnce() -> T + Send + 'static) -> Result<T, Signal> {
    Ok(step())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_step_runs_to_its_end_and_the_mask_is_restored() {
        use nix::sys::signal::SigSet;
        let before = SigSet::thread_get_mask().unwrap();
        assert_eq!(watch(|| 41 + 1), Ok(42));
        assert_eq!(
            SigSet::thread_get_mask().unwrap().contains(Signal::SIGTERM),
            before.contains(Signal::SIGTERM)
        );
    }
}
