//! Lead events, the status board and the reaper. (Being built; see issue 6.)

use anyhow::{Result, bail};

use crate::cli::{EventArgs, ReapArgs, StatusArgs};
use crate::exit::ExitStatus;

pub fn event_command(_args: &EventArgs) -> Result<ExitStatus> {
    bail!("`okstra event` is not available in this build")
}

pub fn status_command(_args: &StatusArgs) -> Result<ExitStatus> {
    bail!("`okstra status` is not available in this build")
}

pub fn reap_command(_args: &ReapArgs) -> Result<ExitStatus> {
    bail!("`okstra reap` is not available in this build")
}
