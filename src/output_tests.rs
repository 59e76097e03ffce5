//! No file but the printer and the entry point reaches stdout.

use std::path::{Path, PathBuf};

/// The printer itself and the entry point (clap prints help there).
const PRINTERS: &[&str] = &["src/main.rs", "src/output.rs"];

/// Files that reach stdout themselves, and why. The list only shrinks: an
/// entry that no longer reaches stdout fails the test until it is removed
/// here. Both left are the transparent wrapper, which stays: what it
/// writes is the provider CLI's stream, passed through byte for byte, not
/// an answer of okstra's for the printer to shape.
const NOT_YET: &[(&str, &str)] = &[
    (
        "src/provider_exec/mod.rs",
        "the transparent wrapper (its own binary soon): the CLI's output is its stdout",
    ),
    (
        "src/provider_exec/copy.rs",
        "the wrapper copies the CLI's stream to its stdout, by contract",
    ),
];

/// What reaches stdout in Rust source: the print macros (not their
/// `eprint` cousins) and the handle itself.
fn reaches_stdout(line: &str) -> bool {
    let code = line.trim_start();
    if code.starts_with("//") {
        return false;
    }
    // The printer's own handle is the way to stdout.
    let code = &code.replace("crate::output::stdout()", "");
    if code.contains("stdout()") || code.contains("io::stdout") {
        return true;
    }
    ["print!", "println!"].iter().any(|name| {
        code.match_indices(name).any(|(at, _)| {
            !code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn only_the_printer_and_the_entry_point_write_to_stdout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut writers = Vec::new();
    for path in &files {
        let name = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // This test names what it looks for.
        if PRINTERS.contains(&name.as_str()) || name == "src/output_tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        if let Some((number, line)) = text
            .lines()
            .enumerate()
            .find(|(_, line)| reaches_stdout(line))
        {
            writers.push((name, format!("{}: {}", number + 1, line.trim())));
        }
    }
    let unexpected: Vec<_> = writers
        .iter()
        .filter(|(name, _)| !NOT_YET.iter().any(|(allowed, _)| allowed == name))
        .collect();
    assert!(
        unexpected.is_empty(),
        "print through `crate::output`, not from here: {unexpected:#?}"
    );
    let stale: Vec<_> = NOT_YET
        .iter()
        .filter(|(allowed, _)| !writers.iter().any(|(name, _)| name == allowed))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer writes to stdout: remove from `NOT_YET`: {stale:?}"
    );
}

#[test]
fn the_search_sees_the_macros_and_the_handle_but_not_stderr_or_comments() {
    assert!(reaches_stdout("    println!(\"x\");"));
    assert!(reaches_stdout("print!(\"{x}\")"));
    assert!(reaches_stdout("let out = std::io::stdout().lock();"));
    assert!(reaches_stdout("let out = io::stdout;"));
    assert!(!reaches_stdout("eprintln!(\"x\");"));
    assert!(!reaches_stdout("eprint!(\"x\");"));
    assert!(!reaches_stdout("/// writes to `stdout()`"));
    assert!(!reaches_stdout("let out = crate::output::json_line(&x);"));
    assert!(!reaches_stdout("let out = crate::output::stdout();"));
    assert!(reaches_stdout(
        "let out = crate::output::stdout(); io::stdout()"
    ));
}

#[test]
fn a_struct_through_sorted_prints_the_bytes_of_its_json_map() {
    #[derive(serde::Serialize)]
    struct Inner {
        zeta: u8,
        alpha: u8,
    }
    #[derive(serde::Serialize)]
    struct Outer {
        #[serde(serialize_with = "super::sorted")]
        inner: Inner,
        plain: u8,
    }
    let outer = Outer {
        inner: Inner { zeta: 1, alpha: 2 },
        plain: 3,
    };
    let map = serde_json::json!({"plain": 3, "inner": {"zeta": 1, "alpha": 2}});
    assert_eq!(
        serde_json::to_string(&outer).unwrap(),
        serde_json::to_string(&map).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&outer).unwrap(),
        r#"{"inner":{"alpha":2,"zeta":1},"plain":3}"#
    );
}
