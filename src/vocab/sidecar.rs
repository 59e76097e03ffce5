//! The words of a wrapper's status sidecar (`schemas/status.schema.json`):
//! where the attempt is, why it ended and who stopped it.

closed_set! {
    /// Where the run is.
    Stage {
        /// Written before anything is spawned; the run is in progress.
        Started => "started",
        /// Terminal: the wrapper has finished (whatever the reason).
        Exited => "exited",
    }
}

closed_set! {
    /// Why the run ended (`reason`, always present once `stage` is `exited`).
    Reason {
        /// The CLI exited on its own (with a code, or killed by a signal nobody here sent).
        Exited => "exited",
        /// The idle watchdog stopped it; exit code 124.
        IdleTimeout => "idle-timeout",
        /// A signal to the wrapper made it stop the CLI; exit code 128+N.
        Signal => "signal",
        /// The CLI could not be started; exit code 126 or 127.
        SpawnFailed => "spawn-failed",
        /// The log file could not be created; nothing was started; exit code 73.
        LogUnavailable => "log-unavailable",
        /// The wrapper could not set up supervision (e.g. no pipe); exit code 71.
        WrapperError => "wrapper-error",
        /// Written by `okstra reap`: the wrapper died and the reaper stopped
        /// its leftover group.
        OrphanedGroupStopped => "orphaned-group-stopped",
        /// Written by `okstra reap`: the wrapper died and nothing of its group
        /// was left to stop.
        WrapperLost => "wrapper-lost",
    }
}

closed_set! {
    /// Who stopped the CLI, in the reference's words (`reaper`: `okstra reap`
    /// closed the sidecar of a wrapper that died).
    TerminatedBy {
        IdleWatchdog => "idle-watchdog",
        Signal => "signal",
        Reaper => "reaper",
    }
}
