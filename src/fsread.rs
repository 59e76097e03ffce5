//! Bounded reads of every file okstra takes as input, and the one function
//! that makes text from files safe to print.
//!
//! Any file okstra reads may be hostile or unlucky: a FIFO (a plain `open`
//! blocks until a writer comes), a link to `/dev/zero` (endless), a huge or
//! sparse file (memory), a symlink out of the project. So every input is
//! opened with `O_NONBLOCK` (a FIFO opens at once and is then refused),
//! `fstat`ed once, refused unless it is a regular file, and read only up to
//! a limit that depends on what the file is ([`Kind`]). The size check comes
//! before any byte is read; the read itself stops one byte past the limit, so
//! a file that grows while read is refused too.
//!
//! Cost: one `fstat` on top of open/read/close. A small file is read with one
//! `read` call (the buffer is sized from `fstat`, and a short read of a
//! regular file is its end), which keeps the status board, which reads
//! thousands of sidecars, as fast as before.
//!
//! Not here: which paths may be read (confinement lives with the callers,
//! see `confine`), and writing (`durable`).

use nix::fcntl::OFlag;
use nix::libc;
use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// What a file is, which sets how much of it okstra will read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `--task-brief` and continuation inputs (clarification answers, plans).
    Brief,
    /// A worker's Result Path or worker-results file.
    Result,
    /// `run-manifest.json` and other manifests okstra wrote.
    Manifest,
    /// A provider-exec status sidecar or a heartbeat file.
    Sidecar,
    /// `lead-events.jsonl` and the task folder's `runs.jsonl`.
    Events,
    /// A final report's `data.json`.
    Report,
    /// A project file an anchor cites, read from the run's snapshot.
    Source,
    /// A native worker's answer handed to `okstra submit` (a file or
    /// stdin), or the JSON a host's sub-agent-stop hook gets on stdin.
    Answer,
}

const MIB: u64 = 1024 * 1024;

impl Kind {
    /// The most bytes okstra reads of a file of this kind
    /// (docs/hostile-files.md lists them).
    pub const fn limit(self) -> u64 {
        match self {
            // A brief is a prompt: far below a model's context window. A
            // source file is read whole to find an excerpt: generated files
            // and data blobs past this are not code anyone cites.
            Kind::Brief | Kind::Source => 4 * MIB,
            Kind::Result => 16 * MIB,
            Kind::Manifest => 8 * MIB,
            // A sidecar or heartbeat is a few hundred bytes.
            Kind::Sidecar => MIB,
            Kind::Events => 64 * MIB,
            // `validate` parses it into a tree about 5× its size.
            Kind::Report => 32 * MIB,
            // A result (16 MiB at most) and its audit, JSON-escaped by a hook.
            Kind::Answer => 40 * MIB,
        }
    }

    /// The noun used in messages.
    pub const fn noun(self) -> &'static str {
        match self {
            Kind::Brief => "brief",
            Kind::Result => "worker result",
            Kind::Manifest => "manifest",
            Kind::Sidecar => "status sidecar",
            Kind::Events => "event log",
            Kind::Report => "report",
            Kind::Source => "project file",
            Kind::Answer => "worker answer",
        }
    }
}

/// Whether the last component of a path may be a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Yes,
    /// `O_NOFOLLOW`: a symlink is refused (`ELOOP`).
    No,
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open `{}`", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{}` is {what}, not a regular file", .path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error(
        "`{}` is {size} bytes, over the {limit}-byte limit for a {noun}",
        .path.display()
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
        noun: &'static str,
    },
    #[error("cannot read `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// The file does not exist (the only failure many readers tolerate).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Open { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Flags for callers that open a file themselves (e.g. `openat` relative to
/// a folder handle) before handing it to [`read_opened`]: never block on a
/// FIFO.
pub const OPEN_FLAGS: i32 = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// Open `path` with [`OPEN_FLAGS`], unchecked: for callers that go on to
/// [`read_opened`] (or [`check_regular`]).
pub fn open_raw(path: &Path) -> io::Result<File> {
    crate::beneath::open(
        path,
        OFlag::from_bits_truncate(OPEN_FLAGS),
        nix::sys::stat::Mode::empty(),
    )
}

/// Open `path` for reading without blocking, and check it is a regular file.
/// Returns the file and its size.
///
/// Under a project's `.okstra/` no symlink is followed on the way, whatever
/// `follow` says (`beneath`).
pub fn open(path: &Path, follow: Follow) -> Result<(File, u64), Error> {
    let mut flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK;
    if follow == Follow::No {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file =
        crate::beneath::open(path, flags, nix::sys::stat::Mode::empty()).map_err(|source| {
            Error::Open {
                path: path.to_path_buf(),
                source,
            }
        })?;
    let size = check_regular(&file, path)?;
    Ok((file, size))
}

/// `fstat` an open file: its size when it is a regular file.
pub fn check_regular(file: &File, path: &Path) -> Result<u64, Error> {
    let meta = file.metadata().map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(meta.len());
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    Err(Error::NotRegular {
        path: path.to_path_buf(),
        what,
    })
}

/// Read a whole file of `kind`, following a symlinked last component.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, Error> {
    let (file, size) = open(path, Follow::Yes)?;
    read_sized(file, size, path, kind)
}

/// [`read`], refusing a symlink as the last component.
pub fn read_no_follow(path: &Path, kind: Kind) -> Result<Vec<u8>, Error> {
    let (file, size) = open(path, Follow::No)?;
    read_sized(file, size, path, kind)
}

/// [`read_no_follow`], `Ok(None)` when the file does not exist.
pub fn read_no_follow_if_exists(path: &Path, kind: Kind) -> Result<Option<Vec<u8>>, Error> {
    match read_no_follow(path, kind) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.is_not_found() => Ok(None),
        Err(err) => Err(err),
    }
}

/// Read a file the caller opened (with [`OPEN_FLAGS`]); `path` is for
/// messages only.
pub fn read_opened(file: File, path: &Path, kind: Kind) -> Result<Vec<u8>, Error> {
    let size = check_regular(&file, path)?;
    read_sized(file, size, path, kind)
}

fn read_sized(mut file: File, size: u64, path: &Path, kind: Kind) -> Result<Vec<u8>, Error> {
    let limit = kind.limit();
    let too_large = |size| Error::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
        noun: kind.noun(),
    };
    if size > limit {
        return Err(too_large(size));
    }
    // One byte past the size, so an unchanged file ends in one short read.
    // `fstat` says 0 for some files that still hold bytes: read in chunks.
    let first = match usize::try_from(size) {
        Ok(0) | Err(_) => CHUNK,
        Ok(size) => size.saturating_add(1),
    };
    let mut bytes = Vec::new();
    let mut want = first;
    loop {
        let start = bytes.len();
        bytes.resize(start + want, 0);
        let read = loop {
            match file.read(&mut bytes[start..]) {
                Ok(n) => break n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Read {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
        };
        bytes.truncate(start + read);
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        // A short read of a regular file is its end.
        if read < want {
            return Ok(bytes);
        }
        let room = usize::try_from(limit + 1 - bytes.len() as u64).unwrap_or(usize::MAX);
        want = CHUNK.max(bytes.len() / 2).min(room);
    }
}

/// Read a stream (stdin) of `kind` to its end, refusing it once it passes
/// the kind's limit; `label` names it in messages.
pub fn read_stream(reader: impl Read, label: &Path, kind: Kind) -> Result<Vec<u8>, Error> {
    let limit = kind.limit();
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Read {
            path: label.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: label.to_path_buf(),
            size: bytes.len() as u64,
            limit,
            noun: kind.noun(),
        });
    }
    Ok(bytes)
}

/// Read size when `fstat` gives no useful size, and the least first read.
const CHUNK: usize = 8192;

/// The last `max_bytes` bytes of a file that may be large (a log), and
/// whether the start was cut. No size limit: only the end is read.
pub fn read_tail(path: &Path, max_bytes: u64, follow: Follow) -> Result<(Vec<u8>, bool), Error> {
    let (mut file, size) = open(path, follow)?;
    let start = size.saturating_sub(max_bytes);
    let read_err = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    file.seek(SeekFrom::Start(start)).map_err(read_err)?;
    let mut bytes = Vec::new();
    // `take`: a file appended to while we read still ends.
    file.take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    Ok((bytes, start > 0))
}

/// Lines of a stream in memory bounded by a cap, whatever the stream holds.
///
/// A line that fits the cap is handed out whole; a longer one is cut to its
/// first `cap` bytes *while it is read*: the rest is skipped as it streams
/// past, never held. Memory is one fixed read buffer plus at most `cap`
/// bytes of a line that spans reads (the tests check `held`). Lines end at
/// `\n` (kept out of the line; a `\r` before it stays); the last line counts
/// even without one. With every line under the cap, the lines are exactly
/// those of `BufRead::split(b'\n')`.
pub struct LineReader<R> {
    inner: R,
    /// Fixed-size read buffer; `start..end` is not handed out yet.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The kept part of a line that spans reads (capacity ≤ `cap`).
    carry: Vec<u8>,
    cap: usize,
    done: bool,
    bytes_read: u64,
}

/// One line from a [`LineReader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The line without its `\n`, at most the cap.
    pub bytes: &'a [u8],
    /// Length of the whole line as it was in the stream.
    pub len: u64,
}

impl Line<'_> {
    /// The line was longer than the cap, so `bytes` is its start only.
    pub fn is_cut(&self) -> bool {
        self.len > self.bytes.len() as u64
    }
}

/// The read buffer of a [`LineReader`]: most lines are handed out from it
/// without a copy.
const LINE_CHUNK: usize = 64 * 1024;

impl<R: Read> LineReader<R> {
    /// Lines of `inner`, each cut to at most `cap` bytes (`cap` ≥ 1).
    pub fn new(inner: R, cap: usize) -> Self {
        Self::with_chunk(inner, cap, LINE_CHUNK)
    }

    /// [`LineReader::new`] with a read buffer of `chunk` bytes (tests use
    /// tiny ones to cross every boundary).
    pub fn with_chunk(inner: R, cap: usize, chunk: usize) -> Self {
        LineReader {
            inner,
            buf: vec![0; chunk.max(1)],
            start: 0,
            end: 0,
            carry: Vec::new(),
            cap: cap.max(1),
            done: false,
            bytes_read: 0,
        }
    }

    /// The next line, `None` at the end of the stream.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.carry.clear();
        let mut len: u64 = 0;
        // Part of this line went to `carry`: it spans reads.
        let mut carried = false;
        // The line, when it lies whole in `buf` (cut to the cap).
        let mut in_buf = None;
        loop {
            if self.start == self.end && (self.done || !self.fill()?) {
                if !carried {
                    return Ok(None);
                }
                break;
            }
            let window = &self.buf[self.start..self.end];
            if let Some(at) = memchr::memchr(b'\n', window) {
                len += at as u64;
                let from = self.start;
                self.start += at + 1;
                if carried {
                    self.keep(from, from + at);
                } else {
                    in_buf = Some((from, from + at.min(self.cap)));
                }
                break;
            }
            len += window.len() as u64;
            let (from, to) = (self.start, self.end);
            self.keep(from, to);
            self.start = self.end;
            carried = true;
        }
        let bytes = match in_buf {
            Some((from, to)) => &self.buf[from..to],
            None => self.carry.as_slice(),
        };
        Ok(Some(Line { bytes, len }))
    }

    /// Read the next chunk; `false` at the end of the stream.
    fn fill(&mut self) -> io::Result<bool> {
        let read = loop {
            match self.inner.read(&mut self.buf) {
                Ok(n) => break n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        };
        self.start = 0;
        self.end = read;
        self.bytes_read += read as u64;
        self.done = read == 0;
        Ok(read > 0)
    }

    /// Keep `buf[from..to]` in `carry`, up to the cap. Growth is doubling
    /// but clamped, so the carry's capacity never passes the cap.
    fn keep(&mut self, from: usize, to: usize) {
        let take = (to - from).min(self.cap - self.carry.len());
        if take == 0 {
            return;
        }
        let need = self.carry.len() + take;
        if need > self.carry.capacity() {
            let target = need.max(self.carry.capacity() * 2).min(self.cap);
            self.carry.reserve_exact(target - self.carry.len());
        }
        self.carry.extend_from_slice(&self.buf[from..from + take]);
    }

    /// Bytes this reader holds: its read buffer and its carry (the
    /// property tests check it never passes the buffer plus the cap).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.buf.len() + self.carry.capacity()
    }

    /// Bytes read from the stream so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

/// The longest prefix of `bytes` that is whole UTF-8 where a cut split the
/// last character (a cut line ends anywhere); other invalid bytes are left
/// for the caller's lossy decoding.
pub fn trim_split_char(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    }
}

/// `text` cut to at most `max` bytes at a character boundary, with `…`
/// added when something was cut; one allocation of the kept size.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + '…'.len_utf8());
    out.push_str(&text[..cut]);
    out.push('…');
    out
}

/// `text` with every control character escaped (C0, DEL, C1; newlines and
/// tabs too) and every bidirectional formatting character ([`is_bidi`]), so
/// text from a file prints as one inert line: no terminal escape sequence,
/// no forged second line, no name that reads backwards. Borrowed when
/// nothing changes.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, false)
}

/// [`escape`], keeping line breaks (for text that is several lines by
/// design, such as a list of schema violations).
pub fn escape_keep_lines(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

/// A control character that has no place in a rendered document: NUL and
/// the other C0 controls (ESC among them) but tab and newline, DEL, and the
/// C1 controls. Markdown and HTML output drop them.
pub fn is_stray_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\t')
}

/// A Unicode bidirectional formatting character: the embeddings and
/// overrides (U+202A–U+202E), the isolates (U+2066–U+2069) and the marks
/// (U+200E, U+200F, U+061C). Printed as they are, they reorder what a
/// terminal shows after them: `evil\u{202e}txt.sh` reads as `evilhs.txt`.
/// See: <https://trojansource.codes>
pub fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

fn escape_with(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let bad = |c: char| (c.is_control() && !(keep_lines && c == '\n')) || is_bidi(c);
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    use fmt::Write as _;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{1b}' => out.push_str("\\e"),
        other => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(other));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn reads_whole_files_within_the_limit_in_any_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for len in [0_u32, 1, 8191, 8192, 8193, 20_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            fs::write(&path, &bytes).unwrap();
            assert_eq!(read(&path, Kind::Sidecar).unwrap(), bytes, "{len}");
        }
    }

    #[test]
    fn refuses_special_files_oversize_files_and_links_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read(&fifo, Kind::Brief),
            Err(Error::NotRegular { what: "a FIFO", .. })
        ));
        assert!(matches!(
            read(Path::new("/dev/zero"), Kind::Brief),
            Err(Error::NotRegular { .. })
        ));
        let big = dir.path().join("big");
        let file = File::create(&big).unwrap();
        file.set_len(Kind::Sidecar.limit() + 1).unwrap();
        let err = read(&big, Kind::Sidecar).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is 1048577 bytes, over the 1048576-byte limit for a status sidecar",
                big.display()
            )
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert!(read_no_follow(&link, Kind::Events).is_err());
        assert!(read(&link, Kind::Events).is_ok());
        assert!(
            read_no_follow_if_exists(&dir.path().join("none"), Kind::Events)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn tails_read_only_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, b"0123456789").unwrap();
        assert_eq!(
            read_tail(&path, 4, Follow::No).unwrap(),
            (b"6789".to_vec(), true)
        );
        assert_eq!(
            read_tail(&path, 40, Follow::No).unwrap(),
            (b"0123456789".to_vec(), false)
        );
    }

    /// Every line of `bytes` as `(kept bytes, whole length)`, and the most
    /// the reader held at any point.
    fn capped_lines(bytes: &[u8], cap: usize, chunk: usize) -> (Vec<(Vec<u8>, u64)>, usize) {
        let mut reader = LineReader::with_chunk(bytes, cap, chunk);
        let mut lines = Vec::new();
        let mut most = reader.held();
        while let Some(line) = reader.next_line().unwrap() {
            lines.push((line.bytes.to_vec(), line.len));
            most = most.max(reader.held());
        }
        (lines, most)
    }

    fn unbounded_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
        io::BufRead::split(bytes, b'\n')
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_while_it_streams_past() {
        // 20 MB of one line from a reader that never holds it: the line
        // reader keeps 1 KiB of it and then the next line.
        let huge = io::repeat(b'x').take(20_000_000).chain(&b"\nafter\n"[..]);
        let mut reader = LineReader::new(huge, 1024);
        let first = reader.next_line().unwrap().unwrap();
        assert_eq!((first.bytes.len(), first.len), (1024, 20_000_000));
        assert!(first.is_cut());
        assert!(reader.held() <= LINE_CHUNK + 1024);
        let second = reader.next_line().unwrap().unwrap();
        assert_eq!((second.bytes, second.is_cut()), (&b"after"[..], false));
        assert!(reader.next_line().unwrap().is_none());
        assert_eq!(reader.bytes_read(), 20_000_007);
    }

    #[test]
    fn lines_end_at_newlines_and_the_last_needs_none() {
        for (input, expected) in [
            (&b""[..], vec![]),
            (b"\n", vec![b"".to_vec()]),
            (
                b"a\r\nbb\n\nc",
                vec![b"a\r".to_vec(), b"bb".to_vec(), vec![], b"c".to_vec()],
            ),
        ] {
            let (lines, _) = capped_lines(input, 8, 2);
            let kept: Vec<Vec<u8>> = lines.into_iter().map(|(bytes, _)| bytes).collect();
            assert_eq!(kept, expected);
        }
    }

    #[test]
    fn cuts_keep_whole_characters_and_clips_mark_themselves() {
        assert_eq!(trim_split_char("aé".as_bytes().split_at(2).0), b"a");
        assert_eq!(trim_split_char(b"a\xffb"), b"a\xffb");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("aéb", 2), "a…");
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config())]

        #[test]
        fn proptest_line_reader_memory_stays_within_its_cap(
            input in crate::fuzz::bytes(),
            cap in 1_usize..48,
            chunk in 1_usize..24,
        ) {
            let (lines, most) = capped_lines(&input, cap, chunk);
            proptest::prop_assert!(most <= chunk + cap, "held {most}");
            let reference = unbounded_lines(&input);
            proptest::prop_assert_eq!(lines.len(), reference.len());
            for ((kept, len), whole) in lines.iter().zip(&reference) {
                proptest::prop_assert_eq!(*len, whole.len() as u64);
                proptest::prop_assert_eq!(kept.as_slice(), &whole[..whole.len().min(cap)]);
            }
        }

        #[test]
        fn proptest_line_reader_matches_the_unbounded_reader_under_the_cap(
            input in crate::fuzz::bytes(),
            chunk in 1_usize..24,
        ) {
            let reference = unbounded_lines(&input);
            let cap = reference.iter().map(Vec::len).max().unwrap_or(0) + 1;
            let (lines, _) = capped_lines(&input, cap, chunk);
            let kept: Vec<Vec<u8>> = lines.into_iter().map(|(bytes, _)| bytes).collect();
            proptest::prop_assert_eq!(kept, reference);
        }
    }

    #[test]
    fn escaping_leaves_one_inert_line() {
        assert!(matches!(escape("plain é"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\u{1b}]0;x\u{7}b\nerror: forged\u{0}\u{9b}"),
            "a\\e]0;x\\u{7}b\\nerror: forged\\u{0}\\u{9b}"
        );
        assert_eq!(escape_keep_lines("a\nb\u{1b}"), "a\nb\\e");
        // Bidirectional formatting characters, each of them; other
        // non-ASCII text stays as it is.
        assert_eq!(
            escape("evil\u{202e}hs.txt \u{2066}x\u{2069} \u{200f}\u{61c}"),
            "evil\\u{202e}hs.txt \\u{2066}x\\u{2069} \\u{200f}\\u{61c}"
        );
        assert!(matches!(escape("שלום 日本 ← →"), Cow::Borrowed(_)));
    }
}
