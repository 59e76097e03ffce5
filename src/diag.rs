//! Diagnostics: the one place that writes messages for people to stderr.
//!
//! Every call writes exactly one line (one `write_all` on the locked stream,
//! so lines from concurrent processes sharing a terminal don't interleave
//! mid-line). The message is escaped with [`fsread::escape`]: values echoed
//! from files, argv or child processes may hold control characters, and no
//! terminal escape sequence or forged second line may reach the terminal.
//!
//! The prefix says what kind of line it is, decided here once:
//!
//! | Function | Prefix | Used for |
//! |---|---|---|
//! | [`error`] | `error: ` | why a command failed; the run's outcome when it exits non-zero |
//! | [`error_chain`] | `error: ` | an `anyhow` error at the top (`main`), causes joined by `: ` |
//! | [`usage_error`] | `error: ` | a command line clap refused, whole: clap's message, its tip, the usage line |
//! | [`warning`] | `warning: ` | something skipped or not recorded; the command still goes on |
//! | [`note`] | `note: ` | advice the user should act on (host notes, native-session workers) |
//! | [`progress`] | `okstra: ` | what the launcher did or is doing (rendered, wrote, recorded, nothing to do) |
//! | [`detail`] | none | one item of a list the next or previous line introduces (report problems) |
//! | [`Program::error`], [`Program::warning`] | `okstra-provider-exec: error: ` … | the provider-exec wrapper, which names itself as the reference wrapper does |
//!
//! Not diagnostics, so not here: stdout (data only), the `okstra dispatch`
//! live board (`dispatch::view`, which redraws lines in place) and the
//! questions `ask` puts to the user on a terminal. `print_stderr` and the
//! `std::io::stderr` entry in `clippy.toml`'s `disallowed-methods` keep
//! everything else coming through here.

use std::fmt::Display;
use std::io::{self, Write};

use crate::fsread;

/// The kind of a line, which picks its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Error,
    Warning,
    Note,
    Progress,
    Bare,
}

impl Level {
    fn prefix(self) -> &'static str {
        match self {
            Level::Error => "error: ",
            Level::Warning => "warning: ",
            Level::Note => "note: ",
            Level::Progress => "okstra: ",
            Level::Bare => "",
        }
    }
}

/// Why a command failed (`error: …`).
pub fn error(message: impl Display) {
    write(&line(None, Level::Error, &message.to_string()));
}

/// Something skipped or not recorded; the command goes on (`warning: …`).
pub fn warning(message: impl Display) {
    write(&line(None, Level::Warning, &message.to_string()));
}

/// Advice the user should act on (`note: …`).
pub fn note(message: impl Display) {
    write(&line(None, Level::Note, &message.to_string()));
}

/// What the launcher did or is doing (`okstra: …`).
pub fn progress(message: impl Display) {
    write(&line(None, Level::Progress, &message.to_string()));
}

/// One item of a list that a neighbouring line introduces, unprefixed
/// (`/pointer: [rule] message` under `error: refusing to render …`).
pub fn detail(message: impl Display) {
    write(&line(None, Level::Bare, &message.to_string()));
}

/// Print an error chain once: `error: outer: cause: root`. Each cause is
/// escaped, so the message stays one line; only the causes `lists_items`
/// picks (errors that list several items one a line: schema violations,
/// template excerpts) keep their line breaks. The caller names them, so this
/// module knows no error type and the provider-exec binary, which shares it,
/// links neither the schema validator nor the template engine.
pub fn error_chain(err: &anyhow::Error, lists_items: impl Fn(&Cause) -> bool) {
    write(&chain_line(err, lists_items));
}

/// One cause of an `anyhow` chain.
pub type Cause = dyn std::error::Error + 'static;

/// A command line clap refused, in clap's own words and whole: the
/// `error: …` line, then every line clap adds (a tip naming the similar
/// flag or subcommand, the accepted values, the usage line, where to read
/// on). The block is one write; each of its lines is escaped, so an argument
/// echoed back cannot reach the terminal as a control sequence.
pub fn usage_error(rendered: &str) {
    write(&usage_block(rendered));
}

fn usage_block(rendered: &str) -> String {
    let mut lines = rendered.trim_end().lines();
    let first = lines.next().unwrap_or_default();
    let mut out = line(
        None,
        Level::Error,
        first.strip_prefix(Level::Error.prefix()).unwrap_or(first),
    );
    for rest in lines {
        out.push_str(&line(None, Level::Bare, rest.trim_end()));
    }
    out
}

/// Report a panic as one `error:` line, never a backtrace: a panic is our
/// bug, not the user's.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        error(format_args!(
            "internal error in okstra: {info}; please report it"
        ));
    }));
}

/// A program that puts its own name before the level, as the reference
/// wrapper's `okstra-<provider>-exec: error: …` lines do.
#[derive(Debug, Clone, Copy)]
pub struct Program(&'static str);

impl Program {
    pub const fn new(name: &'static str) -> Program {
        Program(name)
    }

    /// `<program>: error: …`.
    pub fn error(self, message: impl Display) {
        write(&line(Some(self.0), Level::Error, &message.to_string()));
    }

    /// `<program>: warning: …`.
    pub fn warning(self, message: impl Display) {
        write(&line(Some(self.0), Level::Warning, &message.to_string()));
    }
}

/// The full line, newline included: prefixes, then the escaped message.
fn line(program: Option<&str>, level: Level, message: &str) -> String {
    let escaped = fsread::escape(message);
    let mut out = String::with_capacity(escaped.len() + 40);
    if let Some(program) = program {
        out.push_str(program);
        out.push_str(": ");
    }
    out.push_str(level.prefix());
    out.push_str(&escaped);
    out.push('\n');
    out
}

fn chain_line(err: &anyhow::Error, lists_items: impl Fn(&Cause) -> bool) -> String {
    let mut out = String::from(Level::Error.prefix());
    for (index, cause) in err.chain().enumerate() {
        if index > 0 {
            out.push_str(": ");
        }
        let text = cause.to_string();
        if lists_items(cause) {
            out.push_str(&fsread::escape_keep_lines(&text));
        } else {
            out.push_str(&fsread::escape(&text));
        }
    }
    out.push('\n');
    out
}

/// One write of a whole line. A closed or full stderr leaves nobody to tell,
/// so a failed write is dropped.
#[expect(
    clippy::disallowed_methods,
    reason = "this module is the one writer of diagnostics to stderr"
)]
fn write(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use anyhow::Context as _;

    use super::*;
    use crate::schema::{self, Violation, Violations};

    #[test]
    fn each_level_has_its_prefix() {
        let cases = [
            (Level::Error, "error: no run\n"),
            (Level::Warning, "warning: no run\n"),
            (Level::Note, "note: no run\n"),
            (Level::Progress, "okstra: no run\n"),
            (Level::Bare, "no run\n"),
        ];
        for (level, expected) in cases {
            assert_eq!(line(None, level, "no run"), expected, "{level:?}");
        }
    }

    #[test]
    fn a_program_puts_its_name_before_the_level() {
        let wrapper = Program::new("okstra-provider-exec");
        assert_eq!(
            line(Some(wrapper.0), Level::Error, "cannot write status"),
            "okstra-provider-exec: error: cannot write status\n"
        );
        assert_eq!(
            line(
                Some(wrapper.0),
                Level::Warning,
                "prompt not fully delivered"
            ),
            "okstra-provider-exec: warning: prompt not fully delivered\n"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal_and_a_line_stays_one() {
        let text = line(
            None,
            Level::Warning,
            "left `a\u{1b}[2Jb`\nerror: forged\r\u{7f}\u{9b}",
        );
        assert_eq!(
            text,
            "warning: left `a\\e[2Jb`\\nerror: forged\\r\\u{7f}\\u{9b}\n"
        );
        assert_eq!(text.matches('\n').count(), 1);
        assert!(!text.trim_end_matches('\n').chars().any(char::is_control));
    }

    #[test]
    fn a_usage_error_keeps_every_line_clap_wrote_each_escaped() {
        let rendered = "error: unexpected argument '--formt\u{1b}[2J' found\n\n  \
                        tip: a similar argument exists: '--format'\n\n\
                        Usage: okstra status --format <FORMAT>\n\n\
                        For more information, try '--help'.\n";
        assert_eq!(
            usage_block(rendered),
            "error: unexpected argument '--formt\\e[2J' found\n\n  \
             tip: a similar argument exists: '--format'\n\n\
             Usage: okstra status --format <FORMAT>\n\n\
             For more information, try '--help'.\n"
        );
    }

    #[test]
    fn an_error_chain_is_one_escaped_line() {
        let err = Err::<(), _>(std::io::Error::other("no such\u{1b}[31m file\nx"))
            .context("cannot read `brief.md`")
            .unwrap_err();
        assert_eq!(
            chain_line(&err, |_| false),
            "error: cannot read `brief.md`: no such\\e[31m file\\nx\n"
        );
    }

    #[test]
    fn schema_violations_keep_one_line_each_but_lose_other_controls() {
        let violations = Violations(vec![
            Violation {
                pointer: "/a".into(),
                message: "is not a \u{1b}string".into(),
            },
            Violation {
                pointer: "/b".into(),
                message: "is required".into(),
            },
        ]);
        let err = anyhow::Error::new(schema::Error::Invalid {
            what: "manifest".into(),
            schema: "run-manifest.schema.json".into(),
            violations,
        })
        .context("cannot load the run");
        assert_eq!(
            chain_line(&err, Cause::is::<schema::Error>),
            "error: cannot load the run: manifest breaks `run-manifest.schema.json`:\n\
             /a: is not a \\estring\n/b: is required\n"
        );
    }
}
