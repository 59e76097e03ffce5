//! `okstra reap`: find what dead wrappers left behind and, with `--execute`,
//! clean it up. A dry run unless `--execute`.
//!
//! Candidates are status sidecars under the project's `.okstra/` that still
//! say `started` while the wrapper pid they record is gone (or is now a
//! different process). For each:
//!
//! - its recorded process group still runs and is provably the one recorded
//!   ([`process::identify_group`]) → stop the group (SIGTERM, 5 s grace,
//!   SIGKILL) and finish the sidecar with `reason: orphaned-group-stopped`;
//! - otherwise → nothing to kill; finish the sidecar with `reason:
//!   wrapper-lost`.
//!
//! A second pass looks at each run's attempt records: a wrapper that still
//! runs while the driver that started it (`okstra run`, `okstra dispatch`)
//! is gone and nobody holds the run's lease is stopped (SIGTERM, grace,
//! SIGKILL; its guardian stops the CLI's group) and its attempt recorded
//! `cancelled`, so `okstra run <run-dir>` runs it again. (A resume, by
//! contrast, adopts such a wrapper and waits for it.)
//!
//! Finishing a sidecar means `stage: exited`, `terminated_by: reaper`,
//! `reason`, `ended_ts`, written atomically. Nothing else is ever signalled:
//! only process groups named by okstra sidecars under this project, each
//! identified again right before the signal.
//!
//! Then the isolated copies (`workspace`) the runs' dispatch records name:
//! a copy whose every attempt's dispatcher is gone and whose wrapper has
//! ended (its sidecar finished, or never written) is removed — only when
//! the marker at its root names this project and that run
//! (`workspace::remove`); a path from a record is never trusted alone.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::cli::ReapArgs;
use crate::clock;
use crate::confine;
use crate::diag;
use crate::exit::ExitStatus;
use crate::process_group::{self as process, Group, ProcTable, Stopped};
use crate::provider_exec::sidecar::{self, Sidecar};

use crate::run::Run;
use crate::run::team_state::DispatchRecord;
use crate::vocab::Reason;
use crate::vocab::{Word, WorkspaceKind};
use crate::workspace;

/// Version of the `--json` document.
const REAP_VERSION: u32 = 1;
/// `reason` written for a stopped orphan group.
const REASON_STOPPED: Reason = Reason::OrphanedGroupStopped;
/// `reason` written when there was nothing left to stop.
const REASON_LOST: Reason = Reason::WrapperLost;

/// What the reaper does about one sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    /// Stop the orphaned group, then finish the sidecar.
    StopGroup,
    /// Only finish the sidecar: nothing of ours is running.
    MarkLost,
    /// Stop a wrapper whose driver is gone and record its attempt cancelled.
    StopWrapper,
}

/// One planned (and maybe performed) action.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Action {
    #[serde(rename = "action")]
    kind: Kind,
    sidecar: PathBuf,
    wrapper_pid: i32,
    pgid: Option<i32>,
    /// Live members of the group when planned.
    pids: Vec<i32>,
    reason: String,
    /// `planned` in a dry run; what happened with `--execute`.
    outcome: String,
    #[serde(skip)]
    failed: bool,
}

/// One isolated copy to remove (and maybe removed).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct CopyAction {
    path: PathBuf,
    kind: Word<WorkspaceKind>,
    run_dir: PathBuf,
    /// The attempts that worked in it (`dispatch#attempt`).
    attempts: Vec<String>,
    reason: String,
    /// `planned` in a dry run; what happened with `--execute`.
    outcome: String,
    #[serde(skip)]
    failed: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    schema_version: u32,
    execute: bool,
    project_root: &'a Path,
    actions: &'a [Action],
    copies: &'a [CopyAction],
}

impl crate::lifecycle::PlanReport for Report<'_> {
    const SCHEMA: &'static str = "reap-answer.schema.json";
}

pub fn reap_command(args: &ReapArgs) -> Result<crate::output::Reply> {
    let root = crate::lifecycle::project_root(args.project_root.as_deref())?;
    // A symlinked `.okstra` would lead the reaper to processes recorded
    // outside the project: refused, never followed.
    let okstra_dir = confine::okstra_dir(&root)?;
    let table = ProcTable::scan();
    let mut actions = Vec::new();
    for path in find_sidecars(&okstra_dir) {
        match sidecar::read(&path) {
            Ok(Some(side)) => actions.extend(plan(&side, &table)),
            Ok(None) => {}
            Err(err) => {
                diag::warning(format_args!("{err:#}"));
            }
        }
    }
    if args.execute {
        for action in &mut actions {
            perform(action);
        }
    }
    for dir in crate::lifecycle::run_dirs(&root)? {
        let Ok(run) = crate::run::Run::open(&dir) else {
            continue;
        };
        let orphans = match super::cancel::orphaned(&run) {
            Ok(orphans) => orphans,
            Err(err) => {
                diag::warning(format_args!("{err:#}"));
                continue;
            }
        };
        if orphans.is_empty() {
            continue;
        }
        let mut planned: Vec<Action> = orphans
            .iter()
            .map(|orphan| Action {
                kind: Kind::StopWrapper,
                sidecar: orphan.record.sidecar_path.clone().unwrap_or_default(),
                wrapper_pid: orphan.pid,
                pgid: None,
                pids: vec![orphan.pid],
                reason: format!(
                    "`{}` of `{}`: its driver{} is gone and the wrapper still runs",
                    orphan.record.dispatch_name,
                    run.run_id,
                    orphan
                        .record
                        .dispatcher_pid
                        .map_or_else(String::new, |pid| format!(" pid {pid}"))
                ),
                outcome: "planned".into(),
                failed: false,
            })
            .collect();
        if args.execute {
            let outcome = super::cancel::reap_orphans(&run, orphans);
            for action in &mut planned {
                match &outcome {
                    Ok(_) => action.outcome = "stopped; attempt recorded cancelled".into(),
                    Err(err) => {
                        action.outcome = format!("failed: {err:#}");
                        action.failed = true;
                    }
                }
            }
        }
        actions.extend(planned);
    }
    // Planned after the sidecars are finished: a wrapper the reaper just
    // declared lost no longer holds its copy.
    let mut copies = plan_copies(&root, args.execute);
    if args.execute {
        for copy in &mut copies {
            remove_copy(copy, &root);
        }
    }

    let report = Report {
        schema_version: REAP_VERSION,
        execute: args.execute,
        project_root: &root,
        actions: &actions,
        copies: &copies,
    };
    let lines: Vec<String> = actions
        .iter()
        .map(|action| describe(action, args.execute))
        .chain(copies.iter().map(|copy| describe_copy(copy, args.execute)))
        .collect();
    let reply = crate::lifecycle::plan_reply(
        &report,
        args.json,
        &lines,
        &[],
        args.execute,
        "reap",
        &okstra_dir,
    )?;
    if actions.iter().any(|a| a.failed) || copies.iter().any(|c| c.failed) {
        return Ok(reply.with_status(ExitStatus::Failure));
    }
    Ok(reply)
}

/// Every `*.status.json` under `dir`, without following symlinks (so the
/// walk can never leave the project's `.okstra/`).
fn find_sidecars(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(crate::run::layout::is_sidecar_name)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Whether `argv` starts one of the catalog's provider CLIs (its program's
/// name is a provider's binary).
fn starts_a_provider_cli(argv: &[String]) -> bool {
    argv.first().is_some_and(|program| {
        let name = process::base_name(program);
        crate::catalog::Provider::ALL
            .iter()
            .any(|provider| provider.binary() == name)
    })
}

/// What to do about one sidecar, if anything. Sidecars without a pid or a
/// start time cannot be judged and are left alone.
fn plan(side: &Sidecar, table: &ProcTable) -> Option<Action> {
    if side.is_exited() {
        return None;
    }
    let wrapper_pid = side.pid?;
    let started = side.started_ts?;
    if process::wrapper_alive(wrapper_pid, started) {
        return None;
    }
    let group = side
        .pgid
        .map_or(Group::Gone, |pgid| match side.recorded_argv() {
            // The wrapper records the provider CLI it started: a sidecar that
            // names another program is not one okstra wrote, and its group is
            // nobody okstra may stop.
            Some(argv) if !starts_a_provider_cli(&argv) => Group::Foreign(format!(
                "the sidecar records `{}`, which is no provider CLI okstra starts",
                crate::fsread::escape(argv.first().map_or("", String::as_str))
            )),
            argv => process::identify_group(table, pgid, started, argv.as_deref()),
        });
    let (action, pids, reason) = match group {
        Group::Ours(pids) => (
            Kind::StopGroup,
            pids,
            format!("wrapper pid {wrapper_pid} is gone but its process group still runs"),
        ),
        Group::Gone => (
            Kind::MarkLost,
            Vec::new(),
            format!("wrapper pid {wrapper_pid} is gone and nothing of its group is left"),
        ),
        Group::Foreign(why) => (
            Kind::MarkLost,
            Vec::new(),
            format!(
                "wrapper pid {wrapper_pid} is gone; its group id now belongs to others ({why})"
            ),
        ),
    };
    Some(Action {
        kind: action,
        sidecar: side.path.clone(),
        wrapper_pid,
        pgid: side.pgid,
        pids,
        reason,
        outcome: "planned".into(),
        failed: false,
    })
}

/// Carry out one action, re-checking everything first: the sidecar may have
/// been finished, and the group must still be the recorded one.
fn perform(action: &mut Action) {
    let fresh = match sidecar::read(&action.sidecar) {
        Ok(Some(side)) => side,
        Ok(None) => {
            action.outcome = "skipped: the sidecar is gone".into();
            return;
        }
        Err(err) => {
            action.outcome = format!("failed: {err:#}");
            action.failed = true;
            return;
        }
    };
    // Re-plan against a fresh process table; act only if the plan holds.
    let Some(again) = plan(&fresh, &ProcTable::scan()) else {
        action.outcome = "skipped: no longer needed".into();
        return;
    };
    let mut killed = false;
    let reason = match (action.kind, again.kind) {
        (Kind::StopGroup, Kind::StopGroup) => {
            let Some(pgid) = fresh.pgid else {
                action.outcome = "skipped: no process group recorded".into();
                return;
            };
            match process::stop_group(pgid, process::GRACE) {
                Ok(Stopped::Terminated) => action.outcome = "terminated".into(),
                Ok(Stopped::AlreadyGone) => action.outcome = "already-gone".into(),
                Ok(Stopped::Killed) => {
                    killed = true;
                    action.outcome = "killed".into();
                }
                Ok(Stopped::Survived) => {
                    action.outcome = format!("failed: group {pgid} survived SIGKILL");
                    action.failed = true;
                    return;
                }
                Err(errno) => {
                    action.outcome = format!("failed: cannot signal group {pgid}: {errno}");
                    action.failed = true;
                    return;
                }
            }
            REASON_STOPPED
        }
        // The group vanished (or stopped being ours) since planning: there
        // is nothing to signal any more, only the record to finish.
        (Kind::StopGroup | Kind::MarkLost, Kind::MarkLost) => {
            action.outcome = "marked".into();
            REASON_LOST
        }
        (Kind::MarkLost, Kind::StopGroup) => {
            action.outcome =
                "skipped: its group appeared since planning; run `okstra reap` again".into();
            return;
        }
        // Planned from the run records, carried out there (never here).
        (Kind::StopWrapper, _) | (_, Kind::StopWrapper) => return,
    };
    if let Err(err) = fresh.mark_reaped(reason, clock::unix_now(), killed) {
        action.outcome = format!("{}; failed: {err:#}", action.outcome);
        action.failed = true;
    }
}

/// Every isolated copy the project's runs record that nothing uses any more:
/// each attempt that worked in it has a dead dispatcher and an ended
/// wrapper (with `execute`, the sidecar must say so; in a dry run a wrapper
/// that is gone counts, as the reaper would finish its sidecar first).
fn plan_copies(root: &Path, execute: bool) -> Vec<CopyAction> {
    let Ok(runs) = crate::lifecycle::run_dirs(root) else {
        return Vec::new();
    };
    let mut copies: Vec<CopyAction> = Vec::new();
    let mut held: Vec<PathBuf> = Vec::new();
    for dir in runs {
        let Ok(run) = Run::open(&dir) else {
            continue;
        };
        let Ok(state) = run.team_state() else {
            continue;
        };
        for record in &state.dispatches {
            let Some(copy) = &record.workspace else {
                continue;
            };
            if copy.path.symlink_metadata().is_err() {
                continue;
            }
            let attempt = format!("{}#{}", record.dispatch_name, record.attempt);
            match still_used(record, &run, execute) {
                Some(_) => held.push(copy.path.clone()),
                None => match copies.iter_mut().find(|c| c.path == copy.path) {
                    Some(found) => found.attempts.push(attempt),
                    None => copies.push(CopyAction {
                        path: copy.path.clone(),
                        kind: copy.kind.clone(),
                        run_dir: dir.clone(),
                        attempts: vec![attempt],
                        reason: format!(
                            "dispatcher pid {} is gone and its wrapper has ended",
                            record
                                .dispatcher_pid
                                .map_or_else(|| "?".to_owned(), |pid| pid.to_string())
                        ),
                        outcome: "planned".into(),
                        failed: false,
                    }),
                },
            }
        }
    }
    // A copy another attempt still works in stays, whatever the rest say.
    copies.retain(|copy| !held.contains(&copy.path));
    copies
}

/// Why `record`'s attempt may still be using its copy, if it may.
fn still_used(record: &DispatchRecord, run: &Run, execute: bool) -> Option<&'static str> {
    // A native attempt has no process of ours: the host's session works in
    // its copy until the attempt is recorded as ended.
    if record.runner == Some(crate::catalog::Runner::NativeSession) && record.ending.is_none() {
        return Some("the host's session may work in it");
    }
    let since = record
        .started_at
        .as_deref()
        .and_then(clock::parse_rfc3339)
        .unwrap_or_else(clock::unix_now);
    if record
        .dispatcher_pid
        .is_some_and(|pid| process::wrapper_alive(pid, since))
    {
        return Some("its dispatcher runs");
    }
    let sidecar_path = record.sidecar_path.as_ref().map(|path| {
        confine::inside(run.resolve(path), &run.dir, "`sidecarPath`").unwrap_or_default()
    });
    let found = match sidecar_path.filter(|path| !path.as_os_str().is_empty()) {
        Some(path) => match sidecar::read(&path) {
            Ok(found) => found,
            Err(_) => return Some("its sidecar cannot be read"),
        },
        None if record.sidecar_path.is_some() => return Some("its sidecar is outside the run"),
        None => None,
    };
    match found {
        None => None,
        Some(side) if side.is_exited() => None,
        Some(side) => {
            let alive = match (side.pid, side.started_ts) {
                (Some(pid), Some(started)) => process::wrapper_alive(pid, started),
                _ => true,
            };
            (alive || execute).then_some("its wrapper has not ended")
        }
    }
}

/// Remove one planned copy, checked against its marker.
fn remove_copy(copy: &mut CopyAction, root: &Path) {
    let Some(kind) = copy.kind.known() else {
        copy.outcome = format!("skipped: unknown workspace kind `{}`", copy.kind);
        return;
    };
    match workspace::remove(&copy.path, kind, root, &copy.run_dir) {
        Ok(()) => copy.outcome = "removed".into(),
        Err(err @ workspace::Error::Foreign { .. }) => {
            copy.outcome = format!("skipped: {err}");
        }
        Err(err) => {
            copy.outcome = format!("failed: {:#}", anyhow::Error::from(err));
            copy.failed = true;
        }
    }
}

/// A line's tense: what it did and how that went (`--execute`), or what
/// it would do.
fn tense(execute: bool, outcome: &str) -> (&'static str, String) {
    if execute {
        ("", format!(" -> {outcome}"))
    } else {
        ("would ", String::new())
    }
}

/// One text line for a copy.
fn describe_copy(copy: &CopyAction, execute: bool) -> String {
    let (verb, outcome) = tense(execute, &copy.outcome);
    format!(
        "{verb}remove {} copy `{}` of {}: {}{outcome}",
        copy.kind,
        copy.path.display(),
        copy.attempts.join(", "),
        copy.reason
    )
}

/// One text line for an action.
fn describe(action: &Action, execute: bool) -> String {
    let what = match action.kind {
        Kind::StopGroup => {
            let pids: Vec<String> = action.pids.iter().map(ToString::to_string).collect();
            format!(
                "stop group {} (pids {})",
                action.pgid.unwrap_or_default(),
                pids.join(" ")
            )
        }
        Kind::MarkLost => "mark lost".to_owned(),
        Kind::StopWrapper => format!("stop wrapper {}", action.wrapper_pid),
    };
    let (verb, outcome) = tense(execute, &action.outcome);
    format!(
        "{verb}{what}: `{}`: {}{outcome}",
        action.sidecar.display(),
        action.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_finds_sidecars_and_ignores_symlinked_folders() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join(".okstra/tasks/p/g/t/run/prompts");
        fs::create_dir_all(&inside).unwrap();
        fs::write(inside.join("a.md.status.json"), "{}").unwrap();
        fs::write(inside.join("a.md"), "x").unwrap();
        let outside = dir.path().join("elsewhere");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("b.md.status.json"), "{}").unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join(".okstra/link")).unwrap();
        let found = find_sidecars(&dir.path().join(".okstra"));
        assert_eq!(found, vec![inside.join("a.md.status.json")]);
    }

    #[test]
    fn finished_or_unjudgeable_sidecars_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.md.status.json");
        for json in [
            r#"{"stage":"exited","pid":999999999,"started_ts":1}"#,
            r#"{"stage":"started","started_ts":1}"#,
            r#"{"stage":"started","pid":999999999}"#,
        ] {
            fs::write(&path, json).unwrap();
            let side = sidecar::read(&path).unwrap().unwrap();
            assert!(plan(&side, &ProcTable::default()).is_none(), "{json}");
        }
    }
}
