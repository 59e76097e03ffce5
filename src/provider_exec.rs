//! provider-exec: run one provider CLI headless under okstra's supervisor.
//! (Being built in its own change; see issue 4.)

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use crate::catalog::Provider;

/// The provider fixed by an `okstra-<provider>-exec` program name.
pub fn alias(arg0: &Path) -> Option<Provider> {
    let name = arg0.file_name()?.to_str()?;
    name.strip_prefix("okstra-")?
        .strip_suffix("-exec")?
        .parse()
        .ok()
}

pub fn main(_fixed: Option<Provider>, _args: Vec<OsString>) -> ExitCode {
    eprintln!("okstra-provider-exec: not available in this build");
    ExitCode::from(crate::exit::EXEC_USAGE)
}
