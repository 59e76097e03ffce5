//! Provider slots per user: at most N calls to one provider at once across
//! every run of this user, so a host-led run and a CI run on the same
//! account do not trip the provider's rate limit together.
//!
//! A slot is an exclusive `flock` on `<provider>-<k>.lock` (k < N) in
//! okstra's per-user runtime folder (`$XDG_RUNTIME_DIR/okstra/slots`, else
//! `~/.local/state/okstra/slots`). The engine takes one before an attempt
//! starts and drops it when the attempt ends; the kernel frees it when its
//! holder dies, so a slot is never stale. An attempt that finds every slot
//! of its provider taken is held (its record says so) until one frees.
//!
//! The cap per provider is the catalog's ([`Provider::default_slots`]),
//! overridden by `--provider-slots` / `OKSTRA_PROVIDER_SLOTS`
//! (`claude=2,codex=1`; `0` lifts the cap). When the folder cannot be
//! used, the run goes on without caps and says so once.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::catalog::{Provider, one_of};
use crate::durable::Lock;

/// How many calls to each provider may run at once for this user; `0` is
/// no cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps(BTreeMap<Provider, u32>);

impl Default for Caps {
    fn default() -> Caps {
        Caps(
            Provider::ALL
                .iter()
                .map(|&provider| (provider, provider.default_slots()))
                .collect(),
        )
    }
}

impl Caps {
    /// The catalog's caps with `spec` (`PROVIDER=N[,PROVIDER=N…]`) over
    /// them; the error names the bad part and what is expected.
    pub fn parse(spec: &str) -> Result<Caps, String> {
        let mut caps = Caps::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let expected = || {
                format!(
                    "invalid value `{part}` for `--provider-slots`: expected PROVIDER=N with PROVIDER {} and N a whole number (0 lifts the cap)",
                    one_of(Provider::ALL)
                )
            };
            let (name, count) = part.split_once('=').ok_or_else(expected)?;
            let provider: Provider = name.trim().parse().map_err(|_| expected())?;
            let count: u32 = count.trim().parse().map_err(|_| expected())?;
            caps.0.insert(provider, count);
        }
        Ok(caps)
    }

    /// `provider`'s cap; `None` when it has none.
    pub fn of(&self, provider: Provider) -> Option<u32> {
        self.0.get(&provider).copied().filter(|&n| n > 0)
    }
}

/// A held slot; freed when dropped.
#[derive(Debug)]
pub struct Slot {
    _lock: Lock,
}

/// Every slot of a provider is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub provider: Provider,
    pub cap: u32,
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "waiting for a free `{}` slot: all {} in use by this user's okstra runs (`--provider-slots`)",
            self.provider, self.cap
        )
    }
}

/// The slots of this user, as one engine takes them.
#[derive(Debug)]
pub struct Slots {
    caps: Caps,
    /// `None` when there is no per-user folder to keep them in.
    dir: Option<PathBuf>,
    /// Whether "cannot use the slot folder" was said.
    warned: Cell<bool>,
}

impl Slots {
    /// Slots capped by `caps`, kept in this user's runtime folder.
    pub fn new(caps: Caps) -> Slots {
        let dir = crate::user_dirs::runtime_dir(&|name| std::env::var_os(name))
            .map(|dir| dir.join("slots"));
        Slots::in_dir(caps, dir)
    }

    /// Slots kept in `dir` (tests).
    pub fn in_dir(caps: Caps, dir: Option<PathBuf>) -> Slots {
        Slots {
            caps,
            dir,
            warned: Cell::new(false),
        }
    }

    /// A slot of `provider`: `Ok(Some)` held, `Ok(None)` when `provider`
    /// has no cap (or the slots cannot be kept: said once), `Err` when all
    /// are taken.
    pub fn take(&self, provider: Provider) -> Result<Option<Slot>, Busy> {
        let Some(cap) = self.caps.of(provider) else {
            return Ok(None);
        };
        let Some(dir) = &self.dir else {
            self.warn_once("no per-user folder for provider slots (set `HOME`)");
            return Ok(None);
        };
        if let Err(err) = DirBuilder::new().recursive(true).mode(0o700).create(dir) {
            self.warn_once(&format!("cannot create `{}`: {err}", dir.display()));
            return Ok(None);
        }
        for k in 0..cap {
            let path = dir.join(format!("{provider}-{k}.lock"));
            match try_lock(&path) {
                Ok(Some(slot)) => return Ok(Some(slot)),
                Ok(None) => {}
                Err(err) => {
                    self.warn_once(&format!("cannot use `{}`: {err}", path.display()));
                    return Ok(None);
                }
            }
        }
        Err(Busy { provider, cap })
    }

    fn warn_once(&self, why: &str) {
        if !self.warned.replace(true) {
            crate::diag::warning(format_args!(
                "provider slots are not enforced for this dispatch: {why}"
            ));
        }
    }
}

/// Lock `path` (a regular file, never followed through a link) if free.
fn try_lock(path: &Path) -> std::io::Result<Option<Slot>> {
    let lock = Lock::on(path, format!("the provider slot `{}`", path.display())).try_acquire()?;
    Ok(lock.map(|lock| Slot { _lock: lock }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_overrides_the_catalog_and_names_a_bad_part() {
        let caps = Caps::parse("claude=1, codex=0").unwrap();
        assert_eq!(caps.of(Provider::Claude), Some(1));
        assert_eq!(caps.of(Provider::Codex), None);
        assert_eq!(
            caps.of(Provider::Kimi),
            Some(Provider::Kimi.default_slots())
        );
        for bad in ["claude", "claud=1", "claude=-1", "claude=two"] {
            let err = Caps::parse(bad).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }

    #[test]
    fn slots_are_shared_by_every_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let caps = Caps::parse("claude=2").unwrap();
        let one = Slots::in_dir(caps.clone(), Some(dir.path().join("slots")));
        let other = Slots::in_dir(caps, Some(dir.path().join("slots")));
        let first = one.take(Provider::Claude).unwrap().unwrap();
        let second = other.take(Provider::Claude).unwrap().unwrap();
        let busy = one.take(Provider::Claude).unwrap_err();
        assert_eq!(busy.cap, 2);
        // Another provider has its own slots.
        assert!(other.take(Provider::Codex).unwrap().is_some());
        drop(first);
        assert!(other.take(Provider::Claude).unwrap().is_some());
        drop(second);
    }

    #[test]
    fn a_link_planted_as_a_slot_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let slots_dir = dir.path().join("slots");
        std::fs::create_dir(&slots_dir).unwrap();
        let target = dir.path().join("victim");
        std::os::unix::fs::symlink(&target, slots_dir.join("claude-0.lock")).unwrap();
        let slots = Slots::in_dir(Caps::parse("claude=1").unwrap(), Some(slots_dir));
        // Not enforced (and said), never a file created through the link.
        assert!(slots.take(Provider::Claude).unwrap().is_none());
        assert!(!target.exists());
    }
}
