//! Containment of the provider CLIs by Landlock: each CLI okstra starts reads
//! everywhere and writes only where [`rules::write_set`] says (its own state
//! folders, a scratch folder, the terminal; the Executor its copy), never
//! the project, so a reviewer needs no copy of it.
//!
//! - [`support`] says, once per run and for `okstra doctor`, whether this
//!   machine confines CLIs (Linux with Landlock ABI ≥ [`MIN_ABI`], 6.2:
//!   the first that also stops `truncate(2)`) or falls back to copies, and
//!   why. The user can force the fallback with [`SWITCH_ENV`]`=copies`.
//!   A run records the answer as its [`Containment`], so its prompts, its
//!   dispatches and its resumes agree.
//! - [`exec`] is `okstra sandbox-exec`, the helper that confines itself
//!   (`no_new_privs`, then a ruleset handling every write right of the
//!   kernel's ABI) and then *execs* the CLI: same pid, so provider-exec's
//!   process-group supervision is untouched, and no `unsafe` (`pre_exec`
//!   would need it). It refuses to exec unless the ruleset is fully
//!   enforced ([`exit::SANDBOX_REFUSED`]): a CLI never runs unconfined
//!   when okstra asked for Landlock.
//!
//! What is not here: provider-exec decides a CLI is confined when the
//! dispatcher says so ([`CONFINE_ENV`]) and builds the helper's command
//! line; `workspace` decides who needs a copy under each [`Containment`].

pub mod exec;
pub mod rules;

use std::ffi::OsStr;

use crate::exit;
use crate::vocab::Containment;

/// The user's switch: `copies` forces today's copies even where Landlock
/// works (tests of the fallback; a kernel whose Landlock misbehaves);
/// `auto` or unset lets okstra decide.
pub const SWITCH_ENV: &str = "OKSTRA_CONTAINMENT";
/// Set by the dispatcher on each wrapper of a run contained by Landlock:
/// provider-exec then starts its CLI through `okstra sandbox-exec` (or not
/// at all). Never passed on to the CLI.
pub const CONFINE_ENV: &str = "OKSTRA_CONFINE";
/// Folders (`:`-separated, absolute) every confined CLI may also write, for
/// a tool a worker runs that needs a cache of its own; one that is, holds
/// or lies in the project is refused.
pub const WRITABLE_ENV: &str = "OKSTRA_WRITABLE";
/// The value of [`CONFINE_ENV`] that asks for Landlock.
pub const CONFINE_LANDLOCK: &str = "landlock";
/// The oldest Landlock ABI okstra confines with: 3 (Linux 6.2) is the first
/// that handles `truncate(2)`, without which a CLI could empty any file.
pub const MIN_ABI: u32 = 3;

/// What this machine offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock, at this ABI.
    Landlock { abi: u32 },
    /// Copies, and why not Landlock.
    Copies { why: String },
}

impl Support {
    /// The containment a run rendered here gets.
    pub fn containment(&self) -> Containment {
        match self {
            Support::Landlock { .. } => Containment::Landlock,
            Support::Copies { .. } => Containment::Copies,
        }
    }

    /// `landlock (ABI N)` or `copies — <why>`: `okstra doctor`'s words.
    pub fn describe(&self) -> String {
        match self {
            Support::Landlock { abi } => format!("landlock (ABI {abi})"),
            Support::Copies { why } => format!("copies — {why}"),
        }
    }
}

/// What this machine offers, [`SWITCH_ENV`] considered; `Err` for a value
/// of it okstra does not know.
pub fn support() -> Result<Support, String> {
    decide(std::env::var_os(SWITCH_ENV).as_deref(), kernel_abi)
}

/// [`support`], asked once per process (a dispatcher asks for each attempt).
pub fn support_once() -> &'static Result<Support, String> {
    static SUPPORT: std::sync::OnceLock<Result<Support, String>> = std::sync::OnceLock::new();
    SUPPORT.get_or_init(support)
}

/// [`support`] from the switch's value and the kernel's answer (asked only
/// when the switch leaves it to okstra).
fn decide(
    switch: Option<&OsStr>,
    kernel: impl FnOnce() -> Result<u32, String>,
) -> Result<Support, String> {
    match switch.map(|value| value.to_str()) {
        None | Some(Some("" | "auto")) => {}
        Some(Some("copies")) => {
            return Ok(Support::Copies {
                why: format!("`{SWITCH_ENV}=copies` asks for them"),
            });
        }
        Some(value) => {
            return Err(format!(
                "`{SWITCH_ENV}` is `{}`: expected `auto` or `copies`",
                value.unwrap_or("(not UTF-8)")
            ));
        }
    }
    Ok(match kernel() {
        Ok(abi) if abi >= MIN_ABI => Support::Landlock { abi },
        Ok(abi) => Support::Copies {
            why: format!(
                "this kernel's Landlock is ABI {abi}, older than the {MIN_ABI} (Linux 6.2) okstra needs to stop a CLI truncating files"
            ),
        },
        Err(why) => Support::Copies { why },
    })
}

/// The kernel's Landlock ABI, asked without restricting anything; `Err`
/// says why there is none.
#[cfg(target_os = "linux")]
pub fn kernel_abi() -> Result<u32, String> {
    use landlock::{LandlockStatus, RestrictSelf};
    // No flag and no `no_new_privs`: `apply` only reads the kernel's ABI.
    match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Ok(kernel_abi
                .and_then(|abi| u32::try_from(abi).ok())
                .unwrap_or_else(|| exec::abi_number(effective_abi))),
            LandlockStatus::NotEnabled => Err(
                "this kernel has Landlock but does not enable it (it is not in the `lsm=` list)"
                    .to_owned(),
            ),
            LandlockStatus::NotImplemented => Err("this kernel has no Landlock".to_owned()),
        },
        Err(err) => Err(format!("Landlock could not be asked: {err}")),
    }
}

/// Elsewhere there is no Landlock.
#[cfg(not(target_os = "linux"))]
pub fn kernel_abi() -> Result<u32, String> {
    Err("Landlock is Linux only".to_owned())
}

/// The one `warning:` line a run contained by copies gets.
pub fn fallback_warning(why: &str) -> String {
    format!(
        "containment: copies — {why}; every CLI with no read-only mode works in a copy of the project (see docs/workspaces.md)"
    )
}

/// Exit code of a helper that refused to run its CLI.
pub const REFUSED: u8 = exit::SANDBOX_REFUSED;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_and_the_kernel_decide() {
        let ok = |abi| move || Ok(abi);
        assert_eq!(decide(None, ok(7)).unwrap(), Support::Landlock { abi: 7 });
        assert_eq!(
            decide(Some("auto".as_ref()), ok(3)).unwrap(),
            Support::Landlock { abi: 3 }
        );
        let old = decide(None, ok(2)).unwrap();
        assert_eq!(old.containment(), Containment::Copies);
        assert!(
            old.describe()
                .starts_with("copies — this kernel's Landlock is ABI 2")
        );
        let forced = decide(Some("copies".as_ref()), || unreachable!("not asked")).unwrap();
        assert_eq!(
            forced.describe(),
            "copies — `OKSTRA_CONTAINMENT=copies` asks for them"
        );
        let none = decide(None, || Err("this kernel has no Landlock".to_owned())).unwrap();
        assert_eq!(none.describe(), "copies — this kernel has no Landlock");
        assert_eq!(
            decide(Some("off".as_ref()), ok(7)).unwrap_err(),
            "`OKSTRA_CONTAINMENT` is `off`: expected `auto` or `copies`"
        );
        assert_eq!(Support::Landlock { abi: 7 }.describe(), "landlock (ABI 7)");
    }
}
