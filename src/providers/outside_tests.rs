//! No production code outside this folder names a provider CLI: adding one
//! is its file here and its catalog line (docs/contributing.md, "Adding a
//! provider"). This reads every `.rs` file under `src/` outside
//! `src/providers/`, leaves out comments and test code (`#[cfg(test)]`
//! items and the files they declare), and looks for the CLIs' names as
//! whole words of identifiers and strings (`kimi_session`, `"--claude-model"`,
//! `LegacyKimiCli`).
//!
//! A *lead host* (Claude Code, Codex, Antigravity as the program that runs
//! the lead session, `okstra install`'s `--host`) is another thing than a
//! provider CLI and keeps its own name: those places are on [`ALLOWED`],
//! each with its reason, and an entry that no longer matches anything
//! fails too, so the list stays short.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Provider;

/// Places that may name a CLI: a file (relative to the crate), and the
/// lines of it that may (those holding one of `lines`; every line when
/// empty).
struct Allowed {
    file: &'static str,
    lines: &'static [&'static str],
    /// Why: one line.
    why: &'static str,
}

const ALLOWED: &[Allowed] = &[
    Allowed {
        file: "src/vocab/host.rs",
        lines: &[],
        why: "the install hosts (`okstra install --host`), not provider CLIs",
    },
    Allowed {
        file: "src/lead_runtime.rs",
        lines: &[],
        why: "the lead hosts, their capabilities and the markers their sessions set",
    },
    Allowed {
        file: "src/install/",
        lines: &[],
        why: "writes okstra's skills, hooks and plugins into each lead host's own folders",
    },
    Allowed {
        file: "src/launch.rs",
        lines: &[],
        why: "starts the lead host's interactive session with its own hook flags",
    },
    Allowed {
        file: "src/usage/session.rs",
        lines: &[],
        why: "reads the Claude Code host's session transcripts (the lead's and its native workers')",
    },
    Allowed {
        file: "src/usage/ledger.rs",
        lines: &[
            "claude-code",
            "CLAUDE_CODE_SESSION_ID",
            "Claude projects",
            "\"claude\",",
        ],
        why: "the lead's usage from the Claude Code host's session",
    },
    Allowed {
        file: "src/usage/mod.rs",
        lines: &["ClaudeJsonl", "\"kimi-session\""],
        why: "wire words of usage records: records already written hold them",
    },
    Allowed {
        file: "src/lead/next.rs",
        lines: &["ClaudeCode", "CLAUDE_CODE_SESSION_ID"],
        why: "records the Claude Code host's session id",
    },
    Allowed {
        file: "src/dispatch/native.rs",
        lines: &["ClaudeCode"],
        why: "native workers' transcripts exist under the Claude Code host only",
    },
    Allowed {
        file: "src/lifecycle/event.rs",
        lines: &["Claude Code session"],
        why: "the Claude Code host's session id",
    },
    Allowed {
        file: "src/settings.rs",
        lines: &["LeadRuntime::ClaudeCode"],
        why: "the default lead host",
    },
    Allowed {
        file: "src/main.rs",
        lines: &["Claude Code unless"],
        why: "the default lead host, in the bare command's words",
    },
    Allowed {
        file: "src/catalog.rs",
        lines: &["CODEX_SANDBOX"],
        why: "a Codex host's sandbox description, passed to every CLI",
    },
    Allowed {
        file: "src/cli.rs",
        lines: &[
            "pub claude_code:",
            "pub codex:",
            "pub antigravity:",
            "\"claude_code\"",
        ],
        why: "`okstra install`'s host switches",
    },
    Allowed {
        file: "src/cli_docs.rs",
        lines: &[
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "Claude Code's folder",
            "Codex's folder",
        ],
        why: "the lead hosts' folders `okstra install` and `okstra usage` read",
    },
    Allowed {
        file: "src/cli_examples.rs",
        lines: &[],
        why: "help examples: real command lines, parsed by the real CLI in tests",
    },
];

/// The names searched for: each CLI's word and binary, and the names the
/// CLIs' other programs go by.
fn names() -> BTreeSet<String> {
    Provider::ALL
        .iter()
        .flat_map(|provider| [provider.as_str(), provider.binary()])
        .chain(["gemini", "vibe"])
        .map(str::to_owned)
        .collect()
}

#[test]
fn no_code_outside_providers_names_a_provider_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = rust_files(&root.join("src"));
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|file| {
            let relative = file
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (relative, std::fs::read_to_string(file).unwrap())
        })
        .collect();
    let lexed: Vec<(String, Vec<Line>)> = sources
        .iter()
        .map(|(path, text)| (path.clone(), lex(text)))
        .collect();
    let tests = test_files(&lexed);
    let names = names();
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for (path, lines) in &lexed {
        if path.starts_with("src/providers/") || tests.contains(path) {
            continue;
        }
        for (number, line) in production_lines(lines) {
            let Some(word) = words(&line.text).find(|word| names.contains(word)) else {
                continue;
            };
            let allowed = ALLOWED.iter().position(|allowed| {
                path.starts_with(allowed.file)
                    && (allowed.lines.is_empty()
                        || allowed.lines.iter().any(|part| line.text.contains(part)))
            });
            match allowed {
                Some(index) => used[index] = true,
                None => found.push(format!("{path}:{number}: `{word}` in {}", line.text.trim())),
            }
        }
    }
    assert!(
        found.is_empty(),
        "production code outside src/providers/ names a provider CLI; move the knowledge into \
         the CLI's descriptor (or, for a lead host, add it to ALLOWED with why):\n{}",
        found.join("\n")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(allowed, _)| format!("{} ({})", allowed.file, allowed.why))
        .collect();
    assert!(
        stale.is_empty(),
        "ALLOWED entries that match nothing:\n{}",
        stale.join("\n")
    );
}

/// The checks' own pieces, on text made up here.
#[test]
fn words_comments_and_test_items_are_told_apart() {
    let split: Vec<String> =
        words("LegacyKimiCli kimi_session \"--claude-model\" CLAUDECODE").collect();
    assert_eq!(
        split,
        [
            "legacy",
            "kimi",
            "cli",
            "kimi",
            "session",
            "claude",
            "model",
            "claudecode"
        ]
    );
    let text = "fn a() { \"x // y\" } // kimi\n/* grok */ let b = 'c';\n#[cfg(test)]\nmod tests {\n    fn t() { \"}\" }\n}\nfn after() {}\n#[cfg(test)]\n#[path = \"z_tests.rs\"]\nmod z;\n#[cfg(test)]\n#[path = \"../y.rs\"]\nmod y;\n#[cfg(test)]\nmod x;\n";
    let lines = lex(text);
    let kept: Vec<String> = production_lines(&lines)
        .map(|(_, line)| line.text.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(
        kept,
        ["fn a() { \"x // y\" }", "let b = 'c';", "fn after() {}"]
    );
    let tests = test_files(&[("src/a/mod.rs".to_owned(), lines)]);
    assert_eq!(
        tests,
        BTreeSet::from(["src/a/x/mod.rs".to_owned(), "src/a/z_tests.rs".to_owned()])
    );
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// One line of a source file without its comments: `text` holds its code
/// and literals, `code` the same with literals' contents blanked (for
/// counting braces).
struct Line {
    text: String,
    code: String,
}

/// `source` as lines without comments. Knows line and (nested) block
/// comments, strings with escapes, raw strings and char literals (apart
/// from lifetimes).
fn lex(source: &str) -> Vec<Line> {
    let chars: Vec<char> = source.chars().collect();
    let mut lines = vec![Line {
        text: String::new(),
        code: String::new(),
    }];
    let mut i = 0;
    let push = |lines: &mut Vec<Line>, c: char, literal: bool| {
        if c == '\n' {
            lines.push(Line {
                text: String::new(),
                code: String::new(),
            });
            return;
        }
        let line = lines.last_mut().unwrap();
        line.text.push(c);
        line.code.push(if literal { ' ' } else { c });
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let ident = |at: usize| chars[at].is_alphanumeric() || chars[at] == '_';
        let ident_before = i > 0 && ident(i - 1);
        // `r"…"`, `r#"…"#`, and the same after a `b`.
        let raw_start = !ident_before || (chars[i - 1] == 'b' && !(i > 1 && ident(i - 2)));
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        push(&mut lines, '\n', false);
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && raw_start && matches!(next, Some('"' | '#')) && {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            chars.get(i + 1 + hashes) == Some(&'"')
        } {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            for _ in 0..=hashes + 1 {
                push(&mut lines, chars[i], false);
                i += 1;
            }
            while i < chars.len() {
                let closes = chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|c| **c == '#')
                        .count()
                        == hashes;
                if closes {
                    for _ in 0..=hashes {
                        push(&mut lines, chars[i], false);
                        i += 1;
                    }
                    break;
                }
                push(&mut lines, chars[i], true);
                i += 1;
            }
        } else if c == '"' || (c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')))
        {
            // A string or a char literal: its quotes are code, what is
            // between them (escapes included) is literal.
            push(&mut lines, c, false);
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    push(&mut lines, chars[i], true);
                    i += 1;
                }
                if i < chars.len() {
                    push(&mut lines, chars[i], true);
                    i += 1;
                }
            }
            if i < chars.len() {
                push(&mut lines, c, false);
                i += 1;
            }
        } else {
            push(&mut lines, c, false);
            i += 1;
        }
    }
    lines
}

/// Whether `line` is a test-only attribute: `#[cfg(test)]` or
/// `#[cfg(all(test, …))]`.
fn is_test_attribute(line: &Line) -> bool {
    let code = line.code.trim();
    code.starts_with("#[cfg(test)]") || code.starts_with("#[cfg(all(test,")
}

/// The ranges of lines (first, last; 0-based) of the test-only items in
/// `lines`: each `#[cfg(test)]` item with its attributes, to its `;` or
/// its closing brace.
fn test_items(lines: &[Line]) -> Vec<(usize, usize)> {
    let mut items = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !is_test_attribute(&lines[index]) {
            index += 1;
            continue;
        }
        let start = index;
        let mut depth = 0usize;
        let mut nested = 0usize;
        let mut end = lines.len() - 1;
        // The attribute itself holds no item brace; start past it.
        let first = lines[index].code.trim().find(")]").map_or(0, |at| at + 2);
        'item: for (number, line) in lines.iter().enumerate().skip(index) {
            let code = line.code.trim();
            let code = if number == index {
                &code[first..]
            } else {
                code
            };
            if code.starts_with("#[") && depth == 0 {
                continue;
            }
            for c in code.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = number;
                            break 'item;
                        }
                    }
                    '(' | '[' => nested += 1,
                    ')' | ']' => nested = nested.saturating_sub(1),
                    ';' if depth == 0 && nested == 0 => {
                        end = number;
                        break 'item;
                    }
                    _ => {}
                }
            }
        }
        items.push((start, end));
        index = end + 1;
    }
    items
}

/// The lines of `lines` outside test-only items, numbered from 1.
fn production_lines(lines: &[Line]) -> impl Iterator<Item = (usize, &Line)> {
    let items = test_items(lines);
    lines
        .iter()
        .enumerate()
        .filter(move |(index, _)| {
            !items
                .iter()
                .any(|(first, last)| first <= index && index <= last)
        })
        .map(|(index, line)| (index + 1, line))
}

/// The files that test-only `mod name;` items declare (and, in turn, every
/// file those declare), by path relative to the crate.
fn test_files(files: &[(String, Vec<Line>)]) -> BTreeSet<String> {
    let mut tests = BTreeSet::new();
    loop {
        let before = tests.len();
        for (path, lines) in files {
            let whole = tests.contains(path);
            let items = if whole {
                vec![(0, lines.len().saturating_sub(1))]
            } else {
                test_items(lines)
            };
            for (first, last) in items {
                // `Some(None)`: a `#[path]` through `..`, another target's
                // file (the wrapper binary includes okstra's own modules,
                // some only for its tests): the next `mod` is not followed.
                let mut attribute_path: Option<Option<String>> = None;
                for line in &lines[first..=last] {
                    let text = line.text.trim();
                    if let Some(given) = text
                        .strip_prefix("#[path = \"")
                        .and_then(|rest| rest.strip_suffix("\"]"))
                    {
                        attribute_path = Some((!given.contains("..")).then(|| given.to_owned()));
                    }
                    let declared = text
                        .trim_start_matches("pub ")
                        .strip_prefix("mod ")
                        .and_then(|rest| rest.strip_suffix(';'));
                    if let Some(name) = declared {
                        let attribute = attribute_path.take();
                        if attribute != Some(None) {
                            tests.insert(declared_file(path, name, attribute.flatten()));
                        }
                    }
                }
            }
        }
        if tests.len() == before {
            return tests;
        }
    }
}

/// The file `mod name;` in the file at `path` names, `#[path]` first.
fn declared_file(path: &str, name: &str, attribute_path: Option<String>) -> String {
    let file = Path::new(path);
    let folder = file.parent().unwrap_or(Path::new(""));
    if let Some(given) = attribute_path {
        return folder.join(given).to_string_lossy().into_owned();
    }
    let owner = file
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("");
    let folder = if matches!(owner, "mod" | "main" | "lib") {
        folder.to_path_buf()
    } else {
        folder.join(owner)
    };
    let flat = folder.join(format!("{name}.rs"));
    if Path::new(env!("CARGO_MANIFEST_DIR")).join(&flat).exists() {
        flat.to_string_lossy().into_owned()
    } else {
        folder
            .join(name)
            .join("mod.rs")
            .to_string_lossy()
            .into_owned()
    }
}

/// The words of `text`, lower case: its runs of letters and digits, split
/// again where a lower-case letter or digit meets a capital (`KimiSession`
/// → `kimi`, `session`).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|run| !run.is_empty())
        .flat_map(|run| {
            let mut parts = vec![String::new()];
            let mut previous: Option<char> = None;
            for c in run.chars() {
                if c.is_ascii_uppercase()
                    && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                {
                    parts.push(String::new());
                }
                parts.last_mut().unwrap().push(c.to_ascii_lowercase());
                previous = Some(c);
            }
            parts
        })
}
