//! Starting the lead: replace okstra with the lead runtime's interactive CLI,
//! started in the project root on a short instruction that points at the
//! handoff prompt (never the prompt itself in argv), after the same
//! preflight, plan and estimate a headless run gets. It names the lead
//! hosts it starts (not provider CLIs, which `crate::providers` describes).
//!
//! The session it starts has okstra's sub-agent-stop hook in force: Claude
//! Code gets it on its command line (`--settings`, a settings layer of this
//! session alone), Codex as a config override (`-c hooks.SubagentStop=…`);
//! no settings file of the user's is touched. Antigravity offers no hook
//! okstra can pass this way: its handoff names the fallback.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, anyhow, bail};

use crate::catalog::LeadRuntime;
use crate::diag;
use crate::exit::ExitStatus;
use crate::output::Reply;

use crate::settings::Settings;
use crate::vocab::EventKind;

/// Render the run `settings` describe and print the handoff prompt's path
/// (or, with `--json`, the bundle's paths); then, unless `--render-only`,
/// start the lead on it (replacing okstra). Bare `okstra` and `okstra ask
/// --lead`.
///
/// The lead's CLI is found before anything is rendered: a lead that cannot
/// start leaves no run behind that `okstra status` could take for one in
/// progress. Should starting it fail all the same (found, but not
/// executable), the run records `run-failed`, so it reads `stopped`.
pub fn render_and_start(settings: &Settings) -> Result<Reply> {
    let lead = if settings.render_only || settings.lead_runtime == LeadRuntime::External {
        None
    } else {
        Some(find_lead(settings.lead_runtime)?)
    };
    // The same preflight as a headless run, before anything is written: a
    // wrapper worker that cannot run is refused before the host starts.
    let checked = match &lead {
        None => None,
        Some(_) => Some(preflight(settings)?),
    };
    let paths = crate::bundle::render_run(settings)?;
    let reply = Reply::answer(&paths, settings.json)?;
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
    let (Some(program), Some(checked)) = (lead, checked) else {
        if settings.lead_runtime == LeadRuntime::External && !settings.render_only {
            diag::progress(format_args!(
                "the external runtime has no CLI to start; give your lead host the handoff prompt `{}` (it reads everything else from the run folder)",
                paths.handoff_prompt.display()
            ));
        }
        return Ok(reply);
    };
    // The paths go out before the lead's CLI takes the terminal (and
    // okstra's process).
    let settings = settings.clone();
    Ok(reply.then(move || start(&settings, &paths, &program, &checked)))
}

/// Confirm the plan, then start the lead on the rendered run.
fn start(
    settings: &Settings,
    paths: &crate::bundle::RunPaths,
    program: &Path,
    checked: &crate::preflight::Report,
) -> Result<ExitStatus> {
    if !confirm_plan(&paths.run_dir, checked, settings.yes)? {
        diag::note(format_args!(
            "not started; lead it later from a host session with `okstra next {}`",
            crate::shell::path_word(&paths.run_dir)
        ));
        return Ok(ExitStatus::Failure);
    }
    diag::progress(format_args!(
        "starting the {} lead session (`{}`) on the run",
        settings.lead_runtime,
        program.display()
    ));
    let err = exec_lead(
        settings.lead_runtime,
        program,
        &settings.project_root,
        &paths.handoff_prompt,
    );
    record_not_started(&paths.run_dir, &err);
    Err(err)
}

/// The preflight of the wrapper workers `settings` rosters (unless
/// `--no-preflight`: credentials only), as `okstra ask` runs it.
fn preflight(settings: &Settings) -> Result<crate::preflight::Report> {
    let roster = crate::assign::roster(settings, &settings.project_root);
    if settings.no_preflight {
        return Ok(crate::preflight::credentials_only(&roster));
    }
    crate::preflight::enforce(&roster, true).map_err(|err| {
        match err.downcast_ref::<crate::preflight::Interrupted>() {
            Some(interrupted) => anyhow!("{interrupted}; nothing was rendered or started"),
            None => err,
        }
    })
}

/// Show the plan and the estimate of the run in `run_dir` (kept in
/// `state/estimate.json`), and on a terminal without `yes` ask whether to
/// start the lead on it.
fn confirm_plan(run_dir: &Path, checked: &crate::preflight::Report, yes: bool) -> Result<bool> {
    let run = crate::run::Run::open(run_dir)?;
    let settings = crate::run::settings::read(&run)?.to_engine();
    let prices = crate::dispatch::Options::from_args(&settings)?.prices;
    let estimate = crate::estimate::ensure(&run, &prices)?;
    for line in crate::preflight::plan_lines(&run, checked, &estimate) {
        diag::progress(line);
    }
    if yes || !crate::ask::is_interactive() {
        return Ok(true);
    }
    crate::ask::Terminal::confirm("start the lead session on the run?")
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

impl crate::output::Answer for crate::bundle::RunPaths {
    const SCHEMA: &'static str = "render-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

/// A rendered run, for a person: its handoff prompt, the file a lead
/// starts from (`--json` lists every path).
impl crate::output::Text for crate::bundle::RunPaths {
    fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.handoff_prompt.display())
    }
}

/// Record that the lead of the run at `run_dir` never started, so the run
/// reads `stopped` with the reason instead of `running`.
fn record_not_started(run_dir: &Path, err: &anyhow::Error) {
    match crate::run::Run::open(run_dir) {
        Ok(run) => {
            crate::run::events::record(
                &run,
                EventKind::RunFailed,
                &[("error", &format!("{err:#}"))],
            );
        }
        Err(why) => diag::warning(format_args!(
            "the run does not record that its lead never started ({why:#})"
        )),
    }
}

/// The argv that starts `runtime`'s interactive lead on `handoff`, with
/// okstra's sub-agent-stop hook (`hook`, a shell command line) in force
/// for that session where the host takes one on its command line.
pub fn lead_argv(runtime: LeadRuntime, handoff: &Path, hook: &str) -> Option<Vec<OsString>> {
    let binary = runtime.interactive_binary()?;
    let instruction = format!(
        "You are the okstra lead for this run. Read the handoff prompt at {} completely and follow it.",
        handoff.display()
    );
    let mut argv: Vec<OsString> = vec![binary.into()];
    match runtime {
        // A settings layer for this session alone: the user's settings
        // files are neither read for it nor written.
        LeadRuntime::ClaudeCode => {
            argv.push("--settings".into());
            argv.push(claude_hook_settings(hook).into());
        }
        LeadRuntime::Codex => {
            // The interactive codex TUI otherwise leaves a setsid'd
            // app-server daemon behind that outlives the session
            // (provider-clis.md §2).
            argv.push("--no-daemon".into());
            argv.push("-c".into());
            argv.push(codex_hook_override(hook).into());
        }
        LeadRuntime::Antigravity | LeadRuntime::External => {}
    }
    argv.push(instruction.into());
    Some(argv)
}

/// The shell command a host runs when a sub-agent stops: this okstra's
/// `hook subagent-stop` (the same line okstra's plugins register), output
/// discarded and never failing the host.
pub fn hook_command() -> String {
    let program = std::env::current_exe().unwrap_or_else(|_| "okstra".into());
    crate::install::subagent_stop_command(&program)
}

/// Claude Code's `--settings` JSON that registers `hook` for `SubagentStop`
/// (the shape of a settings file's `hooks`; see research/hosts.md §1).
fn claude_hook_settings(hook: &str) -> String {
    serde_json::json!({
        "hooks": {
            "SubagentStop": [
                {"hooks": [{"type": "command", "command": hook, "timeout": crate::install::HOOK_TIMEOUT_SECS}]}
            ]
        }
    })
    .to_string()
}

/// Codex's `-c` override that registers `hook` for `SubagentStop`: a TOML
/// value, as Codex parses every `-c` (an inline `[[hooks.SubagentStop]]`).
fn codex_hook_override(hook: &str) -> String {
    let quoted = hook.replace('\\', "\\\\").replace('"', "\\\"");
    let timeout = crate::install::HOOK_TIMEOUT_SECS;
    format!(
        "hooks.SubagentStop=[{{hooks=[{{type=\"command\",command=\"{quoted}\",timeout={timeout}}}]}}]"
    )
}

/// Replace this process with the lead CLI `program`. Returns only on
/// failure, with the error.
pub fn exec_lead(
    runtime: LeadRuntime,
    program: &Path,
    project_root: &Path,
    handoff: &Path,
) -> anyhow::Error {
    let Some(argv) = lead_argv(runtime, handoff, &hook_command()) else {
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
    fn each_lead_starts_with_the_hook_in_force_and_external_has_no_cli() {
        let hook = "'/opt/ok stra/okstra' hook subagent-stop >/dev/null 2>&1 || true";
        let claude = lead_argv(LeadRuntime::ClaudeCode, Path::new("/r/handoff.md"), hook).unwrap();
        assert_eq!(claude[0], "claude");
        assert_eq!(claude[1], "--settings");
        let settings: serde_json::Value =
            serde_json::from_str(&claude[2].to_string_lossy()).unwrap();
        assert_eq!(
            settings["hooks"]["SubagentStop"][0]["hooks"][0]["command"],
            hook
        );
        assert!(claude[3].to_string_lossy().contains("/r/handoff.md"));
        let codex = lead_argv(LeadRuntime::Codex, Path::new("/r/handoff.md"), hook).unwrap();
        assert_eq!(codex[0], "codex");
        assert_eq!(codex[1], "--no-daemon");
        assert_eq!(codex[2], "-c");
        // The override is a TOML value, as Codex parses every `-c`: one
        // `[[hooks.SubagentStop]]` entry, the command a basic string.
        assert_eq!(
            codex[3],
            "hooks.SubagentStop=[{hooks=[{type=\"command\",command=\"'/opt/ok stra/okstra' hook subagent-stop >/dev/null 2>&1 || true\",timeout=60}]}]"
        );
        assert_eq!(
            codex_hook_override(r#"say "a\b""#),
            r#"hooks.SubagentStop=[{hooks=[{type="command",command="say \"a\\b\"",timeout=60}]}]"#
        );
        assert!(codex[4].to_string_lossy().contains("/r/handoff.md"));
        assert!(lead_argv(LeadRuntime::External, Path::new("/h"), hook).is_none());
        let agy = lead_argv(LeadRuntime::Antigravity, Path::new("/h"), hook).unwrap();
        assert_eq!(agy.len(), 2);
        assert_eq!(agy[0], "agy");
    }
}
