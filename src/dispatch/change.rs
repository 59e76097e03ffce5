//! The Executor's change, once an attempt of it completed: committed from
//! its copy onto the run's branch (`workspace::branch`), the commit and the
//! one it was made on written into the attempt's record.
//!
//! A native Executor's attempt is first checked against the guard taken
//! when it was recorded (`workspace::guard`): one that changed the user's
//! working tree, index, `HEAD` or refs fails. Either failure fails the
//! attempt (`crash`, the reason in its detail), so nothing of it can land.

use crate::catalog::Role;
use crate::run::Run;
use crate::run::team_state::DispatchRecord;
use crate::vocab::Ending;
use crate::vocab::WorkspaceKind;
use crate::workspace::{self, RunIdentity};

/// Put a completed Executor attempt's change onto its branch; `Err` says
/// why the attempt must fail instead. Any other attempt is left as it is.
pub fn onto_branch(run: &Run, record: &mut DispatchRecord) -> Result<(), String> {
    if record.role != Some(Role::Executor) || record.ending != Some(Ending::Completed) {
        return Ok(());
    }
    let Some(name) = record.branch.as_ref().map(|b| b.name.clone()) else {
        // Recorded by an okstra that had no branches: its change is where
        // it was made.
        return Ok(());
    };
    let identity = RunIdentity::of(run);
    if let Some(before) = &record.guard {
        let scratch = workspace::run_folder(&identity).map_err(|err| line(&err))?;
        let after = workspace::guard::take(&run.project_root, &scratch).map_err(|err| {
            format!(
                "cannot check the user's repository after the native Executor: {}",
                line(&err)
            )
        })?;
        let changed = workspace::guard::changed(before, &after);
        if !changed.is_empty() {
            return Err(format!(
                "the Executor changed the user's repository ({}) instead of working only in its copy; nothing of this attempt can land",
                changed.join(", ")
            ));
        }
    }
    let copy = record
        .workspace
        .as_ref()
        .filter(|w| w.kind == WorkspaceKind::GitCopy)
        .ok_or("the Executor did not work in a git copy, so okstra has no change to commit")?;
    let parent = copy
        .commit
        .clone()
        .ok_or("the Executor's copy does not record the commit it was made from")?;
    // Where okstra put the copy, from the run itself: the record's path is
    // only accepted when it names that place.
    let location = workspace::locate(
        &run.project_root,
        &run.task_key,
        &run.run_id,
        &record.worker_id,
    )
    .map_err(|err| line(&err))?;
    if copy.path != location.root {
        return Err(format!(
            "the Executor's record names `{}` as its copy, which is not where okstra put it (`{}`)",
            copy.path.display(),
            location.root.display()
        ));
    }
    workspace::owned(&location.root, &run.project_root, &identity.run_dir)
        .map_err(|err| line(&err))?;
    let state = run.team_state().map_err(|err| format!("{err:#}"))?;
    let old = state.branch_tip(&record.dispatch_name).map(str::to_owned);
    let own_work = run
        .assignment(&record.worker_id)
        .is_none_or(|a| a.paths.prompt_path == record.prompt_path);
    let message = format!(
        "okstra: {} {} ({})\n\nThe Executor's change in {} run `{}` of task `{}`, attempt {} of \
         `{}`, committed by okstra from the Executor's copy.\n",
        run.task_key,
        run.run_id,
        if own_work { "change" } else { "fix pass" },
        run.task_type.as_str(),
        run.run_id,
        run.task_key,
        record.attempt,
        record.dispatch_name,
    );
    let commit =
        workspace::branch::commit(&location, &run.project_root, &parent, &message, own_work)
            .map_err(|err| format!("cannot commit the Executor's change: {}", line(&err)))?;
    if old.as_deref() != Some(commit.as_str()) {
        workspace::branch::publish(&run.project_root, &location, &name, &commit, old.as_deref())
            .map_err(|err| {
                format!(
                    "cannot put the Executor's change on `{name}`: {}",
                    line(&err)
                )
            })?;
    }
    if let Some(branch) = record.branch.as_mut() {
        branch.parent = Some(parent);
        branch.commit = Some(commit);
    }
    Ok(())
}

/// Fail a concluded attempt for `why` (its change cannot be kept).
pub fn fail(record: &mut DispatchRecord, why: String) {
    record.ending = Some(Ending::Crash);
    record.detail = Some(why);
}

fn line(err: &impl std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
