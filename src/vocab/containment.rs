//! How a run keeps its CLIs from the project: the run manifest's
//! `containment` (`schemas/run-manifest.schema.json`). Whether this machine
//! can contain by Landlock is `crate::sandbox`'s.

closed_set! {
    /// How a run keeps its CLIs from the project (the run manifest's
    /// `containment`): every CLI under Landlock and a copy for the Executor
    /// only, or a copy for every CLI with no read-only mode (a run from an
    /// older okstra records nothing: copies).
    Containment {
        Landlock => "landlock",
        Copies => "copies",
    }
}
