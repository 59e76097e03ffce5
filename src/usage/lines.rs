//! Reading a file line by line in bounded memory, defensively.
//!
//! Logs and session transcripts can be hundreds of megabytes, still growing,
//! or hostile (a FIFO, a link to `/dev/zero`). Files are opened non-blocking
//! and must be regular; lines come from `fsread::LineReader` as slices of
//! one fixed buffer (no copy when a line fits), a line longer than
//! [`MAX_LINE`] is skipped without being kept, and the last line counts even
//! without a newline.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::fsread::LineReader;

/// Read buffer: large enough that most lines are handed out without a copy.
const CHUNK: usize = 1 << 20;
/// Longest line kept; a usage line is a few kilobytes, an assistant message
/// with a huge text block is still far below this. Longer lines are skipped
/// so memory stays flat whatever the file holds.
pub const MAX_LINE: usize = 16 << 20;

/// Open `path` for reading only if it is a regular file; a FIFO does not
/// block the open, a device or a folder is refused.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = crate::beneath::open(
        path,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK,
        nix::sys::stat::Mode::empty(),
    )?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// What a pass over a file saw besides its lines.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Lines longer than [`MAX_LINE`], skipped.
    pub skipped: u64,
}

/// Call `each` with every line of `reader` (without its `\n`), in order;
/// a line longer than [`MAX_LINE`] is skipped (it is cut while read by the
/// one bounded line reader, so it is never held whole).
pub fn for_each_line(reader: impl Read, mut each: impl FnMut(&[u8])) -> io::Result<Pass> {
    let mut lines = LineReader::with_chunk(reader, MAX_LINE, CHUNK);
    let mut pass = Pass::default();
    while let Some(line) = lines.next_line()? {
        if line.is_cut() {
            pass.skipped += 1;
        } else {
            each(line.bytes);
        }
    }
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        for_each_line(bytes, |line| lines.push(line.to_vec())).unwrap();
        lines
    }

    #[test]
    fn lines_split_on_newlines_and_keep_an_unterminated_tail() {
        assert_eq!(
            collect(b"a\nbb\n\nc"),
            vec![b"a".to_vec(), b"bb".to_vec(), vec![], b"c".to_vec()]
        );
        assert!(collect(b"").is_empty());
    }

    #[test]
    fn lines_across_chunks_are_joined_and_overlong_ones_skipped() {
        let mut bytes = vec![b'x'; CHUNK + 10];
        bytes.push(b'\n');
        bytes.extend_from_slice(b"next\n");
        let lines = collect(&bytes);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), CHUNK + 10);
        let mut huge = vec![b'y'; MAX_LINE + 5];
        huge.extend_from_slice(b"\nafter");
        let mut got = Vec::new();
        let pass = for_each_line(huge.as_slice(), |line| got.push(line.to_vec())).unwrap();
        assert_eq!(got, vec![b"after".to_vec()]);
        assert_eq!(pass.skipped, 1);
    }

    #[test]
    fn only_regular_files_open() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_regular(dir.path()).is_err());
        assert!(open_regular(Path::new("/dev/zero")).is_err());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(open_regular(&fifo).is_err());
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular(&file).is_ok());
    }
}
