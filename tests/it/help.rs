//! The CLI that teaches, through the binary: `okstra --help` opens with the
//! commands a person types and then the plumbing; `-h` says how to start a
//! run; every example in every command's help keeps its lines, parses with
//! the real CLI (`okstra __check-args`) and names only repository paths that
//! exist; and `okstra man [COMMAND]` prints a page for every command, each
//! with EXIT STATUS and ENVIRONMENT, whose SEE ALSO names only pages it can
//! print.

use crate::contract::check::{check_args, command_variants};
use crate::docs_examples::missing_paths;
use std::collections::BTreeSet;

use crate::support::okstra;

/// `okstra args…`'s stdout, which must be a success.
fn stdout_of(args: &[&str]) -> String {
    let output = okstra().args(args).env("COLUMNS", "80").output().unwrap();
    assert!(
        output.status.success(),
        "`okstra {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The names listed under `heading` in a help text, up to the next blank
/// line.
fn listed(help: &str, heading: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != heading)
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Every command path there is, found through the help itself: the top
/// level's two groups, then each command's own `Commands:`.
fn command_paths() -> Vec<Vec<String>> {
    let top = stdout_of(&["--help"]);
    let mut pending: Vec<Vec<String>> = listed(&top, "Start here:")
        .into_iter()
        .chain(listed(&top, "For leads and scripts:"))
        .filter(|name| name != "help")
        .map(|name| vec![name])
        .collect();
    let mut paths = Vec::new();
    while let Some(path) = pending.pop() {
        if path[0] != "provider-exec" {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push("--help");
            for sub in listed(&stdout_of(&args), "Commands:") {
                if sub != "help" {
                    pending.push([path.clone(), vec![sub]].concat());
                }
            }
        }
        paths.push(path);
    }
    paths.sort();
    paths
}

#[test]
fn top_help_opens_with_the_commands_a_person_types_then_the_plumbing() {
    let help = stdout_of(&["--help"]);
    let people = help.find("\nStart here:\n").expect(&help);
    let plumbing = help.find("\nFor leads and scripts:\n").expect(&help);
    let options = help.find("\nOptions:\n").expect(&help);
    assert!(people < plumbing && plumbing < options, "{help}");
    let first = listed(&help, "Start here:");
    for command in [
        "ask", "run", "status", "report", "doctor", "install", "usage",
    ] {
        assert!(first.contains(&command.to_owned()), "{command}: {first:?}");
    }
    let second = listed(&help, "For leads and scripts:");
    for command in [
        "provider-exec",
        "dispatch",
        "await",
        "event",
        "items",
        "converge",
        "coverage",
        "next",
        "submit",
        "hook",
    ] {
        assert!(
            second.contains(&command.to_owned()),
            "{command}: {second:?}"
        );
    }
    assert_eq!(first[0], "ask", "a run is what a person starts with");
    assert!(!help.contains("__"), "a hidden command is listed:\n{help}");
    insta::assert_snapshot!("top_help_groups", &help[..options]);
}

#[test]
fn short_help_shows_how_to_start_a_run() {
    let help = stdout_of(&["-h"]);
    assert!(
        help.contains(
            "Start a run:\n  okstra ask \"Why are reservations oversold?\"\n  okstra ask --render-only --project-root examples/tiny-service \\\n    --task-brief examples/brief.md\n"
        ),
        "{help}"
    );
    // The same groups as --help.
    assert!(help.contains("\nFor leads and scripts:\n"), "{help}");
}

#[test]
fn short_help_fits_a_screen_and_leaves_the_rest_to_long_help() {
    for command in [&[][..], &["ask"][..], &["run"][..]] {
        let short = stdout_of(&[command, &["-h"]].concat());
        let long = stdout_of(&[command, &["--help"]].concat());
        let name = command.join(" ");
        assert!(
            short.lines().count() <= 60,
            "`okstra {name} -h` is {} lines:\n{short}",
            short.lines().count()
        );
        // What a first run needs is there; the rest is in --help, which
        // -h points to.
        for flag in ["--yes", "--task-type", "--project-root", "--task-brief"] {
            assert!(short.contains(flag), "`okstra {name} -h` lacks {flag}");
        }
        assert!(!short.contains("--critic"), "{short}");
        assert!(long.contains("--critic"), "{long}");
        assert!(short.contains("(see more with '--help')"), "{short}");
    }
}

#[test]
fn usage_errors_are_said_whole_in_claps_words() {
    // (args, what clap adds after its first line)
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["completions"],
            &["  <SHELL>", "Usage: okstra completions <SHELL>"],
        ),
        (
            &["complet"],
            &["tip: a similar subcommand exists: 'completions'"],
        ),
        (
            &["completions", "zsch"],
            &["[possible values: bash, elvish, fish, powershell, zsh]"],
        ),
        (
            &["report", "examples/report", "--format", "sarf"],
            &["tip: a similar value exists: 'sarif'"],
        ),
    ];
    for (args, expected) in cases {
        let output = okstra().args(args).output().unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        for line in expected {
            assert!(
                stderr.lines().any(|printed| printed.contains(line)),
                "`okstra {}` lacks {line:?}:\n{stderr}",
                args.join(" ")
            );
        }
        assert!(
            stderr.contains("For more information, try '--help'."),
            "{stderr}"
        );
    }
}

/// The example lines of one help text: each `  okstra …` line with its
/// continuations joined; a continuation must be indented deeper, so a line
/// clap re-wrapped shows up as an example that does not parse.
fn examples(help: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = help.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with("  okstra ") {
            continue;
        }
        let mut joined = line.trim().to_owned();
        while joined.ends_with('\\') {
            joined.pop();
            let next = lines.next().unwrap_or_default();
            assert!(
                next.starts_with("    ") && !next.trim().is_empty(),
                "a continuation lost its line: {joined:?} then {next:?}"
            );
            joined.push_str(next.trim());
        }
        found.push(joined);
    }
    found
}

#[test]
fn every_help_example_parses_and_names_real_files() {
    let mut commands = Vec::new();
    let mut problems = Vec::new();
    let mut helps = vec![(String::new(), "-h"), (String::new(), "--help")];
    for path in command_paths() {
        helps.push((path.join(" "), "--help"));
        helps.push((path.join(" "), "-h"));
    }
    let mut seen = 0;
    for (path, flag) in helps {
        let mut args: Vec<&str> = path.split_whitespace().collect();
        args.push(flag);
        let help = stdout_of(&args);
        let source = format!("okstra {path} {flag}").replace("  ", " ");
        if flag == "--help" && help.contains("Examples:") {
            assert!(
                help.contains("Examples:\n  okstra "),
                "`{source}`: its examples do not start on their own lines:\n{help}"
            );
        }
        for example in examples(&help) {
            seen += 1;
            for missing in missing_paths(&example) {
                problems.push(format!("`{source}`: `{missing}` does not exist"));
            }
            // A run folder of the user's (`.okstra/…`) is none from the
            // repository root: examples use `<run-dir>` or `examples/report`.
            if example.contains(".okstra/") {
                problems.push(format!(
                    "`{source}`: {example:?} names a run folder that is not here"
                ));
            }
            let Some(line) = okstra_argv(&example) else {
                continue;
            };
            for variant in command_variants(&line, "examples/report") {
                commands.push((source.clone(), variant));
            }
        }
    }
    problems.extend(check_args(&commands));
    assert!(
        seen >= 40,
        "only {seen} examples found: is the scan broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What follows `okstra` in an example, quoted words made single samples,
/// anything after a pipe or a redirection dropped.
fn okstra_argv(example: &str) -> Option<String> {
    let quoted = regex::Regex::new(r#""[^"]*"|'[^']*'"#).unwrap();
    let mut line = quoted.replace_all(example, "sample").into_owned();
    for cut in [" | ", " > ", " && "] {
        if let Some(at) = line.find(cut) {
            line.truncate(at);
        }
    }
    let at = line.find("okstra ")?;
    Some(line[at + "okstra ".len()..].trim().to_owned())
}

/// `okstra man args…`: the page with roff's escapes of `-` undone.
fn page(args: &[&str]) -> String {
    stdout_of(&[&["man"], args].concat()).replace("\\-", "-")
}

#[test]
fn every_command_has_a_man_page_with_exit_status_and_environment() {
    let mut pages = vec![(Vec::new(), page(&[]))];
    for path in command_paths() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        pages.push((path.clone(), page(&args)));
    }
    assert!(pages.len() > 20, "only {} pages", pages.len());
    let reference = regex::Regex::new(r"\b(okstra(?:-[a-z_-]+)?)\(1\)").unwrap();
    let mut named = BTreeSet::new();
    for (path, text) in &pages {
        let name = ["okstra".to_owned()]
            .iter()
            .chain(path)
            .cloned()
            .collect::<Vec<_>>()
            .join("-");
        assert!(text.contains(&format!(".TH {name} 1")), "{name}:\n{text}");
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH \"SEE ALSO\""] {
            assert!(text.contains(section), "{name} lacks {section}:\n{text}");
        }
        named.extend(
            reference
                .captures_iter(text)
                .map(|found| found[1].to_owned()),
        );
    }
    // Every page named anywhere can be printed.
    for named in &named {
        let output = okstra().args(["man", named]).output().unwrap();
        assert!(
            output.status.success(),
            "{named}(1) is named, but `okstra man {named}` cannot print: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed = String::from_utf8_lossy(&output.stdout).replace("\\-", "-");
        assert!(
            printed.contains(&format!(".TH {named} 1")),
            "`okstra man {named}` printed another page"
        );
    }
    // The wrapper's page has the wrapper's codes; a command with settings
    // from the environment lists them.
    let exec = &pages
        .iter()
        .find(|(path, _)| path == &["provider-exec"])
        .unwrap()
        .1;
    assert!(exec.contains("idle watchdog"), "{exec}");
    let run = &pages.iter().find(|(path, _)| path == &["run"]).unwrap().1;
    for variable in [
        "OKSTRA_PROVIDER_SLOTS",
        "OKSTRA_DEFAULT_CLAUDE_MODEL",
        "XDG_STATE_HOME",
    ] {
        assert!(run.contains(variable), "okstra-run(1) lacks {variable}");
    }
    let top = &pages[0].1;
    assert!(top.contains(".SH EXAMPLES\n.nf\n"), "{top}");
}

#[test]
fn man_names_an_unknown_command_and_the_pages_there_are() {
    let output = okstra().args(["man", "frobnicate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: no manual page for `frobnicate`; "),
        "{stderr}"
    );
    assert!(stderr.contains("converge plan"), "{stderr}");
    // A page is found by its name too, and as the list above names it (one
    // word holding a space: `okstra man 'converge plan'`).
    assert_eq!(page(&["okstra-converge-plan"]), page(&["converge", "plan"]));
    assert_eq!(page(&["converge plan"]), page(&["converge", "plan"]));
}
