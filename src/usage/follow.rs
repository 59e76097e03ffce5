//! Following a log that is still being written: a [`Meter`] plus how far
//! the log has been read, so each look reads only what was appended.
//!
//! `okstra status --watch` and the dispatch engine look at a running
//! attempt's log every second; reading a long log from the start each time
//! would cost more with every look. A [`Follow`] keeps the byte offset and
//! the unfinished last line (bounded like any line), and starts over if the
//! log was replaced by a shorter one.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::Usage;
use super::lines::{self, MAX_LINE};
use super::stream::Meter;
use crate::catalog::Provider;

/// A log followed from where the last look stopped.
#[derive(Debug, Clone)]
pub struct Follow {
    path: PathBuf,
    fresh: Meter,
    meter: Meter,
    offset: u64,
    /// The bytes of a line whose end has not been written yet.
    partial: Vec<u8>,
    /// The unfinished line grew past [`MAX_LINE`]: drop it up to its end.
    skipping: bool,
}

impl Follow {
    /// Follow `log`, an attempt of `provider` running `model`.
    pub fn new(provider: Provider, model: Option<&str>, log: &Path) -> Follow {
        let meter = Meter::new(provider).with_model(model);
        Follow {
            path: log.to_path_buf(),
            fresh: meter.clone(),
            meter,
            offset: 0,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Read what was appended since the last look and return the running
    /// usage. A missing log is not an error: nothing was written yet.
    pub fn poll(&mut self) -> io::Result<Usage> {
        let mut file = match lines::open_regular(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(self.meter.snapshot()),
            Err(err) => return Err(err),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            // Replaced or truncated: start over.
            self.meter = self.fresh.clone();
            self.offset = 0;
            self.partial.clear();
            self.skipping = false;
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = vec![0_u8; 64 * 1024];
        loop {
            let read = match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            self.offset += read as u64;
            self.feed(&chunk[..read]);
        }
        Ok(self.meter.snapshot())
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            let piece = &bytes[..end];
            bytes = &bytes[end + 1..];
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                self.meter.feed_line(piece);
            } else {
                self.partial.extend_from_slice(piece);
                if self.partial.len() <= MAX_LINE {
                    self.meter.feed_line(&self.partial);
                }
                self.partial.clear();
            }
        }
        if self.skipping {
            return;
        }
        if self.partial.len() + bytes.len() > MAX_LINE {
            self.partial = Vec::new();
            self.skipping = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::{self, OpenOptions};
    use std::io::Write;

    use super::*;
    use crate::usage::Source;

    #[test]
    fn each_look_reads_only_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("codex-worker.log");
        let mut follow = Follow::new(Provider::Codex, Some("gpt-5"), &log);
        assert_eq!(follow.poll().unwrap().source, Source::Unavailable);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        file.write_all(b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,")
            .unwrap();
        // Half a line: nothing counted yet.
        assert_eq!(follow.poll().unwrap().source, Source::Unavailable);
        file.write_all(b"\"cached_input_tokens\":40,\"output_tokens\":5}}\n")
            .unwrap();
        assert_eq!(follow.poll().unwrap().tokens().input, 60);
        file.write_all(b"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":300,\"cached_input_tokens\":100,\"output_tokens\":9}}\n")
            .unwrap();
        assert_eq!(follow.poll().unwrap().tokens().input, 200);
        // A new, shorter log (a fresh attempt in the same file) starts over.
        fs::write(
            &log,
            b"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":7}}\n",
        )
        .unwrap();
        assert_eq!(follow.poll().unwrap().tokens().input, 7);
    }

    #[test]
    fn an_endless_line_is_dropped_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("w.log");
        let mut follow = Follow::new(Provider::Codex, None, &log);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let big = vec![b'x'; MAX_LINE / 2 + 1];
        file.write_all(&big).unwrap();
        follow.poll().unwrap();
        file.write_all(&big).unwrap();
        follow.poll().unwrap();
        assert!(follow.partial.is_empty() && follow.skipping);
        file.write_all(b"\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":3}}\n")
            .unwrap();
        assert_eq!(follow.poll().unwrap().tokens().input, 3);
        let folder = Follow::new(Provider::Codex, None, dir.path()).poll();
        assert!(folder.is_err());
    }
}
