//! `okstra completions <shell>` and `okstra man`: the command line described
//! for shells and for `man`, generated from the clap definition in `cli` so
//! they can never drift from the real flags.

use std::io::{self, Write};

use anyhow::{Context, Result};
use clap::CommandFactory;
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

fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}
