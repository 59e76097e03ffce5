//! `okstra cleanup`: list (or, with `--execute`, remove) what finished or
//! dead runs left behind. A dry run unless `--execute`.
//!
//! Only what a run's team state records, and only where it is provably
//! okstra's: a copy only when the marker at its root names that run
//! (`workspace::remove`); a snapshot ref only under `refs/okstra/`; a run
//! branch only under `refs/heads/okstra/`, only while it still names the
//! commit okstra put there (`update-ref -d <ref> <commit>`: git compares
//! and deletes under its lock), and only once it landed or the run is older
//! than `--older-than`; a log only inside the run folder, reached through
//! no symlink, and only once the run did nothing for `--older-than` (a run
//! that just finished keeps the record of what happened); a
//! `.okstra/.staging-*` folder a killed render left, under the lock renders
//! hold; an empty folder only in this project's own folder of copies, never
//! one a run that is still going may use. Never a user file, ref or branch:
//! a copy's path must lie beneath okstra's workspaces folder through no
//! symlink, and its marker name the run and the worker it is named for — a
//! marker copied into another folder proves nothing (`workspace::owned`).
//!
//! A run is cleaned up when it finished (its report is rendered, or its
//! change landed) or did nothing for `--older-than`, nothing of it runs,
//! and nobody holds its lease; with `--execute` this command takes the
//! lease for the time it works on the run.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::catalog::Role;
use crate::cli::CleanupArgs;
use crate::clock;
use crate::derive::liveness;
use crate::diag;
use crate::exit::ExitStatus;
use crate::git::Git;
use crate::run::Run;
use crate::run::lease::Lease;
use crate::run::team_state::TeamState;
use crate::vocab::WorkspaceKind;
use crate::workspace;

/// Version of the `--json` document.
const CLEANUP_VERSION: u32 = 1;
/// okstra's namespaces in the user's repository.
const SNAPSHOT_REFS: &str = "refs/okstra/";
const RUN_BRANCHES: &str = "refs/heads/okstra/";

/// What one item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    Copy,
    SnapshotRef,
    Branch,
    Log,
    /// A `.okstra/.staging-*` folder a render killed midway left.
    Staging,
    /// An empty folder in the project's folder of copies.
    Folder,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Copy => "copy",
            Kind::SnapshotRef => "snapshot ref",
            Kind::Branch => "branch",
            Kind::Log => "log",
            Kind::Staging => "staging folder",
            Kind::Folder => "empty folder",
        }
    }
}

/// One thing to remove (and maybe removed).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Item {
    kind: Kind,
    run_dir: PathBuf,
    /// A path, or a ref name.
    target: String,
    reason: String,
    /// `planned` in a dry run; what happened with `--execute`.
    outcome: String,
    #[serde(skip)]
    failed: bool,
    #[serde(skip)]
    expected: Option<String>,
    #[serde(skip)]
    copy_kind: Option<WorkspaceKind>,
}

/// A run left alone, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Skipped {
    run_dir: PathBuf,
    reason: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    schema_version: u32,
    execute: bool,
    project_root: &'a Path,
    older_than_seconds: u64,
    items: &'a [Item],
    skipped: &'a [Skipped],
}

impl crate::lifecycle::PlanReport for Report<'_> {
    const SCHEMA: &'static str = "cleanup-answer.schema.json";
}

pub fn cleanup_command(args: &CleanupArgs) -> Result<crate::output::Reply> {
    let root = super::project_root(args.project_root.as_deref())?;
    let okstra_dir = crate::confine::okstra_dir(&root)?;
    let older_than = i64::try_from(args.older_than.as_secs()).unwrap_or(i64::MAX);
    let now = clock::unix_now();
    let mut items = Vec::new();
    let mut skipped = Vec::new();
    // The project's folder of copies, and the run folders in it that a run
    // left alone may still use.
    let mut copies_folder = None;
    let mut in_use = Vec::new();
    // Finished runs whose logs stay until they are `--older-than`.
    let mut logs_kept = 0;
    for dir in super::run_dirs(&root)? {
        let Ok(run) = Run::open(&dir) else {
            continue;
        };
        let run_folder = workspace::run_folder(&workspace::RunIdentity::of(&run)).ok();
        if copies_folder.is_none() {
            copies_folder = run_folder
                .as_deref()
                .and_then(|folder| folder.ancestors().nth(4))
                .map(Path::to_path_buf);
        }
        in_use.extend(run_folder);
        let state = match run.team_state() {
            Ok(state) => state,
            Err(err) => {
                diag::warning(format_args!("{err:#}"));
                continue;
            }
        };
        if let Some(holder) = Lease::held_by(&run)? {
            skipped.push(Skipped {
                run_dir: dir.clone(),
                reason: format!(
                    "its lease is held by pid {} (`{}`)",
                    holder.pid, holder.command
                ),
            });
            continue;
        }
        if let Some(why) = still_running(&run, &state) {
            skipped.push(Skipped {
                run_dir: dir.clone(),
                reason: why,
            });
            continue;
        }
        let idle = now.saturating_sub(last_activity(&run, &state));
        let finished = finished(&run, &state);
        let old = idle >= older_than;
        if !(finished || old) {
            skipped.push(Skipped {
                run_dir: dir.clone(),
                reason: format!(
                    "it has not finished and was active {} ago (see `--older-than`)",
                    clock::short_duration(idle)
                ),
            });
            continue;
        }
        let why = if finished {
            "the run finished".to_owned()
        } else {
            format!("the run did nothing for {}", clock::short_duration(idle))
        };
        let mut found = plan(&run, &state, &why, old);
        if !old && has_logs(&run, &state) {
            logs_kept += 1;
        }
        if args.execute {
            // Held while this run is cleaned: no driver starts meanwhile.
            match Lease::acquire(&run, "okstra cleanup", std::time::Duration::ZERO) {
                Ok(lease) => {
                    // Cleaned: its folder of copies may go once empty.
                    in_use.pop();
                    for item in &mut found {
                        remove(item, &run);
                    }
                    drop(lease);
                }
                Err(err) => {
                    skipped.push(Skipped {
                        run_dir: dir.clone(),
                        reason: format!("{err:#}"),
                    });
                    continue;
                }
            }
        } else {
            in_use.pop();
        }
        items.extend(found);
    }
    if let Some(folder) = &copies_folder {
        let mut empty = Vec::new();
        empty_folders(folder, &in_use, &mut empty);
        for path in empty {
            let mut item = Item {
                kind: Kind::Folder,
                run_dir: path.clone(),
                target: path.to_string_lossy().into_owned(),
                reason: "nothing is left in it".to_owned(),
                outcome: "planned".into(),
                failed: false,
                expected: None,
                copy_kind: None,
            };
            if args.execute {
                remove_empty(&mut item);
            }
            items.push(item);
        }
    }

    if okstra_dir.is_dir() {
        items.extend(staging(&okstra_dir, args.execute)?);
    }

    let report = Report {
        schema_version: CLEANUP_VERSION,
        execute: args.execute,
        project_root: &root,
        older_than_seconds: args.older_than.as_secs(),
        items: &items,
        skipped: &skipped,
    };
    let lines: Vec<String> = items
        .iter()
        .map(|item| describe(item, args.execute))
        .collect();
    let mut notes: Vec<String> = skipped
        .iter()
        .map(|skip| format!("skipped `{}`: {}", skip.run_dir.display(), skip.reason))
        .collect();
    if logs_kept > 0 {
        notes.push(format!(
            "kept the logs of {logs_kept} finished run{} active within `--older-than` ({}); `--older-than 0s` removes them too",
            if logs_kept == 1 { "" } else { "s" },
            humantime::format_duration(args.older_than)
        ));
    }
    let reply = super::plan_reply(
        &report,
        args.json,
        &lines,
        &notes,
        args.execute,
        "clean up",
        &okstra_dir,
    )?;
    if items.iter().any(|i| i.failed) {
        return Ok(reply.with_status(ExitStatus::Failure));
    }
    Ok(reply)
}

/// The `.staging-*` folders renders killed midway left in `okstra_dir`
/// (removed with `execute`), under the lock every render holds while it
/// stages: none of them is a live render's.
fn staging(okstra_dir: &Path, execute: bool) -> Result<Vec<Item>> {
    let _lock = crate::bundle::lock_okstra_dir(okstra_dir)?;
    let mut items = Vec::new();
    for folder in crate::bundle::leftover_staging(okstra_dir) {
        let mut item = Item {
            kind: Kind::Staging,
            run_dir: okstra_dir.to_path_buf(),
            target: folder.to_string_lossy().into_owned(),
            reason: "a render was stopped before it finished".to_owned(),
            outcome: "planned".into(),
            failed: false,
            expected: None,
            copy_kind: None,
        };
        if execute {
            match std::fs::remove_dir_all(&folder) {
                Ok(()) => item.outcome = "removed".into(),
                Err(err) => {
                    item.outcome = format!("failed: {err}");
                    item.failed = true;
                }
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// Why something of the run may still be working, if it may: an attempt
/// that still runs, or one the host holds while nothing stopped the run (a
/// failed or cancelled run's unanswered task keeps nothing alive).
fn still_running(run: &Run, state: &TeamState) -> Option<String> {
    let newest = crate::run::events::newest_of(run, &crate::run::events::LIFECYCLE);
    let facts = liveness::RunFacts::of(
        state,
        crate::run::live::liveness,
        false,
        newest
            .as_ref()
            .map(|(kind, fields)| (kind.as_str(), fields)),
        finished(run, state),
    );
    let stopped = liveness::outcome(&facts).is_stopped();
    state
        .latest_attempts()
        .into_iter()
        .zip(&facts.attempts)
        .find_map(|(record, life)| match life {
            liveness::State::Running => Some(format!(
                "`{}` has not ended: it still runs",
                record.dispatch_name
            )),
            liveness::State::WithHost if !stopped => Some(format!(
                "`{}` has not ended: the host holds it, unanswered",
                record.dispatch_name
            )),
            _ => None,
        })
}

/// The run finished: its report is rendered, or its change landed.
fn finished(run: &Run, state: &TeamState) -> bool {
    state.landing.is_some()
        || run
            .layout()
            .report_dir()
            .join(crate::run::layout::REPORT_MARKDOWN_NAME)
            .is_file()
}

/// When the run last did something (Unix seconds): its team state or its
/// lead events written, an attempt started or ended.
fn last_activity(run: &Run, state: &TeamState) -> i64 {
    let modified = |path: &Path| {
        path.symlink_metadata()
            .and_then(|meta| meta.modified())
            .map(clock::to_unix)
            .ok()
    };
    let records = state.dispatches.iter().filter_map(|r| {
        r.ended_at
            .as_deref()
            .or(r.started_at.as_deref())
            .and_then(clock::parse_rfc3339)
    });
    [
        modified(&run.team_state_path),
        modified(&run.lead_events_path),
    ]
    .into_iter()
    .flatten()
    .chain(records)
    .max()
    .unwrap_or(0)
}

/// What the run left that may go.
fn plan(run: &Run, state: &TeamState, why: &str, old: bool) -> Vec<Item> {
    let item = |kind: Kind, target: String, reason: String| Item {
        kind,
        run_dir: run.dir.clone(),
        target,
        reason,
        outcome: "planned".into(),
        failed: false,
        expected: None,
        copy_kind: None,
    };
    let mut items = Vec::new();
    let mut copies = BTreeSet::new();
    let run_dir = std::fs::canonicalize(&run.dir).unwrap_or_else(|_| run.dir.clone());
    let mut refs = BTreeSet::new();
    for record in &state.dispatches {
        let Some(copy) = &record.workspace else {
            continue;
        };
        if copy.path.symlink_metadata().is_ok() && copies.insert(copy.path.clone()) {
            let mut found = item(
                Kind::Copy,
                copy.path.to_string_lossy().into_owned(),
                why.to_owned(),
            );
            found.copy_kind = copy.kind.known();
            // A dry run says already what `--execute` would leave alone.
            if let Some(kind) = found.copy_kind
                && let Err(err @ workspace::Error::Foreign { .. }) =
                    workspace::removable(&copy.path, kind, &run.project_root, &run_dir)
            {
                found.outcome = format!("skipped: {err}");
            }
            items.push(found);
        }
        if let Some(reference) = &copy.snapshot_ref
            && reference.starts_with(SNAPSHOT_REFS)
        {
            refs.insert(reference.clone());
        }
    }
    // The run's one snapshot ref is named by its identity alone: the
    // anchors checker may have taken it for a run with no copy at all.
    refs.insert(workspace::snapshot_ref(&workspace::RunIdentity::of(run)));
    let git = Git::at(&run.project_root);
    for reference in refs {
        if let Ok(Some(commit)) = git.commit(&reference) {
            let mut found = item(Kind::SnapshotRef, reference, why.to_owned());
            found.expected = Some(commit);
            items.push(found);
        }
    }
    if let Some(executor) = run.in_role(Role::Executor).next()
        && let Some(name) = state
            .dispatches
            .iter()
            .filter(|r| r.dispatch_name == executor.dispatch_name)
            .find_map(|r| r.branch.as_ref().map(|b| b.name.clone()))
        && name.starts_with(RUN_BRANCHES)
        && let Some(recorded) = state.branch_tip(&executor.dispatch_name)
    {
        let landed = state.landing.as_ref().is_some_and(|l| l.commit == recorded);
        match git.commit(&name) {
            Ok(Some(tip)) if tip == recorded && (landed || old) => {
                let mut found = item(
                    Kind::Branch,
                    name,
                    if landed {
                        "its change landed".to_owned()
                    } else {
                        format!("{why}, and its change never landed")
                    },
                );
                found.expected = Some(recorded.to_owned());
                items.push(found);
            }
            // Moved since okstra made it: someone else's now.
            Ok(Some(_) | None) | Err(_) => {}
        }
    }
    // The logs say what happened: a run that just finished keeps them until
    // it is `--older-than`.
    if old {
        for log in logs(run, state) {
            items.push(item(
                Kind::Log,
                log.to_string_lossy().into_owned(),
                why.to_owned(),
            ));
        }
    }
    items
}

/// The run's attempt logs and its dispatch log that exist as files inside
/// the run folder, each once.
fn logs(run: &Run, state: &TeamState) -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    state
        .dispatches
        .iter()
        .filter_map(|r| r.log_path.clone())
        .chain([run.layout().dispatch_log()])
        .filter(|log| {
            log.symlink_metadata().is_ok_and(|m| m.is_file())
                && crate::confine::is_inside(log, &run.dir)
                && seen.insert(log.clone())
        })
        .collect()
}

fn has_logs(run: &Run, state: &TeamState) -> bool {
    !logs(run, state).is_empty()
}

/// Levels below the project's folder of copies down to a run's folder:
/// project id, task group, task id, run id. A run's folder holds its copies,
/// which this walk never enters.
const RUN_FOLDER_DEPTH: usize = 4;

/// Every folder of the project's folder of copies `folder` (itself
/// included) down to the runs' folders that is empty or holds only such
/// folders, deepest first, as `remove_dir` takes them; never one of
/// `in_use` (a run left alone may put a copy there), never through a
/// symlink, never inside a copy. Whether `folder` ends up empty.
fn empty_folders(folder: &Path, in_use: &[PathBuf], into: &mut Vec<PathBuf>) -> bool {
    empty_below(folder, RUN_FOLDER_DEPTH, in_use, into)
}

fn empty_below(folder: &Path, depth: usize, in_use: &[PathBuf], into: &mut Vec<PathBuf>) -> bool {
    let is_dir = folder.symlink_metadata().is_ok_and(|m| m.is_dir());
    if !is_dir || in_use.iter().any(|used| used == folder) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    let mut all_empty = true;
    for entry in entries {
        let empty = entry.is_ok_and(|entry| {
            depth > 0
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && empty_below(&entry.path(), depth - 1, in_use, into)
        });
        all_empty &= empty;
    }
    if all_empty {
        into.push(folder.to_path_buf());
    }
    all_empty
}

/// Remove one planned empty folder (only while it is empty).
fn remove_empty(item: &mut Item) {
    item.outcome = match std::fs::remove_dir(&item.target) {
        Ok(()) => "removed".into(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => "removed".into(),
        // Something came into it meanwhile: it is in use.
        Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty => {
            "skipped: no longer empty".into()
        }
        Err(err) => {
            item.failed = true;
            format!("failed: {err}")
        }
    };
}

/// Remove one planned item, each checked again as it goes.
fn remove(item: &mut Item, run: &Run) {
    if item.outcome != "planned" {
        return;
    }
    let result: Result<(), String> = match item.kind {
        Kind::Folder => return remove_empty(item),
        Kind::Copy => {
            let Some(kind) = item.copy_kind else {
                item.outcome = "skipped: a workspace kind okstra does not know".into();
                return;
            };
            let run_dir = std::fs::canonicalize(&run.dir).unwrap_or_else(|_| run.dir.clone());
            match workspace::remove(Path::new(&item.target), kind, &run.project_root, &run_dir) {
                Ok(()) => Ok(()),
                Err(err @ workspace::Error::Foreign { .. }) => {
                    item.outcome = format!("skipped: {err}");
                    return;
                }
                Err(err) => Err(format!("{:#}", anyhow::Error::from(err))),
            }
        }
        Kind::SnapshotRef | Kind::Branch => {
            let expected = item.expected.clone().unwrap_or_default();
            workspace::branch::delete(&run.project_root, &item.target, &expected)
                .map_err(|err| err.to_string())
        }
        // Listed and removed by `staging`, under the `.okstra/` lock.
        Kind::Staging => return,
        Kind::Log => crate::beneath::unlink(Path::new(&item.target)).or_else(|err| {
            if err.kind() == io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(err.to_string())
            }
        }),
    };
    match result {
        Ok(()) => item.outcome = "removed".into(),
        Err(why) => {
            item.outcome = format!("failed: {why}");
            item.failed = true;
        }
    }
}

/// One text line for an item.
fn describe(item: &Item, execute: bool) -> String {
    let verb = if execute { "" } else { "would " };
    let outcome = if execute || item.outcome != "planned" {
        format!(" -> {}", item.outcome)
    } else {
        String::new()
    };
    if item.kind == Kind::Folder {
        return format!(
            "{verb}remove empty folder `{}`: {}{outcome}",
            item.target, item.reason
        );
    }
    let run = item
        .run_dir
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    format!(
        "{verb}remove {} `{}` of {run}: {}{outcome}",
        item.kind.noun(),
        item.target,
        item.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_what_it_would_do_and_did() {
        let mut item = Item {
            kind: Kind::Branch,
            run_dir: PathBuf::from("/p/.okstra/tasks/a/b/c/implementation-001"),
            target: "refs/heads/okstra/a/b/c/implementation-001".into(),
            reason: "its change landed".into(),
            outcome: "planned".into(),
            failed: false,
            expected: None,
            copy_kind: None,
        };
        assert_eq!(
            describe(&item, false),
            "would remove branch `refs/heads/okstra/a/b/c/implementation-001` of implementation-001: its change landed"
        );
        item.outcome = "removed".into();
        assert!(describe(&item, true).ends_with("its change landed -> removed"));
    }
}
