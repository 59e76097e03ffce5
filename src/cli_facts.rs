//! The doctor's findings cache: what each provider CLI is and which version
//! it reports, keyed by the provider and the CLI's resolved path, valid
//! while the file's modification time and size are unchanged, so a CLI is
//! asked only once per installed build. (The provider is part of the key:
//! one program may be installed under several names, as the test suite's
//! fake team is.)
//!
//! The cache lives in `$XDG_CACHE_HOME/okstra/doctor.json` (default
//! `~/.cache/okstra/doctor.json`) and is replaced atomically. It is only ever
//! a hint: a missing, unreadable, oversized or malformed cache reads as empty,
//! and an entry whose path, mtime or size no longer match is ignored. Render
//! and provider-exec read it ([`lookup`], [`known`]) without starting any
//! process; only `okstra doctor` writes it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::catalog::Provider;
use crate::durable;

/// Version of the cache file's format (2: entries keyed by provider and path).
pub const CACHE_VERSION: u32 = 2;
/// A cache bigger than this is not ours (five CLIs take a few KiB).
const MAX_CACHE_BYTES: u64 = 4 * 1024 * 1024;

pub use crate::providers::Program;

/// The file identity an entry is valid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stamp {
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
    pub size: u64,
}

impl Stamp {
    /// The stamp of the file `path` resolves to; `None` if it cannot be read.
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            mtime_sec: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            size: meta.size(),
        })
    }
}

/// One CLI's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub provider: String,
    /// The resolved (canonical) path of the CLI.
    pub path: PathBuf,
    pub stamp: Stamp,
    /// The version it reported, if one could be read.
    pub version: Option<String>,
    pub program: Program,
    /// Why the program is not the expected one (one line), if it is not.
    pub detail: Option<String>,
    pub checked_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheFile {
    schema_version: u32,
    /// Keyed by [`key`]: the provider and the canonical path.
    entries: BTreeMap<String, Entry>,
}

/// An entry's key: `<provider> <canonical path>`.
fn key(provider: &str, canonical: &Path) -> Option<String> {
    Some(format!("{provider} {}", canonical.to_str()?))
}

/// `$XDG_CACHE_HOME/okstra/doctor.json`, else `~/.cache/okstra/doctor.json`.
/// Relative or empty values are ignored, as the XDG spec asks.
pub fn cache_path() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("okstra").join("doctor.json"))
}

fn read_cache(path: &Path) -> CacheFile {
    // Checked before opening: opening a FIFO would block until a writer came.
    let is_small_file =
        std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_CACHE_BYTES);
    if !is_small_file {
        return CacheFile::default();
    }
    let Ok(file) = File::open(path) else {
        return CacheFile::default();
    };
    let mut bytes = Vec::new();
    if file.take(MAX_CACHE_BYTES).read_to_end(&mut bytes).is_err() {
        return CacheFile::default();
    }
    match serde_json::from_slice::<CacheFile>(&bytes) {
        Ok(cache) if cache.schema_version == CACHE_VERSION => cache,
        _ => CacheFile::default(),
    }
}

/// The cached entry for `provider`'s CLI at `program` (any path that
/// resolves to it), if it is still valid for that file.
pub fn lookup(provider: Provider, program: &Path) -> Option<Entry> {
    let canonical = std::fs::canonicalize(program).ok()?;
    let stamp = Stamp::of(&canonical)?;
    let key = key(provider.as_str(), &canonical)?;
    let cache = read_cache(&cache_path()?);
    cache
        .entries
        .get(&key)
        .filter(|entry| {
            entry.stamp == stamp && entry.path == canonical && entry.provider == provider.as_str()
        })
        .cloned()
}

/// Add or replace `entries` in the cache (other entries are kept).
pub fn store(entries: &[Entry]) -> std::io::Result<()> {
    let Some(path) = cache_path() else {
        return Ok(());
    };
    let mut cache = read_cache(&path);
    cache.schema_version = CACHE_VERSION;
    for entry in entries {
        if let Some(key) = key(&entry.provider, &entry.path) {
            cache.entries.insert(key, entry.clone());
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut bytes = serde_json::to_vec_pretty(&cache).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    durable::write_atomic(&path, &bytes)
}

/// What okstra knows about a provider's CLI without starting it: where
/// `PATH` finds it, and what the cache says about that file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// The CLI as found on `PATH`; `None` when it is not there.
    pub path: Option<PathBuf>,
    /// The cache's entry for it; `None` when `okstra doctor` has not seen this build.
    pub entry: Option<Entry>,
}

impl Known {
    /// The cached version, or `unknown`.
    pub fn version(&self) -> &str {
        self.entry
            .as_ref()
            .and_then(|entry| entry.version.as_deref())
            .unwrap_or(UNKNOWN_VERSION)
    }
}

/// Recorded when the cache has no version for a CLI.
pub const UNKNOWN_VERSION: &str = "unknown";

/// Look `provider`'s CLI up on `PATH` and in the cache (no process is started).
pub fn known(provider: Provider) -> Known {
    let path = which::which(provider.binary()).ok();
    let entry = path.as_deref().and_then(|path| lookup(provider, path));
    Known { path, entry }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_have_stable_wire_names() {
        assert_eq!(
            serde_json::to_value(Program::VibeKitGrok).unwrap(),
            serde_json::json!("vibe-kit-grok")
        );
        assert_eq!(Program::Expected.label(Provider::Codex), "codex-cli");
        assert!(Program::VibeKitGrok.is_usable());
        assert!(!Program::LegacyKimiCli.is_usable());
    }

    #[test]
    fn a_malformed_cache_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doctor.json");
        std::fs::write(&path, "{not json").unwrap();
        assert!(read_cache(&path).entries.is_empty());
        std::fs::write(&path, r#"{"schemaVersion":99,"entries":{}}"#).unwrap();
        assert!(read_cache(&path).entries.is_empty());
        assert!(read_cache(dir.path()).entries.is_empty());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(
            read_cache(&fifo).entries.is_empty(),
            "a FIFO must not block"
        );
    }
}
