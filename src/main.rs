//! okstra: prepare a multi-provider, cross-verified AI run and start its lead.
//!
//! `main` only parses, dispatches and turns the outcome into an exit code; the
//! error chain is printed once, here. `provider-exec` (and the
//! `okstra-<provider>-exec` names of this same binary) parse their own argv
//! because their positional contract and exit codes come from the reference
//! wrapper.

// First: the closed-set macro the modules below use.
#[macro_use]
mod vocab;

mod advice;
mod anchors;
mod ask;
mod ask_command;
mod assign;
mod background;
mod beneath;
mod bundle;
mod catalog;
mod change;
mod child;
mod cli;
mod cli_docs;
mod cli_examples;
mod cli_facts;
mod clock;
mod closing;
mod confine;
mod converge;
mod coverage;
mod derive;
mod diag;
mod digest;
mod dispatch;
mod doctor;
mod durable;
mod estimate;
mod exit;
mod fsread;
#[cfg(test)]
mod fuzz;
mod gate;
mod git;
mod install;
mod interrupt;
mod items;
mod land;
mod launch;
mod lead;
mod lead_runtime;
mod lifecycle;
mod output;
mod preflight;
mod process_group;
mod profile;
mod provider_exec;
mod providers;
mod publish;
mod report;
mod resume;
mod run;
mod run_log;
mod runs_index;
mod sandbox;
mod schema;
mod settings;
mod severity;
mod shell;
mod slug;
mod table;
mod task_key;
mod template;
mod usage;
mod user_dirs;
mod workspace;

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::{Command, LaunchArgs};
use crate::exit::ExitStatus;

fn main() -> ExitCode {
    diag::install_panic_hook();
    let raw_args = match provider_exec::early_entry(std::env::args_os().collect()) {
        Ok(code) => return code,
        Err(raw_args) => raw_args,
    };
    if raw_args.get(1).is_some_and(|arg| arg == "provider-exec") {
        return provider_exec::main(None, raw_args.into_iter().skip(2).collect());
    }
    let bare = raw_args.len() == 1;
    let cli = match cli_docs::parse(raw_args) {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let outcome = match cli.command {
        None => launch_command(&cli.launch, bare),
        Some(Command::ProviderExec { args }) => return provider_exec::main(None, args),
        Some(Command::Validate(args)) => report::validate_command(&args),
        Some(Command::Report(args)) => report::report_command(&args),
        Some(Command::Gate(args)) => gate::gate_command(&args),
        Some(Command::Publish(command)) => publish::publish_command(&command),
        Some(Command::Event(args)) => lifecycle::event_command(&args),
        Some(Command::Status(args)) => lifecycle::status_command(&args),
        Some(Command::Reap(args)) => dispatch::reap_command(&args),
        Some(Command::Land(args)) => land::land_command(&args),
        Some(Command::Cleanup(args)) => lifecycle::cleanup_command(&args),
        Some(Command::Dispatch(args)) => dispatch::dispatch_command(&args),
        Some(Command::Await(args)) => dispatch::await_command(&args),
        Some(Command::Cancel(args)) => dispatch::cancel_command(&args),
        Some(Command::Install(args)) => Ok(install::install_command(&args)),
        Some(Command::Doctor(args)) => doctor::doctor_command(&args),
        Some(Command::Completions(args)) => Ok(cli_docs::completions_command(args.shell)),
        Some(Command::Man(args)) => cli_docs::man_command(&args),
        Some(Command::Schema(args)) => cli_docs::schema_command(args.name.as_deref()),
        Some(Command::Usage(args)) => usage::usage_command(&args),
        Some(Command::Next(args)) => lead::next_command(&args),
        Some(Command::Submit(args)) => dispatch::submit_command(&args),
        Some(Command::Hook(args)) => Ok(output::Reply::status(dispatch::hook_command(&args))),
        Some(Command::Drive(args)) => lead::drive_command(&args),
        Some(Command::Items(args)) => converge::items_command(&args),
        Some(Command::Run(args)) => lead::run_command(&args),
        Some(Command::Ask(args)) => ask_command::ask_command(&args),
        Some(Command::Coverage(args)) => coverage::coverage_command(&args),
        Some(Command::Converge(args)) => converge::converge_command(&args),
        Some(Command::CheckArgs) => cli_docs::check_args_command(),
    };
    match outcome {
        Ok(reply) => answer(reply),
        Err(err) => {
            diag::error_chain(&err, lists_items);
            ExitStatus::Error.into()
        }
    }
}

/// Write a command's answer on stdout, then say how it ended: the one
/// place okstra's answers reach stdout.
fn answer(reply: output::Reply) -> ExitCode {
    use std::io::Write;
    let (stdout, end) = match reply.into_parts() {
        Ok(parts) => parts,
        Err(err) => {
            diag::error_chain(&err, lists_items);
            return ExitStatus::Error.into();
        }
    };
    if !stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        // A reader that went away (`okstra status --json | head -1`) has
        // what it wanted: not an error of okstra's.
        if let Err(err) = out.write_all(&stdout).and_then(|()| out.flush())
            && err.kind() != std::io::ErrorKind::BrokenPipe
        {
            diag::error_chain(
                &anyhow::Error::new(err).context("cannot write the answer to stdout"),
                lists_items,
            );
            return ExitStatus::Error.into();
        }
    }
    let end = match end {
        output::End::Now(end) => end,
        output::End::Then(next) => next(),
    };
    match end {
        Ok(status) => status.into(),
        Err(err) => {
            diag::error_chain(&err, lists_items);
            ExitStatus::Error.into()
        }
    }
}

/// The errors whose message lists several items one a line (schema
/// violations, template excerpts): [`diag::error_chain`] keeps their line
/// breaks.
fn lists_items(cause: &diag::Cause) -> bool {
    cause.is::<schema::Error>() || cause.is::<template::Error>()
}

/// A command line clap refused: help and version go out as clap prints
/// them; a usage error goes out whole, in clap's words, through `diag`
/// (exit 2).
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    diag::usage_error(&err.render().to_string());
    ExitStatus::Error.into()
}

/// `okstra [flags]`: render the run, then start the lead (unless render-only).
/// `bare` (no argument at all) first says which path that is, and where the
/// README's path (a question run headless) is.
fn launch_command(args: &LaunchArgs, bare: bool) -> Result<output::Reply> {
    if bare {
        diag::progress(
            "no command: the launcher prepares a run and starts a lead session on it (Claude Code unless `--lead-runtime` says otherwise); to run a question headless, as the README does: `okstra ask \"<question>\"`; `okstra -h` lists the commands",
        );
    }
    bundle::prepare();
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = |name: &str| std::env::var(name).ok();
    let settings = settings::resolve(args, &env, &cwd)?;
    launch::render_and_start(&settings)
}
