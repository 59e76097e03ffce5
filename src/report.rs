//! Final-report validation and derivation. (Being built; see issue 5.)

use anyhow::{Result, bail};

use crate::cli::{ReportArgs, ValidateArgs};
use crate::exit::ExitStatus;

pub fn validate_command(_args: &ValidateArgs) -> Result<ExitStatus> {
    bail!("`okstra validate` is not available in this build")
}

pub fn report_command(_args: &ReportArgs) -> Result<ExitStatus> {
    bail!("`okstra report` is not available in this build")
}
