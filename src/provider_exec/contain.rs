//! Starting the CLI under Landlock when the dispatcher asks
//! (`sandbox::CONFINE_ENV`): the wrapper stays unconfined (it writes the
//! log and the sidecar in the run folder) and starts `sandbox-exec` of its
//! own binary (`okstra` or `okstra-provider-exec`, which both answer it),
//! which confines itself and execs the CLI in its place — same pid, so the
//! supervision around it is unchanged.
//!
//! Here: the attempt's scratch folder (the CLI's `TMPDIR`, under okstra's
//! state folder, removed when the wrapper ends), the CLI's own state
//! folders made when missing (a rule needs a folder that exists), the
//! write set resolved through symlinks and checked once more against the
//! project, and the helper's command line.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::sandbox::{self, exec::Request, rules};

use super::{PROGRAM, Ready};

/// A CLI about to start confined.
#[derive(Debug)]
pub(super) struct Contained {
    /// The wrapper's own binary (the helper).
    pub program: PathBuf,
    /// The helper's arguments, the CLI's command line at their end.
    pub args: Vec<OsString>,
    /// The attempt's scratch folder: held, and removed when dropped.
    pub _scratch: tempfile::TempDir,
}

/// What the CLI of `ready` (its environment `env`) may write, and the
/// helper that confines it to that; `Ok(None)` for a CLI okstra does not
/// confine (`rules::confined`). `env` gains `TMPDIR`.
pub(super) fn prepare(
    ready: &Ready,
    env: &mut Vec<(OsString, OsString)>,
) -> Result<Option<Contained>, String> {
    let inv = &ready.invocation;
    if !rules::confined(inv.provider) {
        return Ok(None);
    }
    let program = std::env::current_exe()
        .map_err(|err| format!("cannot find the wrapper's own binary for `sandbox-exec`: {err}"))?;
    let state = crate::user_dirs::state_dir(&|name| std::env::var_os(name)).ok_or(
        "neither `XDG_STATE_HOME` nor `HOME` names an absolute folder for the CLI's scratch folder",
    )?;
    let scratch_root = state.join("scratch");
    std::fs::create_dir_all(&scratch_root)
        .map_err(|err| format!("cannot create `{}`: {err}", scratch_root.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("attempt-")
        .tempdir_in(&scratch_root)
        .map_err(|err| {
            format!(
                "cannot create a scratch folder in `{}`: {err}",
                scratch_root.display()
            )
        })?;
    env.retain(|(name, _)| name != "TMPDIR");
    env.push(("TMPDIR".into(), scratch.path().into()));
    let project = canonical(&ready.project_root);
    let execution = canonical(&inv.execution_root);
    let copy = (ready.may_write && execution != project).then_some(execution.as_path());
    let lookup = |name: &str| {
        env.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let set = rules::write_set(
        inv.provider,
        &lookup,
        &rules::Attempt {
            project: &project,
            copy,
            scratch: scratch.path(),
            extra: &ready.writable,
        },
    );
    for dir in &set.state {
        // Missing on a first run: made now, or the CLI could not make it.
        if let Err(err) = std::fs::create_dir_all(dir) {
            PROGRAM.warning(format_args!(
                "cannot create `{}` for the CLI's state: {err}",
                dir.display()
            ));
        }
    }
    let mut writes = Vec::new();
    let mut refused = set.refused;
    for path in set.dirs.into_iter().chain(set.files) {
        // The rule follows symlinks: check where it really leads.
        let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        match rules::refusal(&real, &project) {
            Some(why) => refused.push((path, why)),
            None => writes.push(real),
        }
    }
    for (path, why) in refused {
        PROGRAM.warning(format_args!(
            "the CLI may not write `{}`: {why} (`{}`)",
            path.display(),
            project.display()
        ));
    }
    let request = Request {
        writes,
        arg0: Some(ready.plan.program.into()),
        program: ready.program.clone(),
        args: ready.plan.args.clone(),
    };
    let mut args = vec![OsString::from(sandbox::exec::SUBCOMMAND)];
    args.extend(request.to_args());
    Ok(Some(Contained {
        program,
        args,
        _scratch: scratch,
    }))
}

/// `path` with its symlinks resolved, or as given when it cannot be.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
