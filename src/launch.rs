//! Starting the lead: replace okstra with the lead runtime's interactive CLI,
//! started in the project root on a short instruction that points at the
//! handoff prompt (never the prompt itself in argv).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use std::io::Write;

use anyhow::{Result, bail};

use crate::catalog::LeadRuntime;
use crate::diag;
use crate::exit::ExitStatus;
use crate::settings::Settings;

/// Render the run `settings` describe and print the handoff prompt's path
/// (or, with `--json`, the bundle's paths); then, unless `--render-only`,
/// start the lead on it (replacing okstra). Bare `okstra` and `okstra ask
/// --lead`.
pub fn render_and_start(settings: &Settings) -> Result<ExitStatus> {
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
    if settings.render_only {
        return Ok(ExitStatus::Success);
    }
    if settings.lead_runtime == LeadRuntime::External {
        diag::progress(format_args!(
            "the external runtime has no CLI to start; give your lead host the handoff prompt `{}` (it reads everything else from the run folder)",
            paths.handoff_prompt.display()
        ));
        return Ok(ExitStatus::Success);
    }
    exec_lead(
        settings.lead_runtime,
        &settings.project_root,
        &paths.handoff_prompt,
    )?;
    Ok(ExitStatus::Success)
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

/// Replace this process with the lead CLI. Returns only on failure.
pub fn exec_lead(runtime: LeadRuntime, project_root: &Path, handoff: &Path) -> Result<()> {
    let Some(argv) = lead_argv(runtime, handoff) else {
        bail!("the `{runtime}` runtime has no CLI okstra can start");
    };
    let binary = argv[0].clone();
    let Ok(program) = which::which(&binary) else {
        bail!(
            "the `{runtime}` lead CLI `{}` is not on PATH; install it, or use `--render-only` and start the lead yourself on `{}`",
            binary.to_string_lossy(),
            handoff.display()
        );
    };
    let err = Command::new(program)
        .args(&argv[1..])
        .current_dir(project_root)
        .exec();
    bail!(
        "cannot start `{}` ({err}); the bundle is kept at `{}`",
        binary.to_string_lossy(),
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
