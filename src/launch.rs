//! Starting the lead: replace okstra with the lead runtime's interactive CLI,
//! started in the project root on a short instruction that points at the
//! handoff prompt (never the prompt itself in argv).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, anyhow, bail};

use crate::catalog::LeadRuntime;
use crate::diag;
use crate::exit::ExitStatus;
use crate::run::events::EventKind;
use crate::settings::Settings;

/// Render the run `settings` describe and print the handoff prompt's path
/// (or, with `--json`, the bundle's paths); then, unless `--render-only`,
/// start the lead on it (replacing okstra). Bare `okstra` and `okstra ask
/// --lead`.
///
/// The lead's CLI is found before anything is rendered: a lead that cannot
/// start leaves no run behind that `okstra status` could take for one in
/// progress. Should starting it fail all the same (found, but not
/// executable), the run records `run-failed`, so it reads `stopped`.
pub fn render_and_start(settings: &Settings) -> Result<ExitStatus> {
    let lead = if settings.render_only || settings.lead_runtime == LeadRuntime::External {
        None
    } else {
        Some(find_lead(settings.lead_runtime)?)
    };
    let paths = crate::bundle::render_run(settings)?;
    let mut stdout = std::io::stdout().lock();
    if settings.json {
        writeln!(stdout, "{}", serde_json::to_string(&paths)?)?;
    } else {
        writeln!(stdout, "{}", paths.handoff_prompt.display())?;
    }
    drop(stdout);
    diag::progress(format_args!(
        "rendered {} run `{}` for `{}` in `{}`",
        settings.task_type,
        paths
            .run_dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        settings.task_key.joined(),
        paths.run_dir.display()
    ));
    let Some(program) = lead else {
        if settings.lead_runtime == LeadRuntime::External && !settings.render_only {
            diag::progress(format_args!(
                "the external runtime has no CLI to start; give your lead host the handoff prompt `{}` (it reads everything else from the run folder)",
                paths.handoff_prompt.display()
            ));
        }
        return Ok(ExitStatus::Success);
    };
    diag::progress(format_args!(
        "starting the {} lead session (`{}`) on the run",
        settings.lead_runtime,
        program.display()
    ));
    let err = exec_lead(
        settings.lead_runtime,
        &program,
        &settings.project_root,
        &paths.handoff_prompt,
    );
    record_not_started(&paths.run_dir, &err);
    Err(err)
}

/// The lead CLI of `runtime` on `PATH`; an error that says what to do when
/// there is none (nothing has been written yet).
pub fn find_lead(runtime: LeadRuntime) -> Result<PathBuf> {
    let Some(binary) = runtime.interactive_binary() else {
        bail!("the `{runtime}` runtime has no CLI okstra can start");
    };
    which::which(binary).map_err(|_| {
        anyhow!(
            "the `{runtime}` lead CLI `{binary}` is not on PATH, so nothing was rendered; install it, run the question headless with `okstra ask` (no lead session needed), or render the run with `--render-only` and start a lead on it yourself"
        )
    })
}

/// Record that the lead of the run at `run_dir` never started, so the run
/// reads `stopped` with the reason instead of `running`.
fn record_not_started(run_dir: &Path, err: &anyhow::Error) {
    let recorded = crate::run::Run::open(run_dir)
        .map_err(anyhow::Error::from)
        .and_then(|run| {
            let fields = BTreeMap::from([("error".to_owned(), format!("{err:#}"))]);
            crate::run::events::append(&run, EventKind::RunFailed.as_str(), &fields)
        });
    if let Err(why) = recorded {
        diag::warning(format_args!(
            "the run does not record that its lead never started ({why:#})"
        ));
    }
}

/// The argv that starts `runtime`'s interactive lead on `handoff`.
pub fn lead_argv(runtime: LeadRuntime, handoff: &Path) -> Option<Vec<OsString>> {
    let binary = runtime.interactive_binary()?;
    let instruction = format!(
        "You are the okstra lead for this run. Read the handoff prompt at {} completely and follow it.",
        handoff.display()
    );
    let mut argv: Vec<OsString> = vec![binary.into()];
    if runtime == LeadRuntime::Codex {
        // The interactive codex TUI otherwise leaves a setsid'd app-server
        // daemon behind that outlives the session (provider-clis.md §2).
        argv.push("--no-daemon".into());
    }
    argv.push(instruction.into());
    Some(argv)
}

/// Replace this process with the lead CLI `program`. Returns only on
/// failure, with the error.
pub fn exec_lead(
    runtime: LeadRuntime,
    program: &Path,
    project_root: &Path,
    handoff: &Path,
) -> anyhow::Error {
    let Some(argv) = lead_argv(runtime, handoff) else {
        return anyhow!("the `{runtime}` runtime has no CLI okstra can start");
    };
    let err = Command::new(program)
        .args(&argv[1..])
        .current_dir(project_root)
        .exec();
    anyhow!(
        "cannot start `{}` ({err}); the bundle is kept at `{}`",
        argv[0].to_string_lossy(),
        handoff.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_lead_starts_without_daemon_and_external_has_no_cli() {
        let argv = lead_argv(LeadRuntime::Codex, Path::new("/r/handoff.md")).unwrap();
        assert_eq!(argv[0], "codex");
        assert_eq!(argv[1], "--no-daemon");
        assert!(argv[2].to_string_lossy().contains("/r/handoff.md"));
        assert!(lead_argv(LeadRuntime::External, Path::new("/h")).is_none());
        assert_eq!(
            lead_argv(LeadRuntime::Antigravity, Path::new("/h")).unwrap()[0],
            "agy"
        );
    }
}
