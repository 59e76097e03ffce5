//! Reading provider-exec status sidecars (`<prompt>.status.json`), and the
//! reaper's one permitted change to them.
//!
//! provider-exec owns the format (SPEC §5) and may be older or newer than
//! this binary, so every field is optional here, unknown fields are kept
//! verbatim when the reaper rewrites a sidecar, and a sidecar that is not a
//! JSON object is reported, never fatal.

use nix::libc;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::vocab::Reason;
use crate::vocab::Stage;
use crate::vocab::TerminatedBy;
use crate::vocab::Word;
use crate::{durable, fsread};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open sidecar `{}`", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Read(#[from] fsread::Error),
    #[error("sidecar `{}` is not a JSON object", .path.display())]
    Malformed { path: PathBuf },
    #[error("sidecar `{}` did not keep the reaper's record when read back", .path.display())]
    NotKept { path: PathBuf },
    #[error("cannot write sidecar `{}`", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The fields of a sidecar the lifecycle commands use.
#[derive(Debug, Clone)]
pub struct Sidecar {
    pub path: PathBuf,
    /// `None` when missing or a word this build does not know: not terminal.
    pub stage: Option<Stage>,
    /// The wrapper's pid.
    pub pid: Option<i32>,
    /// The CLI's process group (its pid), once spawned.
    pub pgid: Option<i32>,
    pub started_ts: Option<i64>,
    pub ended_ts: Option<i64>,
    pub duration_ms: Option<i64>,
    pub exit_code: Option<i64>,
    pub timeout: bool,
    /// `None` when missing or a word this build does not know.
    pub terminated_by: Option<TerminatedBy>,
    pub signal: Option<String>,
    /// `None` when missing; a newer wrapper's word is kept as written.
    pub reason: Option<Word<Reason>>,
    pub log_path: Option<PathBuf>,
}

/// The fields read, with the types provider-exec writes. A sidecar whose
/// fields have other types is read again through `Value`, leniently.
#[derive(Debug, Deserialize)]
struct Wire {
    stage: Option<String>,
    pid: Option<i64>,
    pgid: Option<i64>,
    started_ts: Option<i64>,
    ended_ts: Option<i64>,
    duration_ms: Option<i64>,
    exit_code: Option<i64>,
    timeout: Option<bool>,
    terminated_by: Option<String>,
    signal: Option<String>,
    reason: Option<String>,
    log_path: Option<String>,
}

/// Read a sidecar; `Ok(None)` when there is none. A symlink is not
/// followed: provider-exec writes sidecars by rename, never as links.
pub fn read(path: &Path) -> Result<Option<Sidecar>, Error> {
    read_with(path, |path| {
        crate::beneath::open(
            path,
            nix::fcntl::OFlag::from_bits_truncate(fsread::OPEN_FLAGS | libc::O_NOFOLLOW),
            nix::sys::stat::Mode::empty(),
        )
    })
}

/// [`read`], opening `path` with `open` (e.g. relative to an open folder,
/// with [`fsread::OPEN_FLAGS`]); bounded and refused unless a regular file.
pub fn read_with(
    path: &Path,
    open: impl FnOnce(&Path) -> io::Result<File>,
) -> Result<Option<Sidecar>, Error> {
    let file = match open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Open {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let bytes = fsread::read_opened(file, path, fsread::Kind::Sidecar)?;
    parse(path, &bytes).map(Some)
}

/// A sidecar's bytes, read from `path`.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Sidecar, Error> {
    // The typed read skips unknown fields without allocating them; it is
    // the common case on a board of thousands of sidecars.
    if let Ok(wire) = serde_json::from_slice::<Wire>(bytes) {
        return Ok(Sidecar::from_wire(path, wire));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(raw)) => Ok(Sidecar::from_map(path, &raw)),
        _ => Err(Error::Malformed {
            path: path.to_path_buf(),
        }),
    }
}

/// The whole sidecar object, for a rewrite that keeps what we do not know.
fn read_raw(path: &Path) -> Result<Map<String, Value>, Error> {
    let bytes = fsread::read_no_follow(path, fsread::Kind::Sidecar)?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(raw)) => Ok(raw),
        _ => Err(Error::Malformed {
            path: path.to_path_buf(),
        }),
    }
}

fn stage_of(stage: Option<&str>) -> Option<Stage> {
    stage.and_then(|word| word.parse().ok())
}

/// A positive pid that fits `pid_t`.
fn to_pid(value: Option<i64>) -> Option<i32> {
    value.and_then(|v| i32::try_from(v).ok()).filter(|v| *v > 0)
}

impl Sidecar {
    /// Whether the wrapper recorded its end (`stage: exited`).
    pub fn is_exited(&self) -> bool {
        self.stage == Some(Stage::Exited)
    }

    fn from_wire(path: &Path, wire: Wire) -> Sidecar {
        Sidecar {
            path: path.to_path_buf(),
            stage: stage_of(wire.stage.as_deref()),
            pid: to_pid(wire.pid),
            pgid: to_pid(wire.pgid),
            started_ts: wire.started_ts,
            ended_ts: wire.ended_ts,
            duration_ms: wire.duration_ms,
            exit_code: wire.exit_code,
            timeout: wire.timeout == Some(true),
            terminated_by: wire.terminated_by.and_then(|word| word.parse().ok()),
            signal: wire.signal,
            reason: wire.reason.as_deref().map(Word::parse),
            log_path: wire.log_path.map(PathBuf::from),
        }
    }

    fn from_map(path: &Path, raw: &Map<String, Value>) -> Sidecar {
        let int = |key: &str| raw.get(key).and_then(Value::as_i64);
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_owned);
        Sidecar {
            path: path.to_path_buf(),
            stage: stage_of(raw.get("stage").and_then(Value::as_str)),
            pid: to_pid(int("pid")),
            pgid: to_pid(int("pgid")),
            started_ts: int("started_ts"),
            ended_ts: int("ended_ts"),
            duration_ms: int("duration_ms"),
            exit_code: int("exit_code"),
            timeout: raw.get("timeout").and_then(Value::as_bool) == Some(true),
            terminated_by: text("terminated_by").and_then(|word| word.parse().ok()),
            signal: text("signal"),
            reason: text("reason").as_deref().map(Word::parse),
            log_path: text("log_path").map(PathBuf::from),
        }
    }

    /// The CLI's `argv` as provider-exec recorded it (read again from the
    /// file: only the reaper needs it, the board never pays for it).
    pub fn recorded_argv(&self) -> Option<Vec<String>> {
        let raw = read_raw(&self.path).ok()?;
        raw.get("argv")?
            .as_array()?
            .iter()
            .map(|word| word.as_str().map(str::to_owned))
            .collect()
    }

    /// Record that the reaper finished this sidecar for a dead wrapper:
    /// `stage: exited`, `terminated_by: reaper`, `reason`, `ended_ts`,
    /// written atomically. The file is read again so every field it holds
    /// now, known to us or not, is kept.
    pub fn mark_reaped(&self, reason: Reason, ended_ts: i64, killed: bool) -> Result<(), Error> {
        let mut raw = read_raw(&self.path)?;
        raw.insert("stage".into(), "exited".into());
        raw.insert("terminated_by".into(), TerminatedBy::Reaper.as_str().into());
        raw.insert("reason".into(), reason.as_str().into());
        raw.insert("ended_ts".into(), ended_ts.into());
        if let Some(started) = self.started_ts {
            let millis = (ended_ts - started).max(0).saturating_mul(1000);
            raw.entry("duration_ms").or_insert_with(|| millis.into());
        }
        // The CLI's own end was never observed. A group the reaper stopped
        // ended on its signal (128+N, the shell convention); for a group
        // that was already gone the code is unknown.
        let stopped_by = if killed {
            Some(nix::sys::signal::Signal::SIGKILL)
        } else if reason == Reason::OrphanedGroupStopped {
            Some(nix::sys::signal::Signal::SIGTERM)
        } else {
            None
        };
        raw.entry("exit_code").or_insert_with(|| {
            stopped_by.map_or(Value::Null, |signal| {
                crate::exit::from_signal(signal as i32).into()
            })
        });
        if killed {
            raw.insert("killed".into(), true.into());
        }
        let mut bytes =
            serde_json::to_vec_pretty(&Value::Object(raw)).expect("a JSON map always serialises");
        bytes.push(b'\n');
        durable::write_atomic(&self.path, &bytes).map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })?;
        // Read it back: a rename onto a file someone else just replaced
        // must not go unnoticed.
        let back = read_raw(&self.path)?;
        if back.get("terminated_by").and_then(Value::as_str) == Some(TerminatedBy::Reaper.as_str())
            && back.get("stage").and_then(Value::as_str) == Some("exited")
        {
            Ok(())
        } else {
            Err(Error::NotKept {
                path: self.path.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn a_reason_this_build_does_not_know_is_kept_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.md.status.json");
        for (text, expected) in [
            (
                r#"{"stage":"exited","reason":"spawn-failed"}"#,
                Word::Known(Reason::SpawnFailed),
            ),
            (
                r#"{"stage":"exited","reason":"quota-pause"}"#,
                Word::Unknown("quota-pause".to_owned()),
            ),
            // Read again leniently (a field of another type), the same.
            (
                r#"{"stage":"exited","pid":"1","reason":"quota-pause"}"#,
                Word::Unknown("quota-pause".to_owned()),
            ),
        ] {
            fs::write(&path, text).unwrap();
            let sidecar = read(&path).unwrap().unwrap();
            assert_eq!(sidecar.reason.as_ref(), Some(&expected), "{text}");
        }
        assert_eq!(
            read(&path).unwrap().unwrap().reason.unwrap().to_string(),
            "quota-pause"
        );
    }

    #[test]
    fn reading_is_defensive_and_marking_keeps_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.md.status.json");
        assert!(read(&path).unwrap().is_none());
        fs::write(&path, "[1]").unwrap();
        assert!(matches!(read(&path), Err(Error::Malformed { .. })));
        fs::write(
            &path,
            r#"{"schemaVersion":1,"stage":"started","pid":-4,"pgid":77,"started_ts":100,"future":"x"}"#,
        )
        .unwrap();
        let sidecar = read(&path).unwrap().unwrap();
        assert_eq!(sidecar.stage, Some(Stage::Started));
        // A field of an unexpected type does not hide the others.
        fs::write(&path, r#"{"stage":"exited","pid":"12","exit_code":3}"#).unwrap();
        let odd = read(&path).unwrap().unwrap();
        assert_eq!(
            (odd.stage, odd.pid, odd.exit_code),
            (Some(Stage::Exited), None, Some(3))
        );
        fs::write(
            &path,
            r#"{"schemaVersion":1,"stage":"started","pid":-4,"pgid":77,"started_ts":100,"future":"x"}"#,
        )
        .unwrap();
        assert_eq!(sidecar.pid, None);
        assert_eq!(sidecar.pgid, Some(77));
        sidecar
            .mark_reaped(Reason::WrapperLost, 160, false)
            .unwrap();
        let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(after["stage"], "exited");
        assert_eq!(after["terminated_by"], "reaper");
        assert_eq!(after["reason"], "wrapper-lost");
        assert_eq!(after["ended_ts"], 160);
        assert_eq!(after["duration_ms"], 60_000);
        assert_eq!(after["future"], "x");
        assert_eq!(after["exit_code"], Value::Null);
    }

    #[test]
    fn reaped_records_satisfy_the_status_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.md.status.json");
        for (reason, killed, code) in [
            (Reason::WrapperLost, false, Value::Null),
            (Reason::OrphanedGroupStopped, false, Value::from(143)),
            (Reason::OrphanedGroupStopped, true, Value::from(137)),
        ] {
            fs::write(
                &path,
                r#"{"schemaVersion":1,"wrapper":"okstra-codex-exec","role":"worker","pid":4,"pgid":7,"started_ts":100,"log_path":"/x/p.log","stage":"started"}"#,
            )
            .unwrap();
            let sidecar = read(&path).unwrap().unwrap();
            sidecar.mark_reaped(reason, 160, killed).unwrap();
            let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            assert_eq!(after["exit_code"], code, "{}", reason.as_str());
            let problems = crate::schema::violations("status.schema.json", &after).unwrap();
            assert!(problems.0.is_empty(), "{}: {problems}", reason.as_str());
        }
    }
}
