//! Gates checked before each attempt starts: enough free memory on the
//! machine and enough free disk where the project lives. A closed gate holds
//! the start back (the dispatcher waits and says which gate); it never fails
//! an attempt.

use std::path::Path;

/// The thresholds, from `--min-free-memory` / `--min-free-disk`.
#[derive(Debug, Clone, Copy)]
pub struct Gates {
    pub min_free_memory: u64,
    pub min_free_disk: u64,
}

/// Why a start is held back, for the progress view and the dispatch record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub gate: &'static str,
    pub free: u64,
    pub needed: u64,
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "waiting for the {} gate: {} free, {} needed",
            self.gate,
            human(self.free),
            human(self.needed)
        )
    }
}

impl Gates {
    /// The first closed gate, if any. A figure that cannot be read does not
    /// hold anything back (a machine without `/proc` still dispatches).
    pub fn check(&self, project_root: &Path) -> Option<Closed> {
        if let Some(free) = available_memory()
            && free < self.min_free_memory
        {
            return Some(Closed {
                gate: "memory",
                free,
                needed: self.min_free_memory,
            });
        }
        if let Some(free) = available_disk(project_root)
            && free < self.min_free_disk
        {
            return Some(Closed {
                gate: "disk",
                free,
                needed: self.min_free_disk,
            });
        }
        None
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text
        .lines()
        .find(|line| line.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Bytes an unprivileged user may still write on `path`'s filesystem.
fn available_disk(path: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(path).ok()?;
    #[expect(
        clippy::useless_conversion,
        reason = "the field types differ between platforms"
    )]
    u64::from(stat.blocks_available()).checked_mul(u64::from(stat.fragment_size()))
}

/// Parse a size: `512M`, `2G`, `1T`, `100k`, or plain bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size (expected e.g. `512M`, `2G`)"))?;
    let scale: u64 = match unit
        .to_ascii_lowercase()
        .trim_end_matches("ib")
        .trim_end_matches('b')
    {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit (expected K, M, G or T)"
            ));
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("`{text}` is too large"))
}

fn human(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB"];
    #[expect(clippy::cast_precision_loss, reason = "a size for people, one decimal")]
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn an_impossible_threshold_closes_the_memory_gate() {
        let gates = Gates {
            min_free_memory: u64::MAX,
            min_free_disk: 0,
        };
        let closed = gates
            .check(Path::new("/"))
            .expect("no machine has that much");
        assert_eq!(closed.gate, "memory");
        assert!(
            closed
                .to_string()
                .starts_with("waiting for the memory gate")
        );
        let open = Gates {
            min_free_memory: 0,
            min_free_disk: 0,
        };
        assert_eq!(open.check(Path::new("/")), None);
    }
}
