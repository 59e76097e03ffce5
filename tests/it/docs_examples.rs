//! Every example in README.md and docs/ pastes and works from the
//! repository root: each `okstra …` line of a `sh` block parses against the
//! real CLI (`okstra __check-args`, as the bundle's contract test does), and
//! every repository path an example names exists. A synopsis line (one with
//! `<placeholder>` or `[optional]` parts) is a description, not an example,
//! and is left to `--help`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::contract::check::{check_args, command_variants};
use crate::support::repo_root;

/// README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo_root().join("README.md")];
    if let Ok(entries) = fs::read_dir(repo_root().join("docs")) {
        let mut pages: Vec<PathBuf> = entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        pages.sort();
        docs.extend(pages);
    }
    docs
}

/// The command lines of `text`'s `sh` blocks with their line numbers,
/// continuations joined.
fn sh_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && matches!(lang.trim(), "sh" | "bash" | "console" | "shell");
            continue;
        }
        if !in_sh || trimmed.starts_with('#') {
            continue;
        }
        let trimmed = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        let (start, mut joined) = pending.take().unwrap_or((number + 1, String::new()));
        if let Some(head) = trimmed.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            pending = Some((start, joined));
        } else {
            joined.push_str(trimmed);
            lines.push((start, joined));
        }
    }
    lines
}

/// The okstra argv a shell line runs (after `okstra` or `cargo run
/// --release --`), its quoted words made single samples and anything after
/// a pipe, `&&`, `;` or a redirection dropped; `None` when it runs no
/// okstra.
fn okstra_part(line: &str) -> Option<String> {
    let mut line = line.to_owned();
    for cut in [" #", " | ", " && ", " || ", "; ", " > ", " 2>", " >> "] {
        if let Some(at) = line.find(cut) {
            line.truncate(at);
        }
    }
    let quoted = regex::Regex::new(r#""[^"]*"|'[^']*'"#).unwrap();
    let line = quoted.replace_all(&line, "sample").into_owned();
    let words: Vec<&str> = line.split_whitespace().collect();
    let start = words
        .iter()
        .position(|w| *w == "okstra")
        .map(|at| at + 1)
        .or_else(|| {
            words
                .windows(4)
                .position(|w| w == ["cargo", "run", "--release", "--"])
                .map(|at| at + 4)
        })?;
    // `okstra` as a word inside another command (`cargo install … okstra`)
    // is not a run of it.
    if words[..start]
        .iter()
        .any(|w| ["install", "which", "man"].contains(w))
    {
        return None;
    }
    Some(words[start..].join(" "))
}

/// The repository paths `line` names that do not exist.
pub fn missing_paths(line: &str) -> Vec<String> {
    const ROOTS: [&str; 7] = [
        "examples/",
        "tests/",
        "benches/",
        "schemas/",
        "docs/",
        "plugin/",
        "prompts/",
    ];
    line.split_whitespace()
        .map(|word| word.trim_matches(|c| matches!(c, '"' | '\'' | ',' | ')' | '(')))
        .map(|word| word.strip_prefix("$PWD/").unwrap_or(word))
        .map(|word| word.split(':').next().unwrap_or(word))
        .filter(|word| ROOTS.iter().any(|root| word.starts_with(root)))
        .filter(|word| !word.contains('<') && !word.contains('*'))
        .filter(|word| !Path::new(&repo_root().join(word)).exists())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_example_in_the_readme_and_docs_parses_and_names_real_files() {
    let run_dir = "examples/report";
    let mut commands = Vec::new();
    let mut problems = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo_root()).unwrap().display().to_string();
        for (number, line) in sh_lines(&text) {
            for path in missing_paths(&line) {
                problems.push(format!("{name}:{number}: `{path}` does not exist"));
            }
            let Some(argv) = okstra_part(&line) else {
                continue;
            };
            // A synopsis (`<run-dir>`, `[--json]`) is no example to paste.
            if argv.contains(['<', '[']) {
                continue;
            }
            seen += 1;
            for variant in command_variants(&argv, run_dir) {
                commands.push((format!("{name}:{number}"), variant));
            }
        }
    }
    problems.extend(check_args(&commands));
    assert!(
        seen >= 10,
        "only {seen} okstra examples found: is the scan broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scan_catches_an_example_that_does_not_parse_or_names_a_missing_file() {
    let text =
        "```sh\nokstra status --no-such-flag\nokstra validate examples/nope \\\n  --json\n```\n";
    let lines = sh_lines(text);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1],
        (3, "okstra validate examples/nope  --json".to_owned())
    );
    assert_eq!(missing_paths(&lines[1].1), ["examples/nope"]);
    let commands: Vec<(String, Vec<String>)> = lines
        .iter()
        .flat_map(|(n, line)| {
            command_variants(&okstra_part(line).unwrap(), "examples/report")
                .into_iter()
                .map(move |argv| (n.to_string(), argv))
        })
        .collect();
    let problems = check_args(&commands);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("--no-such-flag"), "{problems:?}");
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `text`'s headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        } else if !fence && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_link_in_the_readme_and_docs_reaches_a_file_and_heading_that_exist() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut problems = Vec::new();
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo_root()).unwrap().display().to_string();
        for found in link.captures_iter(&text) {
            let target = &found[1];
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            if !path.exists() {
                problems.push(format!("{name}: `{target}`: no file `{}`", path.display()));
                continue;
            }
            if !fragment.is_empty()
                && !anchors(&fs::read_to_string(&path).unwrap_or_default())
                    .iter()
                    .any(|a| a == fragment)
            {
                problems.push(format!("{name}: `{target}`: no heading `#{fragment}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
