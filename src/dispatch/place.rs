//! Where an attempt works, decided from the run's records before anything
//! is made: the project itself (a CLI whose own read-only mode keeps it
//! there), or a copy (`workspace::needs_copy`), and what a git copy holds.
//!
//! What a copy holds follows the role ([`checkout`]): a reviewer's is the
//! run's snapshot. In an implementation run the Executor starts from the
//! snapshot (its fix pass from its branch's tip); a verifier's copy holds
//! the Executor's commit with `HEAD` at the snapshot, so `git diff` there is
//! exactly the Executor's change; and a fix check's holds the branch's tip
//! with `HEAD` at the Executor's first commit, so `git diff` is exactly the
//! fix pass's change. The dispatch record says which commit a copy held
//! (`workspace.commit`): `okstra land` reads it to know what was verified.
//!
//! A `native-session` attempt runs in the host's own session: okstra makes
//! its copy when it records the attempt ([`native`]), before the host starts
//! it, and for a native Executor also takes the guard of the user's
//! repository (`workspace::guard`) its attempt is checked against.

use anyhow::{Context, Result};

use crate::catalog::{DispatchKind, Role};
use crate::run::Run;
use crate::run::team_state::{BranchRecord, DispatchRecord, ExecutorCommits, TeamState};
use crate::workspace::{self, Checkout, Rev, RunIdentity, Snapshots};

use super::select::Planned;

/// What `planned`'s git copy holds.
pub fn checkout(run: &Run, state: &TeamState, planned: &Planned) -> Checkout {
    let commits = executor_commits(run, state);
    let own_work = run
        .assignment(&planned.worker_id)
        .is_some_and(|a| a.paths.prompt_path == planned.paths.prompt_path);
    match (planned.role, commits) {
        // The fix pass goes on from the branch's tip; its own work (again)
        // from the snapshot.
        (Role::Executor, Some(commits)) if !own_work => Checkout::clean(Rev::Commit(commits.tip)),
        (Role::Executor, _) => Checkout::clean(Rev::Snapshot),
        (Role::Verifier, Some(commits)) if DispatchKind::is_fix_check(&planned.dispatch_name) => {
            Checkout::change(&commits.tip, Rev::Commit(commits.first))
        }
        (Role::Verifier, Some(commits)) => Checkout::change(&commits.first, Rev::Snapshot),
        _ => Checkout::snapshot(),
    }
}

/// The Executor's commits on its branch, once its own work was committed.
pub fn executor_commits(run: &Run, state: &TeamState) -> Option<ExecutorCommits> {
    let executor = run.in_role(Role::Executor).next()?;
    state.executor_commits(&executor.dispatch_name, &executor.paths.prompt_path)
}

/// The branch an Executor attempt's change goes onto, named before it
/// exists (so it is recorded before it is created); `None` for every other
/// role.
pub fn branch(
    identity: &RunIdentity,
    planned: &Planned,
) -> Result<Option<BranchRecord>, workspace::Error> {
    if planned.role != Role::Executor {
        return Ok(None);
    }
    Ok(Some(BranchRecord {
        name: workspace::branch_ref(identity)?,
        parent: None,
        commit: None,
    }))
}

/// Before the host starts the native attempt `planned` (recorded as
/// `record`): make its copy when its role works in one, name its branch,
/// and for an Executor take the guard of the user's repository.
pub fn native(
    run: &Run,
    state: &TeamState,
    planned: &Planned,
    record: &mut DispatchRecord,
) -> Result<()> {
    if !workspace::needs_copy(planned.provider, planned.role) {
        return Ok(());
    }
    let identity = RunIdentity::of(run);
    let plan = workspace::plan(&identity, &planned.worker_id, checkout(run, state, planned))
        .with_context(|| format!("cannot place the copy of `{}`", planned.dispatch_name))?;
    record.branch = branch(&identity, planned)?;
    record.isolation = Some(plan.kind.isolation().into());
    record.workspace = Some(plan.record());
    // Recorded before it is made: `reap` and `cleanup` can find it.
    crate::run::team_state::update(run, &[crate::run::team_state::Change::Put(record)])?;
    let snapshots = Snapshots::new(identity.clone());
    let made = workspace::make(&plan, &snapshots, false)
        .with_context(|| format!("cannot make the copy of `{}`", planned.dispatch_name))?;
    record.workspace = Some(made.record(&plan));
    if planned.role == Role::Executor {
        let scratch = workspace::run_folder(&identity)?;
        record.guard = Some(
            workspace::guard::take(&run.project_root, &scratch)
                .context("cannot record the user's repository before the native Executor runs")?,
        );
    }
    Ok(())
}
