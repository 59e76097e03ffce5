//! The command line described for people, shells and `man`, generated from
//! the clap definition in `cli` so it can never drift from the real flags:
//! the top-level help grouped by who types each command, `okstra
//! completions <shell>`, and `okstra man [COMMAND]` (one page per command,
//! with EXIT STATUS from `exit` and ENVIRONMENT from the variables table
//! below and the flags' own `env`). Also the hidden `okstra __check-args`,
//! which parses command lines against that same definition without running
//! them (the bundle's contract test and the help examples' test use it).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;

use anyhow::{Context, Result, bail};
use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};
use clap_complete::Shell;
use roff::{Roff, bold, roman};

use crate::cli::{Cli, ManArgs};
use crate::exit::ExitStatus;
use crate::output::Reply;

/// The commands a person types, in the order `okstra --help` lists them.
const FOR_PEOPLE: &[&str] = &[
    "ask",
    "run",
    "status",
    "cancel",
    "report",
    "land",
    "cleanup",
    "usage",
    "doctor",
    "install",
    "completions",
    "man",
    "help",
];

/// What a lead, a hook or a CI script calls, in the order `okstra --help`
/// lists them. A visible command in neither list is still shown (here, last)
/// and fails `every_command_is_in_one_help_group`.
const FOR_LEADS_AND_SCRIPTS: &[&str] = &[
    "validate",
    "gate",
    "publish",
    "next",
    "submit",
    "hook",
    "dispatch",
    "await",
    "event",
    "reap",
    "items",
    "converge",
    "coverage",
    "provider-exec",
    "schema",
];

/// okstra's command line: the derived definition, its top-level help
/// opening with the commands a person types, then the plumbing.
pub fn command() -> clap::Command {
    let mut command = shorten(Cli::command());
    for name in ["ask", "run"] {
        command = command.mut_subcommand(name, shorten);
    }
    command.build();
    let template = top_template(&command, help_width(), Listing::Full);
    command.help_template(template)
}

/// How the top-level help lists the commands for leads and scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// One line each with its summary (`--help`).
    Full,
    /// Their names on a few lines (`-h`, which a newcomer reads first).
    Names,
}

/// The flags `-h` shows for the launcher, `okstra ask` and `okstra run`:
/// what a first run needs. `--help` shows all of them (some forty).
const SHORT_HELP_FLAGS: &[&str] = &[
    "help",
    "version",
    "question",
    "run_dir",
    "lead",
    "render_only",
    "yes",
    "task_type",
    "workers",
    "project_root",
    "task_brief",
    "fail_on",
];

/// `command` with every flag outside [`SHORT_HELP_FLAGS`] left to `--help`
/// (clap then says `-h` shows less).
fn shorten(command: clap::Command) -> clap::Command {
    command.mut_args(|arg| {
        let keep = SHORT_HELP_FLAGS.contains(&arg.get_id().as_str());
        arg.hide_short_help(!keep)
    })
}

/// Parse `args` (the program name first) against [`command`].
pub fn parse(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut command = command();
    if is_top_short_help(&command, &args) {
        let template = top_template(&command, help_width(), Listing::Names);
        command = command.help_template(template);
    }
    let matches = command.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut command))
}

/// Whether `args` ask for okstra's own short help: `-h`, and no word that
/// names a subcommand (whose own help is asked for then).
fn is_top_short_help(command: &clap::Command, args: &[OsString]) -> bool {
    let words = || args.iter().skip(1).filter_map(|arg| arg.to_str());
    words().any(|word| word == "-h")
        && !words().any(|word| word == "--help" || command.find_subcommand(word).is_some())
}

/// The width clap wraps help at: the terminal's (or `COLUMNS`), at most the
/// `max_term_width` set on `Cli`, 100 when there is no terminal.
fn help_width() -> usize {
    const MAX: usize = 100;
    terminal_size::terminal_size()
        .map(|(width, _)| usize::from(width.0))
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .map_or(MAX, |width: usize| width.min(MAX))
}

/// The two groups of visible subcommands, in listing order: for people, and
/// for leads and scripts (with any command in neither list last).
fn groups(command: &clap::Command) -> [Vec<&clap::Command>; 2] {
    let visible: Vec<&clap::Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .collect();
    let pick = |names: &[&str]| -> Vec<&clap::Command> {
        names
            .iter()
            .filter_map(|name| visible.iter().find(|sub| sub.get_name() == *name).copied())
            .collect()
    };
    let people = pick(FOR_PEOPLE);
    let mut plumbing = pick(FOR_LEADS_AND_SCRIPTS);
    plumbing.extend(visible.iter().copied().filter(|sub| {
        !FOR_PEOPLE.contains(&sub.get_name()) && !FOR_LEADS_AND_SCRIPTS.contains(&sub.get_name())
    }));
    [people, plumbing]
}

/// A command's one-line summary: its about, whitespace collapsed.
fn summary(command: &clap::Command) -> String {
    let about = command
        .get_about()
        .map(ToString::to_string)
        .unwrap_or_default();
    let words: Vec<&str> = about.split_whitespace().collect();
    words.join(" ").trim_end_matches('.').to_owned()
}

/// The top-level help template: clap's default with the subcommands listed
/// in two groups instead of one, and every flag under `Options:`.
fn top_template(command: &clap::Command, width: usize, listing: Listing) -> String {
    let styles = command.get_styles();
    let header = styles.get_header();
    let literal = styles.get_literal();
    let [people, plumbing] = groups(command);
    let name_width = people
        .iter()
        .chain(&plumbing)
        .map(|sub| sub.get_name().len())
        .max()
        .unwrap_or(0);
    let mut text = String::from("{before-help}{about-with-newline}\n{usage-heading} {usage}\n");
    for (heading, subs) in [
        ("Start here", &people),
        ("For leads and scripts", &plumbing),
    ] {
        let _ = write!(text, "\n{header}{heading}:{header:#}\n");
        if listing == Listing::Names && heading != "Start here" {
            let names: Vec<&str> = subs.iter().map(|sub| sub.get_name()).collect();
            for line in wrap(&names.join(", "), width.saturating_sub(2).max(20)) {
                let _ = writeln!(text, "  {line}");
            }
            continue;
        }
        for sub in subs {
            let name = sub.get_name();
            let indent = 2 + name_width + 2;
            let lines = wrap(&summary(sub), width.saturating_sub(indent).max(20));
            let pad = " ".repeat(name_width - name.len());
            let _ = writeln!(
                text,
                "  {literal}{name}{literal:#}{pad}  {}",
                lines.join(&format!("\n{}", " ".repeat(indent)))
            );
        }
    }
    let _ = write!(
        text,
        "\n{header}Options:{header:#}\n{{options}}{{after-help}}"
    );
    text
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("starts with one line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// Print the completion script for `shell` on stdout.
pub fn completions_command(shell: Shell) -> Reply {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "okstra", &mut script);
    Reply::document(script)
}

/// Print okstra's manual page, or one command's, on stdout (roff). An
/// unknown command is bad input: one line naming it and the pages there
/// are.
pub fn man_command(args: &ManArgs) -> Result<Reply> {
    let root = man_root();
    let Some(path) = find_page(&root, &args.command) else {
        bail!(
            "no manual page for `{}`; there is okstra's own (no argument) and one for each of: {}",
            args.command.join(" "),
            page_paths(&root)
                .iter()
                .filter(|path| !path.is_empty())
                .map(|path| path.join(" "))
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let page = render_page(&root, &path).context("cannot render the man page")?;
    Ok(Reply::document(page.into_bytes()))
}

/// The command the pages are made from: built (so each subcommand knows
/// its full name), without clap's `help` subcommand, which has no page.
fn man_root() -> clap::Command {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    root
}

/// Every page there is, as command paths: `[]` for okstra's own, then each
/// visible subcommand's, depth first.
fn page_paths(root: &clap::Command) -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, prefix: &[String], into: &mut Vec<Vec<String>>) {
        into.push(prefix.to_vec());
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            walk(sub, &path, into);
        }
    }
    let mut pages = Vec::new();
    walk(root, &[], &mut pages);
    pages
}

/// The page `words` name: a command path as typed (`converge plan`), or as
/// the page is named (`converge-plan`, `okstra-converge-plan`). `None` when
/// no visible command has that name.
fn find_page(root: &clap::Command, words: &[String]) -> Option<Vec<String>> {
    fn walk(command: &clap::Command, rest: &str) -> Option<Vec<String>> {
        command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .find_map(|sub| {
                let name = sub.get_name();
                if rest == name {
                    return Some(vec![name.to_owned()]);
                }
                let deeper = rest.strip_prefix(name)?.strip_prefix('-')?;
                let mut path = vec![name.to_owned()];
                path.extend(walk(sub, deeper)?);
                Some(path)
            })
    }
    // `okstra man 'converge plan'` is one word holding a space: the list
    // of pages names them that way.
    let joined = words
        .iter()
        .flat_map(|word| word.split_whitespace())
        .collect::<Vec<_>>()
        .join("-");
    if joined.is_empty() || joined == "okstra" {
        return Some(Vec::new());
    }
    walk(root, joined.strip_prefix("okstra-").unwrap_or(&joined))
}

/// The subcommand of `root` at `path`.
fn descend<'a>(root: &'a clap::Command, path: &[String]) -> &'a clap::Command {
    path.iter().fold(root, |command, name| {
        command
            .find_subcommand(name)
            .expect("the path was found in this same command tree")
    })
}

/// A page's name as `man` knows it: `okstra`, `okstra-converge-plan`.
fn page_name(path: &[String]) -> String {
    std::iter::once("okstra")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-")
}

/// The page of the command at `path`: `clap_mangen`'s sections, then
/// EXAMPLES (kept line for line), EXIT STATUS, ENVIRONMENT and SEE ALSO,
/// then VERSION.
fn render_page(root: &clap::Command, path: &[String]) -> io::Result<String> {
    let command = descend(root, path);
    let examples = command
        .get_after_long_help()
        .or_else(|| command.get_after_help())
        .map(ToString::to_string);
    // The examples get their own section below, unfilled.
    let bare = command.clone().after_help(None).after_long_help(None);
    let mut page = Vec::new();
    clap_mangen::Man::new(bare)
        .source(format!("okstra {}", env!("CARGO_PKG_VERSION")))
        .render(&mut page)?;
    let page = String::from_utf8_lossy(&page).into_owned();

    let mut extra = Roff::new();
    if let Some(examples) = examples {
        extra.control("SH", ["EXAMPLES"]);
        extra.control("nf", []);
        for line in examples.lines().filter(|line| *line != "Examples:") {
            extra.text([roman(line)]);
        }
        extra.control("fi", []);
    }
    extra.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in crate::exit::manual(&path.join(" ")) {
        extra.control("TP", []);
        extra.text([bold(code)]);
        extra.text([roman(meaning)]);
    }
    extra.control("SH", ["ENVIRONMENT"]);
    let variables = environment(command, path);
    if variables.is_empty() {
        extra.text([roman("No variable of its own.")]);
    }
    for (name, meaning) in variables {
        extra.control("TP", []);
        extra.text([bold(name)]);
        extra.text([roman(meaning)]);
    }
    extra.control("SH", ["SEE ALSO"]);
    let see_also = see_also(root, path);
    extra.text([roman(format!(
        "{}. Each prints with okstra man COMMAND (okstra man alone prints okstra(1)).",
        see_also.join(", ")
    ))]);
    // The preamble (an apostrophe string) is already at the page's top.
    let preamble = Roff::new().render();
    let extra = extra.render();
    let extra = extra.strip_prefix(&preamble).unwrap_or(&extra);
    Ok(match page.find(".SH VERSION") {
        Some(at) => format!("{}{extra}{}", &page[..at], &page[at..]),
        None => format!("{page}{extra}"),
    })
}

/// The pages a page points to: okstra's own, the parent's, and the
/// subcommands' (for okstra's own: every command's).
fn see_also(root: &clap::Command, path: &[String]) -> Vec<String> {
    let mut pages = Vec::new();
    if !path.is_empty() {
        pages.push(page_name(&[]));
    }
    if path.len() > 1 {
        pages.push(page_name(&path[..path.len() - 1]));
    }
    for sub in descend(root, path)
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
    {
        let mut child = path.to_vec();
        child.push(sub.get_name().to_owned());
        pages.push(page_name(&child));
    }
    pages.iter().map(|name| format!("{name}(1)")).collect()
}

/// Which commands read a variable.
#[derive(Clone, Copy)]
enum Readers {
    /// Those that take the launcher's flags (bare `okstra`, `ask`, `run`).
    Launch,
    /// Those that run attempts (`ask`, `run`, `dispatch`, `next`).
    Engine,
    /// These command paths.
    Commands(&'static [&'static str]),
    /// Both of the above.
    EngineAnd(&'static [&'static str]),
    /// The launcher's, the engine's and these.
    LaunchEngineAnd(&'static [&'static str]),
}

/// An environment variable okstra reads, other than a flag's `env` (those
/// come from the flags themselves).
struct Variable {
    name: &'static str,
    meaning: &'static str,
    readers: Readers,
}

/// The variables okstra reads itself. (A provider CLI's own variables are
/// the CLI's business; `okstra doctor` names them.)
const VARIABLES: &[Variable] = &[
    Variable {
        name: "OKSTRA_DEFAULT_LEAD_MODEL",
        meaning: "The host-native lead's model when --lead-model is not given.",
        readers: Readers::Launch,
    },
    Variable {
        name: "OKSTRA_DEFAULT_REPORT_WRITER_MODEL",
        meaning: "The report writer's model when --report-writer-model is not given.",
        readers: Readers::Launch,
    },
    Variable {
        name: "OKSTRA_DEFAULT_EXECUTOR",
        meaning: "The executor of an implementation run when --executor is not given.",
        readers: Readers::Launch,
    },
    Variable {
        name: "OKSTRA_PRICES",
        meaning: "A JSON price file laid over the embedded prices [default: $XDG_CONFIG_HOME/okstra/prices.json, else ~/.config/okstra/prices.json, when it exists].",
        readers: Readers::EngineAnd(&["usage"]),
    },
    Variable {
        name: "OKSTRA_DISPATCH_DETACHED",
        meaning: "Set by okstra on the background dispatcher that --detach starts; not for people.",
        readers: Readers::Commands(&["dispatch"]),
    },
    Variable {
        name: "OKSTRA_PASS_ENV",
        meaning: "Variables the CLI also sees (NAME or PREFIX*, comma-separated), beyond the neutral ones and its own provider's.",
        readers: Readers::Commands(&["provider-exec"]),
    },
    Variable {
        name: "OKSTRA_CONTAINMENT",
        meaning: "copies: contain a run's CLIs with copies of the project even where Landlock works (auto, or unset: Landlock when the kernel offers ABI 3 or later). Decided when a run is rendered; see docs/workspaces.md.",
        readers: Readers::LaunchEngineAnd(&["doctor"]),
    },
    Variable {
        name: "OKSTRA_WRITABLE",
        meaning: "Folders (absolute, colon-separated) every CLI confined by Landlock may also write, such as a tool's cache; one that is, holds or lies in the project is refused.",
        readers: Readers::EngineAnd(&["provider-exec"]),
    },
    Variable {
        name: "OKSTRA_CONFINE",
        meaning: "Set to landlock by okstra's dispatcher on each wrapper of a run contained by Landlock: the CLI is started through okstra sandbox-exec, or not at all; not for people.",
        readers: Readers::Commands(&["provider-exec"]),
    },
    Variable {
        name: "OKSTRA_EXEC_ATTEMPT",
        meaning: "The attempt number okstra's engine gives a wrapper, recorded in the status sidecar [default: 1].",
        readers: Readers::Commands(&["provider-exec"]),
    },
    Variable {
        name: "XDG_STATE_HOME",
        meaning: "okstra's per-user state is kept in $XDG_STATE_HOME/okstra [default: ~/.local/state/okstra]: the install manifest, isolated copies of projects, the index of runs.",
        readers: Readers::EngineAnd(&["install", "usage"]),
    },
    Variable {
        name: "XDG_RUNTIME_DIR",
        meaning: "Provider slot locks are kept in $XDG_RUNTIME_DIR/okstra [default: the state folder].",
        readers: Readers::Engine,
    },
    Variable {
        name: "XDG_CACHE_HOME",
        meaning: "okstra doctor's record of each provider CLI, $XDG_CACHE_HOME/okstra/doctor.json [default: ~/.cache/okstra/doctor.json]; the preflight reads it too.",
        readers: Readers::EngineAnd(&["doctor"]),
    },
    Variable {
        name: "HOME",
        meaning: "The default of the XDG folders above, and where the provider CLIs keep their logins (looked at, by name only, by okstra doctor and the preflight).",
        readers: Readers::EngineAnd(&["install", "usage", "doctor"]),
    },
    Variable {
        name: "CLAUDE_CONFIG_DIR",
        meaning: "Claude Code's folder [default: ~/.claude]: its login, its sessions' usage, where the skill is installed.",
        readers: Readers::Commands(&["install", "doctor", "usage"]),
    },
    Variable {
        name: "CODEX_HOME",
        meaning: "Codex's folder [default: ~/.codex]: its login, where the skill is installed.",
        readers: Readers::Commands(&["install", "doctor"]),
    },
    Variable {
        name: "GITHUB_TOKEN",
        meaning: "The token that posts the review (one that may write pull-request reviews).",
        readers: Readers::Commands(&["publish github"]),
    },
    Variable {
        name: "GH_TOKEN",
        meaning: "The token, when GITHUB_TOKEN is not set.",
        readers: Readers::Commands(&["publish github"]),
    },
];

/// The table of variables in its order: the lead model's (the first of
/// [`VARIABLES`]), each provider's worker model default
/// ([`crate::providers::Descriptor::model_env`]), then the rest.
fn table() -> Vec<(String, String, Readers)> {
    let (lead, rest) = VARIABLES.split_at(1);
    let listed = |variable: &Variable| {
        (
            variable.name.to_owned(),
            variable.meaning.to_owned(),
            variable.readers,
        )
    };
    let models = crate::catalog::Provider::ALL.iter().filter_map(|provider| {
        let name = provider.model_env()?;
        let meaning = match provider.descriptor().model_flag {
            Some(flag) => format!("The {provider} workers' model when --{flag} is not given."),
            None => format!("The {provider} workers' model when --worker-model names none."),
        };
        Some((name.to_owned(), meaning, Readers::Launch))
    });
    lead.iter()
        .map(listed)
        .chain(models)
        .chain(rest.iter().map(listed))
        .collect()
}

/// The variables the command at `path` reads: its flags' `env` first, then
/// the table's, each once.
fn environment(command: &clap::Command, path: &[String]) -> Vec<(String, String)> {
    let has_arg = |id: &str| command.get_arguments().any(|arg| arg.get_id() == id);
    let launch = has_arg("render_only");
    let engine = has_arg("max_parallel");
    let joined = path.join(" ");
    let mut variables: Vec<(String, String)> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| {
            let name = arg.get_env()?.to_string_lossy().into_owned();
            let flag = arg.get_long()?;
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            Some((name, format!("The default of --{flag}: {help}")))
        })
        .collect();
    for (variable_name, meaning, readers) in table() {
        let reads = match readers {
            Readers::Launch => launch,
            Readers::Engine => engine,
            Readers::Commands(commands) => commands.contains(&joined.as_str()),
            Readers::EngineAnd(commands) => engine || commands.contains(&joined.as_str()),
            Readers::LaunchEngineAnd(commands) => {
                launch || engine || commands.contains(&joined.as_str())
            }
        };
        if reads && !variables.iter().any(|(name, _)| *name == variable_name) {
            variables.push((variable_name, meaning));
        }
    }
    variables
}

/// `okstra schema`: the embedded schema `name` (its `.schema.json` ending
/// optional), or without one the list of them with their titles.
pub fn schema_command(name: Option<&str>) -> Result<Reply> {
    const ENDING: &str = ".schema.json";
    let names = crate::schema::names();
    let Some(name) = name else {
        let mut out = String::new();
        for name in &names {
            let title = crate::schema::text(name)
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
                .and_then(|schema| schema["title"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(out, "{:<36} {title}", name.trim_end_matches(ENDING));
        }
        return Ok(Reply::document(out.into_bytes()));
    };
    let file = if name.ends_with(ENDING) {
        name.to_owned()
    } else {
        format!("{name}{ENDING}")
    };
    if !names.contains(&file.as_str()) {
        bail!(
            "no embedded schema `{}`; expected one of: {} (`okstra schema` lists them)",
            crate::fsread::escape(name),
            names
                .iter()
                .map(|name| name.trim_end_matches(ENDING))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let text = crate::schema::text(&file)?;
    let mut bytes = text.as_bytes().to_vec();
    if !text.ends_with('\n') {
        bytes.push(b'\n');
    }
    Ok(Reply::document(bytes))
}

/// Read a JSON array of argv arrays (each without the program name) from
/// stdin and parse each against the real CLI, running nothing. Prints one
/// line per argv, in order: `ok`, or `error[<clap error kind>]: ` and
/// clap's first message line. A request for help counts as parsed: it names
/// an existing (sub)command. Exit 0 when every argv parsed, 1 otherwise.
pub fn check_args_command() -> Result<Reply> {
    let lines: Vec<Vec<String>> = serde_json::from_reader(io::stdin().lock())
        .context("stdin is not a JSON array of argv arrays")?;
    let mut out = String::new();
    let mut all_ok = true;
    for argv in lines {
        let parsed = parse(std::iter::once("okstra".to_owned()).chain(argv));
        match parsed {
            Ok(_) => out.push_str("ok\n"),
            Err(err)
                if matches!(
                    err.kind(),
                    ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
                ) =>
            {
                out.push_str("ok\n");
            }
            Err(err) => {
                all_ok = false;
                let text = err.to_string();
                let first = text.lines().next().unwrap_or_default();
                let first = first.strip_prefix("error: ").unwrap_or(first);
                let _ = writeln!(out, "error[{:?}]: {first}", err.kind());
            }
        }
    }
    Ok(Reply::document(out.into_bytes()).with_status(if all_ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_in_one_help_group() {
        let mut command = Cli::command();
        command.build();
        let visible: Vec<&str> = command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(clap::Command::get_name)
            .collect();
        for name in &visible {
            let groups = usize::from(FOR_PEOPLE.contains(name))
                + usize::from(FOR_LEADS_AND_SCRIPTS.contains(name));
            assert_eq!(groups, 1, "`{name}` is in {groups} help groups, not one");
        }
        for name in FOR_PEOPLE.iter().chain(FOR_LEADS_AND_SCRIPTS) {
            assert!(visible.contains(name), "`{name}` is no visible command");
        }
    }

    #[test]
    fn the_top_help_lists_people_first_and_wraps_long_summaries() {
        let mut command = Cli::command();
        command.build();
        // Without the styles' escapes, as a pipe shows it.
        let template = regex::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&top_template(&command, 60, Listing::Full), "")
            .into_owned();
        let people = template.find("Start here:").unwrap();
        let plumbing = template.find("For leads and scripts:").unwrap();
        let options = template.find("Options:").unwrap();
        assert!(people < plumbing && plumbing < options, "{template}");
        assert!(template[people..plumbing].contains("  ask "), "{template}");
        assert!(
            template[plumbing..options].contains("  provider-exec  "),
            "{template}"
        );
        assert!(!template.contains("__drive"), "{template}");
        assert!(
            template.lines().all(|line| line.chars().count() <= 60),
            "{template}"
        );
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
    }

    #[test]
    fn pages_are_found_by_path_or_by_name() {
        let root = man_root();
        let words =
            |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_owned).collect() };
        assert_eq!(find_page(&root, &[]), Some(vec![]));
        assert_eq!(find_page(&root, &words("okstra")), Some(vec![]));
        let plan = Some(words("converge plan"));
        assert_eq!(find_page(&root, &words("converge plan")), plan);
        assert_eq!(find_page(&root, &words("converge-plan")), plan);
        assert_eq!(find_page(&root, &words("okstra-converge-plan")), plan);
        assert_eq!(
            find_page(&root, &words("provider-exec")),
            Some(words("provider-exec"))
        );
        assert_eq!(find_page(&root, &words("converge nope")), None);
        assert_eq!(find_page(&root, &words("__drive")), None);
        assert_eq!(find_page(&root, &words("help")), None);
    }

    /// Every `OKSTRA_*` variable the sources read is on some page's
    /// ENVIRONMENT: a new one cannot go undocumented.
    #[test]
    fn every_okstra_variable_read_is_on_a_page() {
        // Not variables: the `.okstra` folder's constant, a list of rule
        // names; and one only `cargo test` reads.
        const NOT_READ_BY_OKSTRA: [&str; 3] = ["OKSTRA_DIR", "OKSTRA_RULES", "OKSTRA_BLESS_PLUGIN"];
        let root = man_root();
        let mut documented = Vec::new();
        for path in page_paths(&root) {
            let command = descend(&root, &path);
            documented.extend(
                environment(command, &path)
                    .into_iter()
                    .map(|(name, _)| name),
            );
        }
        let pattern = regex::Regex::new(r"OKSTRA_[A-Z][A-Z_]*[A-Z]").unwrap();
        let mut files = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut missing = std::collections::BTreeSet::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy();
            if !name.ends_with(".rs") || name.ends_with("tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for found in pattern.find_iter(&text) {
                let variable = found.as_str();
                if !NOT_READ_BY_OKSTRA.contains(&variable)
                    && !documented.iter().any(|d| d == variable)
                {
                    missing.insert(format!("{variable} ({})", path.display()));
                }
            }
        }
        assert!(missing.is_empty(), "on no man page: {missing:?}");
    }
}
