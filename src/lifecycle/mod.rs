//! The run lifecycle after `--render-only`: lead events (`okstra event`), the
//! status board (`okstra status`), the cleanup (`okstra cleanup`), and what
//! they share with the reaper (`okstra reap`, in `dispatch`, beside
//! `okstra cancel`: both stop wrappers and record their attempts).
//!
//! Everything here *reads* what others own: the run (opened through
//! `run::Run`), status sidecars (written by provider-exec, read defensively since
//! it may be older or newer than us), heartbeat files and Result Paths
//! (written by workers). The only files written here are the lead events log
//! (appended under a lock) and what `cleanup --execute` removes.
//!
//! Submodules: `event` appends events, `status` classifies workers and draws
//! the board, `cleanup` removes what finished or dead runs left (copies,
//! okstra's refs and branches, logs).

mod cleanup;
mod event;
#[cfg(test)]
mod proptests;
mod status;

use std::fs;
use std::path::{Path, PathBuf};

pub use cleanup::cleanup_command;
pub use event::event_command;
pub use status::{status_command, verdict_of_attempt, verdict_of_worker};

/// The run a lifecycle command reads: the one view every command opens.
pub use crate::run::Run;

/// Every candidate run folder under `<project_root>/.okstra/tasks/<p>/<g>/<t>/`,
/// sorted by path so output is stable. Each level's folders are listed in
/// parallel: a large project has a thousand task folders to list.
pub fn run_dirs(project_root: &Path) -> Result<Vec<PathBuf>, crate::confine::Error> {
    let subdirs = |dir: &PathBuf| -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect()
    };
    // Symlinked folders are never followed (see `confine`): a symlinked
    // `.okstra` or `tasks` is an error, a link further down is skipped, so
    // the board never leaves the project.
    let okstra = crate::confine::okstra_dir(project_root)?;
    crate::confine::check_no_links(&okstra, Path::new("tasks"))?;
    let mut level = vec![okstra.join("tasks")];
    // project-id / task-group / task-id / run
    for _ in 0..4 {
        level = par_map(&level, subdirs).into_iter().flatten().collect();
    }
    // Folders without a manifest are filtered when loading (one open
    // instead of a stat and an open per run).
    level.sort();
    Ok(level)
}

/// Below this many items per thread, threads cost more than they save.
const MIN_ITEMS_PER_THREAD: usize = 64;

/// `items.iter().map(work)`, in order, split over the available cores when
/// there is enough to split (a project can hold thousands of runs; the work
/// per run is independent).
pub fn par_map<'a, T: Sync, R: Send>(items: &'a [T], work: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if threads < 2 || items.len() < MIN_ITEMS_PER_THREAD * 2 {
        return items.iter().map(work).collect();
    }
    let chunk = items.len().div_ceil(threads).max(MIN_ITEMS_PER_THREAD);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("a worker thread does not panic"))
            .collect()
    })
}

/// The project root to use: the flag, else the current directory.
pub fn project_root(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let root = match flag {
        Some(path) => path.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !root.is_dir() {
        anyhow::bail!(
            "invalid value `{}` for `--project-root`: expected an existing directory",
            root.display()
        );
    }
    Ok(root)
}

/// The report of `reap` or `cleanup`, which carries its own
/// `schemaVersion`: the schema its `--json` form follows.
pub trait PlanReport: serde::Serialize {
    const SCHEMA: &'static str;
}

/// What `reap` and `cleanup` answer once they have planned (and, with
/// `--execute`, done) their work: the JSON report, or one escaped line per
/// thing (`lines`) and per note (`notes`: what it left alone and why);
/// and on stderr that there was nothing to do (`verb`: what the command
/// does) or, on a dry run, how to do it.
pub fn plan_reply<R: PlanReport>(
    report: &R,
    json: bool,
    lines: &[String],
    notes: &[String],
    execute: bool,
    verb: &str,
    okstra_dir: &Path,
) -> anyhow::Result<crate::output::Reply> {
    let answer = Planned {
        report,
        lines,
        notes,
    };
    let reply = crate::output::Reply::answer(&answer, json)?;
    let nothing = lines
        .is_empty()
        .then(|| format!("nothing to {verb} under `{}`", okstra_dir.display()));
    Ok(reply.then_say(move || match nothing {
        Some(nothing) => crate::diag::progress(nothing),
        None if !execute => crate::diag::progress("dry run; pass `--execute` to do the above"),
        None => {}
    }))
}

/// A `reap` or `cleanup` plan: its report as JSON, its lines and notes as
/// text.
struct Planned<'a, R> {
    report: &'a R,
    lines: &'a [String],
    notes: &'a [String],
}

impl<R: serde::Serialize> serde::Serialize for Planned<'_, R> {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(to)
    }
}

impl<R: PlanReport> crate::output::Answer for Planned<'_, R> {
    const SCHEMA: &'static str = R::SCHEMA;
    const VERSION: Option<u32> = None;
}

impl<R> crate::output::Text for Planned<'_, R> {
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        for line in self.lines.iter().chain(self.notes) {
            writeln!(out, "{}", crate::fsread::escape(line))?;
        }
        Ok(())
    }
}
