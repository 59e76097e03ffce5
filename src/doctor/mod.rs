//! `okstra doctor`: will each provider CLI actually work headless?
//!
//! For each provider it finds the CLI on `PATH`, asks it for its version and
//! tells the program okstra drives from known look-alikes (`check`), looks
//! for credentials without reading a secret, and with `--probe` runs it once
//! through provider-exec (`probe`). Findings about a CLI build are cached
//! (`cache`) so render and provider-exec can record versions and recognise
//! look-alikes without starting any process: [`cache::known`] and
//! [`cache::lookup`] are their entry points, [`render_facts`] the render's.
//!
//! Exit code: 0 when every required provider is ready (the default roster's
//! providers, or those named with `--provider`), 1 otherwise, 2 when the
//! doctor itself could not run.

mod check;
mod probe;

pub use check::credentials;

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::catalog::{self, Provider};
use crate::cli::DoctorArgs;
use crate::cli_facts::{self as cache, Entry, Program, Stamp};
use crate::diag;
use crate::exit::ExitStatus;
use crate::fsread;
use crate::output::Reply;
use probe::ProbeReport;

/// Version of the `--json` report.
const REPORT_VERSION: u32 = 1;

/// One provider's findings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Finding {
    provider: Provider,
    binary: &'static str,
    /// Where `PATH` finds the CLI; `None` when it is not installed.
    path: Option<PathBuf>,
    /// The file that path resolves to.
    resolved_path: Option<PathBuf>,
    version: Option<String>,
    program: Option<Program>,
    /// Whether the version and program came from the cache.
    cached: bool,
    credentials: Vec<String>,
    probe: Option<ProbeReport>,
    ready: bool,
    /// Why it is not ready, or what to know about it (one line each).
    notes: Vec<String>,
    /// How to fix each problem the notes name (one line each).
    fixes: Vec<String>,
}

/// The doctor's answer. Its fields are in alphabetical order and nested
/// values go through [`crate::output::sorted`]: the `--json` report keeps
/// the key order of the map it was first written as.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    cache_path: Option<PathBuf>,
    #[serde(serialize_with = "crate::output::sorted")]
    containment: Containment,
    /// `containment` in a person's words.
    #[serde(skip)]
    containment_text: String,
    #[serde(serialize_with = "crate::output::sorted")]
    integrations: crate::install::Integrations,
    #[serde(serialize_with = "crate::output::sorted")]
    providers: Vec<Finding>,
    ready: bool,
    required: Vec<Provider>,
    schema_version: u32,
}

/// How a run rendered now keeps its CLIs from the project.
#[derive(Debug, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
enum Containment {
    Landlock {
        abi: u32,
    },
    Copies {
        why: String,
    },
    /// `OKSTRA_CONTAINMENT` holds a value okstra does not know.
    Invalid {
        why: String,
    },
}

/// The report carries its version (`REPORT_VERSION`).
impl crate::output::Answer for Report {
    const SCHEMA: &'static str = "doctor-answer.schema.json";
    const VERSION: Option<u32> = None;
}

impl crate::output::Text for Report {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(table(&self.providers, &self.required).as_bytes())?;
        writeln!(
            out,
            "containment: {}",
            fsread::escape(&self.containment_text)
        )?;
        for found in &self.integrations.found {
            writeln!(
                out,
                "integration: {} {} `{}`",
                found.host,
                found.kind,
                fsread::escape(&found.path.display().to_string())
            )?;
        }
        Ok(())
    }
}

/// `okstra doctor [--json] [--probe] [--provider P…]`.
pub fn doctor_command(args: &DoctorArgs) -> Result<Reply> {
    let selected = selected(&args.providers)?;
    let required: Vec<Provider> = if args.providers.is_empty() {
        default_roster()
    } else {
        selected.clone()
    };
    // Every CLI the doctor starts is our child: a daemon one of them starts
    // with `setsid` (outside its process group) re-parents to us, and is
    // stopped after the identity checks (`identify_all`) and after each probe
    // (`child::run_captured`).
    let subreaper = match crate::child::Subreaper::start() {
        Ok(subreaper) => Some(subreaper),
        Err(err) => {
            diag::warning(format_args!(
                "cannot adopt what the CLIs leave behind, so a daemon one starts may outlive the doctor: {err}"
            ));
            None
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute());

    let identified = identify_all(&selected, subreaper.as_ref());
    let mut findings: Vec<Finding> = Vec::new();
    for found in identified {
        let provider = found.provider;
        let mut finding = Finding {
            provider,
            binary: provider.binary(),
            path: found.path,
            resolved_path: None,
            version: None,
            program: None,
            cached: found.cached,
            credentials: check::credentials(provider, &env, home.as_deref()),
            probe: None,
            ready: false,
            notes: Vec::new(),
            fixes: Vec::new(),
        };
        if let Some(entry) = found.entry {
            finding.resolved_path = Some(entry.path.clone());
            finding.version.clone_from(&entry.version);
            finding.program = Some(entry.program);
            finding.notes.extend(entry.detail.clone());
            if !entry.program.is_usable() {
                finding
                    .fixes
                    .push(crate::advice::look_alike(provider, entry.program));
            }
        }
        if finding.program == Some(Program::Expected)
            && let Some(model_note) = provider.descriptor().model_note
            && let Some(note) = (model_note.note)(&env, home.as_deref())
        {
            finding.notes.push(note);
            finding.fixes.push(model_note.fix.to_owned());
        }
        findings.push(finding);
    }
    for finding in &mut findings {
        if args.probe && finding.program.is_some_and(Program::is_usable) {
            let provider = finding.provider;
            diag::progress(format_args!(
                "probing {provider}: one tiny headless run of `{}` (at most {} s of silence, {} s in all)",
                provider.binary(),
                probe::PROBE_IDLE_SECS,
                probe::PROBE_LIMIT.as_secs()
            ));
            let report = probe::probe(provider, subreaper.as_ref())
                .with_context(|| format!("cannot probe `{provider}`"))?;
            diag::progress(format_args!(
                "{provider}: the probe ended `{}` after {} s",
                report.ending, report.seconds
            ));
            finding.probe = Some(report);
        }
        judge(finding);
    }

    let all_ready = findings
        .iter()
        .filter(|f| required.contains(&f.provider))
        .all(|f| f.ready);
    // Which host integrations are there (install, plugin), and any twice.
    let integrations = crate::install::integrations(&env);
    // How a run rendered now keeps its CLIs from the project.
    let support = crate::sandbox::support();
    let containment_text = match &support {
        Ok(support) => support.describe(),
        Err(why) => format!("invalid — {why}"),
    };
    let containment = match support {
        Ok(crate::sandbox::Support::Landlock { abi }) => Containment::Landlock { abi },
        Ok(crate::sandbox::Support::Copies { why }) => Containment::Copies { why },
        Err(why) => Containment::Invalid { why },
    };
    let report = Report {
        cache_path: cache::cache_path(),
        containment,
        containment_text,
        integrations,
        providers: findings,
        ready: all_ready,
        required,
        schema_version: REPORT_VERSION,
    };
    let reply = Reply::answer(&report, args.json)?;
    let integrations = report.integrations;
    for warning in &integrations.warnings {
        diag::warning(fsread::escape(warning));
    }
    Ok(reply.with_status(if all_ready {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }))
}

/// One provider's CLI as found on `PATH`, and what it is.
#[derive(Debug, Clone)]
pub struct Identified {
    pub provider: Provider,
    /// Where `PATH` finds the CLI; `None` when it is not installed.
    pub path: Option<PathBuf>,
    /// What it is; `None` when it could not be inspected.
    pub entry: Option<Entry>,
    /// Whether `entry` came from the cache.
    pub cached: bool,
}

/// Find each provider's CLI on `PATH` and say what it is: from the cache
/// while it knows that build (its resolved path, size and modification
/// time), else by asking the CLI (`--version`, and `--help` for grok), all
/// CLIs at once. What was asked is stored in the cache. With `subreaper`,
/// whatever the CLIs left outside their groups is stopped afterwards.
pub fn identify_all(
    providers: &[Provider],
    subreaper: Option<&crate::child::Subreaper>,
) -> Vec<Identified> {
    let found: Vec<Identified> = std::thread::scope(|scope| {
        let handles: Vec<_> = providers
            .iter()
            .map(|&provider| {
                scope.spawn(move || {
                    let path = which::which(provider.binary()).ok();
                    let cached = path
                        .as_deref()
                        .and_then(|path| cache::lookup(provider, path));
                    let is_cached = cached.is_some();
                    let entry = cached
                        .or_else(|| path.as_deref().and_then(|path| identify(provider, path)));
                    Identified {
                        provider,
                        path,
                        entry,
                        cached: is_cached,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(providers)
            .map(|(handle, &provider)| {
                handle.join().unwrap_or(Identified {
                    provider,
                    path: None,
                    entry: None,
                    cached: false,
                })
            })
            .collect()
    });
    if let Some(subreaper) = subreaper {
        subreaper.stop_orphans();
    }
    let fresh: Vec<Entry> = found
        .iter()
        .filter(|f| !f.cached)
        .filter_map(|f| f.entry.clone())
        .collect();
    if !fresh.is_empty()
        && let Err(err) = cache::store(&fresh)
    {
        diag::warning(format_args!("cannot update the doctor cache: {err}"));
    }
    found
}

/// Ask the CLI at `path` who it is, as a cache entry. It is started as
/// `PATH` names it (a program may look at the name it was started by); the
/// entry is for the file that resolves to. Never under the sub-reaper:
/// several run at once, and the sub-reaper would take one CLI's run for
/// another's orphan (`identify_all` stops orphans after).
fn identify(provider: Provider, path: &std::path::Path) -> Option<Entry> {
    let resolved = std::fs::canonicalize(path).ok()?;
    let stamp = Stamp::of(&resolved)?;
    let identity = check::identify(provider, path, None);
    Some(Entry {
        provider: provider.as_str().to_owned(),
        path: resolved,
        stamp,
        version: identity.version,
        program: identity.program,
        detail: identity.detail,
        checked_at: crate::clock::rfc3339(crate::clock::unix_now()),
    })
}

/// Decide `ready` and add the notes that explain it.
fn judge(finding: &mut Finding) {
    let binary = finding.binary;
    let provider = finding.provider;
    let Some(program) = finding.program else {
        if finding.path.is_none() {
            finding.notes.push(format!("`{binary}` is not on PATH"));
            finding
                .fixes
                .push(crate::advice::install(provider).to_owned());
        } else {
            finding
                .notes
                .push(format!("`{binary}` could not be inspected"));
            finding
                .fixes
                .push(crate::advice::look_alike(provider, Program::Unrecognised));
        }
        return;
    };
    if !program.is_usable() {
        return;
    }
    if let Some(probe) = &finding.probe {
        finding.ready = probe.ending == crate::vocab::Ending::Completed;
        if !finding.ready {
            finding.notes.push(format!(
                "the probe ended `{}`{}",
                probe.ending,
                probe
                    .log_tail
                    .last()
                    .map_or_else(String::new, |line| format!(": {line}"))
            ));
            finding
                .fixes
                .extend(crate::advice::for_ending(provider, probe.ending, None));
        }
        return;
    }
    finding.ready = !finding.credentials.is_empty();
    if !finding.ready {
        finding.notes.push(
            "no credentials found (a login kept in a system keychain is not visible here; `okstra doctor --probe` tries a real run)"
                .to_owned(),
        );
        finding
            .fixes
            .push(crate::advice::log_in(provider).to_owned());
    }
}

/// The providers to check: all five, or those named (in catalog order).
fn selected(names: &[String]) -> Result<Vec<Provider>> {
    if names.is_empty() {
        return Ok(Provider::ALL.to_vec());
    }
    let mut chosen = Vec::new();
    for name in names {
        let Ok(provider) = name.trim().parse::<Provider>() else {
            bail!(
                "unknown provider `{name}`, expected one of `{}`",
                catalog::one_of(Provider::ALL)
            );
        };
        chosen.push(provider);
    }
    chosen.sort();
    chosen.dedup();
    Ok(chosen)
}

/// The providers of the default roster.
fn default_roster() -> Vec<Provider> {
    Provider::default_analysers()
}

fn table(findings: &[Finding], required: &[Provider]) -> String {
    let header = [
        "PROVIDER",
        "CLI",
        "VERSION",
        "PROGRAM",
        "CREDENTIALS",
        "PROBE",
        "READY",
    ];
    // Paths, versions and notes come from `PATH`, a CLI's output and the
    // cache: every cell and note is escaped before it is measured and shown.
    let rows: Vec<[String; 7]> = findings
        .iter()
        .map(|f| {
            [
                f.provider.to_string(),
                f.path
                    .as_ref()
                    .map_or_else(|| "missing".to_owned(), |p| p.display().to_string()),
                f.version.clone().unwrap_or_else(|| "-".to_owned()),
                f.program
                    .map_or_else(|| "-".to_owned(), |p| p.label(f.provider).to_owned()),
                if f.credentials.is_empty() {
                    "none".to_owned()
                } else {
                    f.credentials.join(", ")
                },
                f.probe
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |p| p.ending.to_string()),
                match (f.ready, required.contains(&f.provider)) {
                    (true, _) => "yes".to_owned(),
                    (false, true) => "NO".to_owned(),
                    (false, false) => "no".to_owned(),
                },
            ]
            .map(|cell| fsread::escape(&cell).into_owned())
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: &[&str]| {
        let joined: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        text.push_str(joined.join("  ").trim_end());
        text.push('\n');
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    // The two words for "not ready" say whether the exit code counts it.
    if findings.iter().any(|f| !f.ready) {
        let needed: Vec<&str> = required.iter().map(|p| p.as_str()).collect();
        let _ = writeln!(
            text,
            "READY: `NO` not ready and checked for the exit code ({}); `no` not ready, not needed unless your roster names it",
            needed.join(", ")
        );
    }
    for finding in findings {
        for note in &finding.notes {
            let _ = writeln!(text, "{}: {}", finding.provider, fsread::escape(note));
        }
        for fix in &finding.fixes {
            let _ = writeln!(text, "{}: fix: {}", finding.provider, fsread::escape(fix));
        }
    }
    text
}

/// What a render records about the CLIs of its wrapper assignments, and the
/// warnings it prints: `providerClis` for the run manifest, keyed by provider.
pub struct RenderFacts {
    pub clis: Value,
    pub warnings: Vec<String>,
}

/// Facts for `providers` (the roster's `cli-wrapper` providers) from `PATH`
/// and the cache only: no CLI is started.
pub fn render_facts(providers: &[Provider]) -> RenderFacts {
    let mut clis = Map::new();
    let mut warnings = Vec::new();
    for &provider in providers {
        if clis.contains_key(provider.as_str()) {
            continue;
        }
        let known = cache::known(provider);
        let program = known.entry.as_ref().map(|entry| entry.program);
        clis.insert(
            provider.as_str().to_owned(),
            json!({
                "path": known.path,
                "version": known.version(),
                "program": program,
            }),
        );
        let binary = provider.binary();
        match (&known.path, program) {
            (None, _) => warnings.push(format!(
                "the roster runs `{provider}` through its wrapper, but `{binary}` is not on PATH; run `okstra doctor`"
            )),
            (Some(path), Some(program)) if !program.is_usable() => warnings.push(format!(
                "the `{binary}` at `{}` is not the CLI okstra drives ({}); run `okstra doctor`",
                path.display(),
                program.label(provider)
            )),
            _ => {}
        }
    }
    RenderFacts {
        clis: Value::Object(clis),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_prints_the_bytes_of_the_map_it_replaced() {
        let finding = Finding {
            provider: Provider::Codex,
            binary: "codex",
            path: Some(PathBuf::from("/bin/codex")),
            resolved_path: None,
            version: Some("0.171.0".to_owned()),
            program: Some(Program::Expected),
            cached: true,
            credentials: vec!["found ~/.codex/auth.json".to_owned()],
            probe: None,
            ready: true,
            notes: vec!["a note".to_owned()],
            fixes: Vec::new(),
        };
        let integrations = crate::install::Integrations {
            found: Vec::new(),
            warnings: vec!["okstra is installed twice".to_owned()],
        };
        let report = Report {
            cache_path: Some(PathBuf::from("/cache/cli-facts.json")),
            containment: Containment::Landlock { abi: 4 },
            containment_text: String::new(),
            integrations: integrations.clone(),
            providers: vec![finding.clone()],
            ready: true,
            required: vec![Provider::Codex],
            schema_version: REPORT_VERSION,
        };
        // The map the report was first written as.
        let map = json!({
            "schemaVersion": REPORT_VERSION,
            "ready": true,
            "required": [Provider::Codex],
            "cachePath": "/cache/cli-facts.json",
            "providers": [finding],
            "integrations": integrations,
            "containment": json!({"mode": "landlock", "abi": 4}),
        });
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
    }

    #[test]
    fn the_default_roster_is_claude_and_codex() {
        assert_eq!(default_roster(), vec![Provider::Claude, Provider::Codex]);
    }

    #[test]
    fn providers_are_parsed_and_ordered() {
        let names = ["kimi".to_owned(), " grok".to_owned(), "kimi".to_owned()];
        assert_eq!(
            selected(&names).unwrap(),
            vec![Provider::Grok, Provider::Kimi]
        );
        let err = selected(&["gemini".to_owned()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown provider `gemini`, expected one of `claude|codex|antigravity|grok|kimi`"
        );
    }
}
