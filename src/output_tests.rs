//! No file but the entry point writes a command's answer to stdout, and
//! every `--json` answer names a schema that says what it holds.

use std::path::{Path, PathBuf};

use super::{Answer, Reply, Text};

/// The entry point: it writes every command's answer (and clap prints
/// help there).
const PRINTERS: &[&str] = &["src/main.rs"];

/// Files that reach stdout themselves, and why. The list only shrinks: an
/// entry that no longer reaches stdout fails the test until it is removed
/// here. What is left streams by design: the handle a streaming command
/// takes (`okstra status --watch`), and the transparent wrapper, whose
/// stdout is the provider CLI's stream passed through byte for byte, not
/// an answer of okstra's.
const NOT_YET: &[(&str, &str)] = &[
    (
        "src/output.rs",
        "`stream()`: the handle of a command that writes its answer frame by frame",
    ),
    (
        "src/provider_exec/mod.rs",
        "the transparent wrapper: the CLI's output is its stdout",
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
    let code = &code.replace("crate::output::stream()", "");
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
    assert!(!reaches_stdout("let out = crate::output::stream();"));
    assert!(reaches_stdout(
        "let out = crate::output::stream(); io::stdout()"
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

/// Every `const SCHEMA: &'static str = "…";` in `src/`, with the
/// `VERSION` written beside it (`None` for an answer that carries its
/// own), and where.
fn declared_answers() -> Vec<(String, String, Option<u64>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim().strip_prefix("const SCHEMA: &'static str = \"") else {
                continue;
            };
            let schema = rest.trim_end_matches("\";").to_owned();
            let version = lines.get(at + 1).and_then(|next| {
                next.trim()
                    .strip_prefix("const VERSION: Option<u32> = Some(")
                    .and_then(|n| n.trim_end_matches(");").parse().ok())
            });
            let place = format!("{}:{}", path.display(), at + 1);
            found.push((place, schema, version));
        }
    }
    found
}

#[test]
fn every_answer_names_an_embedded_schema_of_its_version() {
    let answers = declared_answers();
    assert!(answers.len() >= 20, "{answers:#?}");
    for (place, schema, version) in &answers {
        let text = crate::schema::text(schema).unwrap_or_else(|err| panic!("{place}: {err}"));
        let document: serde_json::Value = serde_json::from_str(text).unwrap();
        // Compiles, and accepts nothing that is not an object.
        assert!(
            crate::schema::violations(schema, &serde_json::json!([]))
                .is_ok_and(|v| !v.0.is_empty()),
            "{place}: `{schema}`"
        );
        let declared = document.pointer("/properties/schemaVersion/const");
        match version {
            // Written by the printer: the schema requires that version.
            Some(version) => {
                assert_eq!(declared, Some(&serde_json::json!(version)), "{place}");
                assert!(
                    document["required"]
                        .as_array()
                        .is_some_and(|r| r.contains(&serde_json::json!("schemaVersion"))),
                    "{place}: `{schema}` must require `schemaVersion`"
                );
            }
            // Carried by the answer itself, or versioned with the report
            // (a run's `usageSummary`).
            None => assert!(
                declared.is_some() || schema == "usage-answer.schema.json",
                "{place}: `{schema}` names no `schemaVersion`"
            ),
        }
    }
}

#[test]
fn every_answer_schema_is_some_answers() {
    let named: Vec<String> = declared_answers().into_iter().map(|(_, s, _)| s).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with("-answer.schema.json") {
            assert!(named.contains(&name), "`{name}` is no answer's schema");
        }
    }
}

/// An answer that breaks its schema: `okstra cancel`'s without `resume`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Broken {
    run_dir: String,
    driver: Option<i32>,
    stopped: Vec<String>,
}

impl Text for Broken {
    fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(out, "{}", self.run_dir)
    }
}

impl Answer for Broken {
    const SCHEMA: &'static str = "cancel-answer.schema.json";
    const VERSION: Option<u32> = Some(1);
}

#[test]
fn a_json_answer_leads_with_its_version_and_is_checked_against_its_schema() {
    let broken = Broken {
        run_dir: "/r".into(),
        driver: None,
        stopped: Vec::new(),
    };
    let reply = Reply::answer(&broken, true).unwrap();
    let text = String::from_utf8(reply.stdout.clone()).unwrap();
    assert!(
        text.starts_with(r#"{"schemaVersion":1,"runDir":"/r""#),
        "{text}"
    );
    assert!(text.ends_with('\n'));
    assert_eq!(reply.schema, Some("cancel-answer.schema.json"));
    let refused = super::check_answer(&reply.stdout, reply.schema.unwrap()).unwrap_err();
    assert!(format!("{refused:#}").contains("resume"), "{refused:#}");
    // What the entry point writes goes through the same check.
    let Err(refused) = reply.into_parts() else {
        panic!("a broken answer passed");
    };
    assert!(format!("{refused:#}").contains("resume"), "{refused:#}");
    // The text form names no schema and is not checked.
    let reply = Reply::answer(&broken, false).unwrap();
    assert_eq!(reply.schema, None);
    let (bytes, _) = reply.into_parts().unwrap();
    assert_eq!(bytes, b"/r\n");
    // Pretty, the same document.
    let reply = Reply::pretty(&broken, true).unwrap();
    let pretty: serde_json::Value = serde_json::from_slice(&reply.stdout).unwrap();
    assert_eq!(pretty["schemaVersion"], 1);
}
