//! `okstra sandbox-exec`: confine this process with Landlock, then exec a
//! program in its place.
//!
//! ```text
//! okstra sandbox-exec [--write <path>]… [--arg0 <name>] -- <program> [<arg>…]
//! ```
//!
//! The ruleset handles every write right of the kernel's Landlock ABI
//! (reading and executing stay free everywhere); each `--write` folder may
//! be written beneath, each `--write` file written in place (a path that
//! does not exist is skipped: nothing can be allowed there). `no_new_privs`
//! is set first, as the kernel requires. Unless the kernel's ABI is at
//! least [`super::MIN_ABI`] and the ruleset is fully enforced, nothing is
//! run: one line on stderr and exit [`super::REFUSED`]. Otherwise the
//! program replaces this process (same pid, same process group, the
//! environment and open descriptors as they are), so whoever supervises it
//! sees no difference.
//!
//! A hidden subcommand of the okstra binary (and of the wrapper's own
//! binary, `okstra-provider-exec`), started by provider-exec: it is parsed
//! here, before the launcher's own command line, and has no `--help`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::diag;
use crate::exit;

/// Prefix of every line the helper prints.
const PROGRAM: diag::Program = diag::Program::new("okstra-sandbox");

/// The helper's name on okstra's command line.
pub const SUBCOMMAND: &str = "sandbox-exec";

/// What to confine and run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub writes: Vec<PathBuf>,
    pub arg0: Option<OsString>,
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl Request {
    /// The helper's arguments (after [`SUBCOMMAND`]) for this request.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        for path in &self.writes {
            args.push("--write".into());
            args.push(path.clone().into_os_string());
        }
        if let Some(arg0) = &self.arg0 {
            args.push("--arg0".into());
            args.push(arg0.clone());
        }
        args.push("--".into());
        args.push(self.program.clone().into_os_string());
        args.extend(self.args.iter().cloned());
        args
    }

    /// Parse the helper's arguments; `Err` names what is wrong.
    pub fn parse(args: Vec<OsString>) -> Result<Request, String> {
        let mut writes = Vec::new();
        let mut shown_name = None;
        let mut rest = args.into_iter();
        loop {
            let Some(flag) = rest.next() else {
                return Err("no `--` before the program".to_owned());
            };
            match flag.to_str() {
                Some("--") => break,
                Some("--write") => {
                    writes.push(PathBuf::from(rest.next().ok_or("`--write` needs a path")?));
                }
                Some("--arg0") => {
                    shown_name = Some(rest.next().ok_or("`--arg0` needs a name")?);
                }
                _ => {
                    return Err(format!(
                        "unexpected `{}`: expected `--write <path>`, `--arg0 <name>` or `--`",
                        flag.to_string_lossy()
                    ));
                }
            }
        }
        let program = PathBuf::from(rest.next().ok_or("no program after `--`")?);
        Ok(Request {
            writes,
            arg0: shown_name,
            program,
            args: rest.collect(),
        })
    }
}

/// How far the kernel enforced a ruleset (Landlock's own three answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    Partial,
    None,
}

/// Why the helper runs nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Landlock is not available: {0}")]
    Unavailable(String),
    #[error(
        "this kernel's Landlock is ABI {0}, older than the {min} okstra needs",
        min = super::MIN_ABI
    )]
    Old(u32),
    #[error("the Landlock ruleset could not be set up: {0}")]
    Setup(String),
    #[error("the kernel enforced the Landlock ruleset only partly")]
    Partial,
    #[error("the kernel did not enforce the Landlock ruleset")]
    NotEnforced,
    #[error("`no_new_privs` could not be set")]
    NoNewPrivs,
}

/// Whether a ruleset applied at `abi` with `enforcement` and `no_new_privs`
/// confines the program as okstra promises: all three, or nothing runs.
pub fn judge(abi: u32, enforcement: Enforcement, no_new_privs: bool) -> Result<(), Refusal> {
    if abi < super::MIN_ABI {
        return Err(Refusal::Old(abi));
    }
    match enforcement {
        Enforcement::Full if no_new_privs => Ok(()),
        Enforcement::Full => Err(Refusal::NoNewPrivs),
        Enforcement::Partial => Err(Refusal::Partial),
        Enforcement::None => Err(Refusal::NotEnforced),
    }
}

/// The helper's entry point: `args` are those after [`SUBCOMMAND`].
pub fn main(args: Vec<OsString>) -> ExitCode {
    let request = match Request::parse(args) {
        Ok(request) => request,
        Err(why) => {
            PROGRAM.error(format_args!(
                "{why}; usage: okstra {SUBCOMMAND} [--write <path>]… [--arg0 <name>] -- <program> [<arg>…]"
            ));
            return ExitCode::from(exit::EXEC_USAGE);
        }
    };
    if let Err(refusal) = confine(&request.writes) {
        PROGRAM.error(format_args!(
            "{refusal}; `{}` was not started, as it would run unconfined",
            request.program.display()
        ));
        return ExitCode::from(super::REFUSED);
    }
    let mut command = std::process::Command::new(&request.program);
    command.args(&request.args);
    if let Some(arg0) = &request.arg0 {
        std::os::unix::process::CommandExt::arg0(&mut command, arg0);
    }
    // Only returns when the program could not replace us.
    let err = std::os::unix::process::CommandExt::exec(&mut command);
    PROGRAM.error(format_args!(
        "cannot start `{}`: {err}",
        request.program.display()
    ));
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound {
        exit::NOT_FOUND
    } else {
        exit::CANNOT_EXECUTE
    })
}

/// The number of a Landlock ABI (`V7` → 7).
#[cfg(target_os = "linux")]
pub fn abi_number(abi: landlock::ABI) -> u32 {
    abi.to_string().parse().unwrap_or(0)
}

/// Confine this process: writes only beneath `writes`, from now on and for
/// every program it execs.
#[cfg(target_os = "linux")]
fn confine(writes: &[PathBuf]) -> Result<(), Refusal> {
    use landlock::{
        AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, RestrictSelf,
        Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    };
    let status = RestrictSelf::default()
        .no_new_privs(false)
        .apply()
        .map_err(|err| Refusal::Unavailable(err.to_string()))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled => {
            return Err(Refusal::Unavailable(
                "this kernel does not enable it".to_owned(),
            ));
        }
        LandlockStatus::NotImplemented => {
            return Err(Refusal::Unavailable("this kernel has none".to_owned()));
        }
    };
    let number = abi_number(abi);
    if number < super::MIN_ABI {
        return Err(Refusal::Old(number));
    }
    let setup = |err: landlock::RulesetError| Refusal::Setup(err.to_string());
    let handled = AccessFs::from_write(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(setup)?
        .create()
        .map_err(setup)?;
    for path in writes {
        let Ok(meta) = std::fs::metadata(path) else {
            // Nothing there: nothing to allow.
            continue;
        };
        let fd = PathFd::new(path).map_err(|err| Refusal::Setup(err.to_string()))?;
        let rights = if meta.is_dir() {
            handled
        } else {
            handled & AccessFs::from_file(abi)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(setup)?;
    }
    let restricted = ruleset.restrict_self().map_err(setup)?;
    let enforcement = match restricted.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    judge(number, enforcement, restricted.no_new_privs)
}

/// Elsewhere nothing can be confined.
#[cfg(not(target_os = "linux"))]
fn confine(_writes: &[PathBuf]) -> Result<(), Refusal> {
    Err(Refusal::Unavailable("it is Linux only".to_owned()))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn only_a_fully_enforced_ruleset_at_abi_3_or_later_runs_the_program() {
        assert_eq!(judge(3, Enforcement::Full, true), Ok(()));
        assert_eq!(judge(7, Enforcement::Full, true), Ok(()));
        assert_eq!(judge(7, Enforcement::Partial, true), Err(Refusal::Partial));
        assert_eq!(judge(7, Enforcement::None, true), Err(Refusal::NotEnforced));
        assert_eq!(judge(7, Enforcement::Full, false), Err(Refusal::NoNewPrivs));
        assert_eq!(judge(2, Enforcement::Full, true), Err(Refusal::Old(2)));
        assert_eq!(
            Refusal::Partial.to_string(),
            "the kernel enforced the Landlock ruleset only partly"
        );
    }

    #[test]
    fn the_command_line_round_trips() {
        let request = Request {
            writes: vec!["/home/u/.kimi-code".into(), "/dev/null".into()],
            arg0: Some("kimi".into()),
            program: "/usr/bin/kimi".into(),
            args: vec!["-p".into(), "--write".into(), "--".into()],
        };
        assert_eq!(Request::parse(request.to_args()).unwrap(), request);
        assert_eq!(
            Request::parse(vec!["--bogus".into()]).unwrap_err(),
            "unexpected `--bogus`: expected `--write <path>`, `--arg0 <name>` or `--`"
        );
        assert_eq!(
            Request::parse(vec!["--".into()]).unwrap_err(),
            "no program after `--`"
        );
    }
}
