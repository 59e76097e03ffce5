//! `okstra completions <shell>` and `okstra man`: the command line described
//! for shells and for `man`, generated from the clap definition in `cli` so
//! they can never drift from the real flags. Also the hidden
//! `okstra __check-args`, which parses command lines against that same
//! definition without running them (the bundle's contract test uses it).

use std::fmt::Write as _;
use std::io::{self, Write};

use anyhow::{Context, Result};
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::exit::ExitStatus;

/// Print the completion script for `shell` on stdout.
pub fn completions_command(shell: Shell) -> Result<ExitStatus> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "okstra", &mut script);
    write_stdout(&script).context("cannot write the completion script")?;
    Ok(ExitStatus::Success)
}

/// Print the man page (roff) on stdout.
pub fn man_command() -> Result<ExitStatus> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("cannot render the man page")?;
    write_stdout(&page).context("cannot write the man page")?;
    Ok(ExitStatus::Success)
}

/// Read a JSON array of argv arrays (each without the program name) from
/// stdin and parse each against the real CLI, running nothing. Prints one
/// line per argv, in order: `ok`, or `error[<clap error kind>]: ` and
/// clap's first message line. A request for help counts as parsed: it names
/// an existing (sub)command. Exit 0 when every argv parsed, 1 otherwise.
pub fn check_args_command() -> Result<ExitStatus> {
    let lines: Vec<Vec<String>> = serde_json::from_reader(io::stdin().lock())
        .context("stdin is not a JSON array of argv arrays")?;
    let mut out = String::new();
    let mut all_ok = true;
    for argv in lines {
        let parsed = Cli::try_parse_from(std::iter::once("okstra".to_owned()).chain(argv));
        match parsed {
            Ok(_) => out.push_str("ok\n"),
            Err(err)
                if matches!(
                    err.kind(),
                    ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
                ) =>
            {
                out.push_str("ok\n");
            }
            Err(err) => {
                all_ok = false;
                let text = err.to_string();
                let first = text.lines().next().unwrap_or_default();
                let first = first.strip_prefix("error: ").unwrap_or(first);
                let _ = writeln!(out, "error[{:?}]: {first}", err.kind());
            }
        }
    }
    write_stdout(out.as_bytes()).context("cannot write the check results")?;
    Ok(if all_ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}
