//! Wall-clock helpers: Unix seconds now, RFC 3339 in and out.
//!
//! Sidecars use integer Unix seconds (the reference's `*_ts`); lead events and
//! heartbeats use RFC 3339 strings. Everything is compared in Unix seconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    to_unix(SystemTime::now())
}

/// Seconds since the Unix epoch for `time` (negative before 1970).
pub fn to_unix(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// RFC 3339 with milliseconds, UTC (`2026-11-30T09:00:00.123Z`).
pub fn rfc3339_now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Unix seconds as RFC 3339 UTC, for display.
pub fn rfc3339(unix: i64) -> String {
    let time = match u64::try_from(unix) {
        Ok(secs) => UNIX_EPOCH + Duration::from_secs(secs),
        Err(_) => UNIX_EPOCH,
    };
    humantime::format_rfc3339_seconds(time).to_string()
}

/// Parse an RFC 3339 timestamp (`Z` or a `±HH:MM` offset, optional
/// fraction) to Unix seconds; `None` when it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    // humantime only knows `Z`; fold a numeric offset in ourselves.
    // Six bytes from the end may fall inside a character (found by the
    // property tests: a heartbeat `ts` is anyone's text).
    let (base, offset_secs) = match text
        .len()
        .checked_sub(6)
        .and_then(|at| text.split_at_checked(at))
    {
        Some((base, offset))
            if (offset.starts_with('+') || offset.starts_with('-'))
                && offset.as_bytes().get(3) == Some(&b':') =>
        {
            let hours: i64 = offset.get(1..3)?.parse().ok()?;
            let minutes: i64 = offset.get(4..6)?.parse().ok()?;
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            (base.to_owned() + "Z", sign * (hours * 3600 + minutes * 60))
        }
        _ => (text.to_owned(), 0),
    };
    let time = humantime::parse_rfc3339_weak(&base).ok()?;
    Some(to_unix(time) - offset_secs)
}

/// A short human duration: `42s`, `3m05s`, `2h10m`.
pub fn short_duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    if seconds < 60 {
        format!("{seconds}s")
    } else if seconds < 3600 {
        format!("{}m{:02}s", seconds / 60, seconds % 60)
    } else {
        format!("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utc_and_offsets_alike() {
        let utc = parse_rfc3339("2026-11-30T09:00:00Z").unwrap();
        assert_eq!(parse_rfc3339("2026-11-30T09:00:00.250Z"), Some(utc));
        assert_eq!(parse_rfc3339("2026-11-30T18:00:00+09:00"), Some(utc));
        assert_eq!(parse_rfc3339("2026-11-30T04:30:00-04:30"), Some(utc));
        assert_eq!(rfc3339(utc), "2026-11-30T09:00:00Z");
    }

    #[test]
    fn refuses_non_timestamps() {
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339(""), None);
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2026-11-30T10:0\u{fffd}:00Z"), None);
    }

    #[test]
    fn short_durations() {
        assert_eq!(short_duration(5), "5s");
        assert_eq!(short_duration(185), "3m05s");
        assert_eq!(short_duration(7800), "2h10m");
        assert_eq!(short_duration(-3), "0s");
    }
}
