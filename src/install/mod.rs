//! `okstra install`: put the `okstra-<provider>-exec` links on `PATH` and,
//! per host, the `okstra` skill and the reap hook (see `hosts` for what goes
//! where and why), recording everything in a manifest so `--uninstall`
//! removes exactly that.
//!
//! Rules this module keeps:
//! - Idempotent: each item is compared with what is there; equal means
//!   untouched, and a second install reports that nothing changed.
//! - Never clobbers: a file or link it did not write (per the manifest, or a
//!   link to some okstra) is an error naming it, not an overwrite.
//! - Settings files are merged, never replaced: an unparseable one is an
//!   error; key order and the user's other hooks are kept (`json_doc`); the
//!   original is backed up beside the manifest, and uninstall restores it
//!   byte for byte when nothing else changed since.
//! - `--dry-run` prints every change (a unified diff for merged settings)
//!   and writes nothing.
//! - The manifest is `$XDG_STATE_HOME/okstra/install.json`, default
//!   `~/.local/state/okstra/install.json`; folders created for any item are
//!   recorded too and removed on uninstall when empty.

mod hosts;
mod json_doc;
#[cfg(test)]
mod plugin;
mod present;
mod uninstall;

pub use hosts::{HOOK_TIMEOUT_SECS, subagent_stop_command};
pub use present::{Integrations, integrations};

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::InstallArgs;
use crate::diag;
use crate::digest::sha256_hex;
use crate::durable;
use crate::exit::ExitStatus;
use crate::vocab::Host;
use hosts::{Homes, Item};
use json_doc::Json;

/// Version of the install manifest.
const MANIFEST_VERSION: u32 = 1;
/// Settings, skills and manifests are small; anything bigger is not one.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The install manifest: what okstra wrote, so uninstall removes only that.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    records: Vec<Record>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Record {
    Link {
        path: PathBuf,
        target: PathBuf,
    },
    File {
        path: PathBuf,
        sha256: String,
    },
    #[serde(rename_all = "camelCase")]
    Hooks {
        path: PathBuf,
        groups: Vec<HookRecord>,
        /// okstra created the file (uninstall deletes it once it is empty).
        created: bool,
        /// The file as it was before okstra first changed it.
        backup: Option<PathBuf>,
        /// The backup's sha256 when okstra wrote it (absent in manifests
        /// written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backup_sha256: Option<String>,
    },
    Dir {
        path: PathBuf,
    },
}

impl Record {
    fn path(&self) -> &Path {
        match self {
            Record::Link { path, .. }
            | Record::File { path, .. }
            | Record::Hooks { path, .. }
            | Record::Dir { path } => path,
        }
    }

    fn same_slot(&self, other: &Record) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other) && self.path() == other.path()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HookRecord {
    event: String,
    group: Value,
}

/// Where the manifest and backups live.
struct State {
    dir: PathBuf,
    manifest: PathBuf,
}

impl State {
    fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let dir = crate::user_dirs::state_dir(&|name| env(name).map(Into::into))?;
        Some(Self {
            manifest: dir.join("install.json"),
            dir,
        })
    }

    fn backup_path(&self, settings: &Path) -> PathBuf {
        let name = settings
            .to_string_lossy()
            .trim_start_matches('/')
            .replace('/', "%");
        self.dir.join("backups").join(name)
    }
}

/// Prints progress (stderr), or keeps the dry run's plan (stdout, a line
/// per change).
struct Out {
    dry_run: bool,
    /// The checking pass before a real install: plans silently.
    quiet: bool,
    changes: usize,
    /// The dry run's plan, a line each.
    plan: Vec<String>,
}

impl Out {
    fn change(&mut self, done: &str, would: &str) {
        self.changes += 1;
        if self.quiet {
            return;
        }
        if self.dry_run {
            self.plan.push(format!("{would}\n"));
        } else {
            diag::progress(done);
        }
    }

    /// The plan kept so far, as the answer (and forget it).
    fn take_plan(&mut self) -> crate::output::Reply {
        let plan = self.plan.concat();
        self.plan.clear();
        crate::output::Reply::document(plan.into_bytes())
    }
}

/// `okstra install …`: the dry run's plan is printed however the install
/// ends (what it planned before a refusal included).
pub fn install_command(args: &InstallArgs) -> crate::output::Reply {
    let mut out = Out {
        dry_run: args.dry_run,
        quiet: false,
        changes: 0,
        plan: Vec::new(),
    };
    let installed = install(args, &mut out);
    let plan = out.take_plan();
    match installed {
        // The plan, then the line that ends it.
        Ok((status, closing)) => plan.then_say(closing).with_status(status),
        Err(err) => plan.ending(Err(err)),
    }
}

/// How an install ends: its status, and what it says after its plan.
type Ending = (ExitStatus, Box<dyn FnOnce()>);

fn install(args: &InstallArgs, out: &mut Out) -> Result<Ending> {
    let env = |name: &str| std::env::var(name).ok();
    let state = State::from_env(&env)
        .context("cannot find where to keep the install manifest: set `HOME` (or `XDG_STATE_HOME`) to an absolute path")?;
    if args.uninstall {
        return uninstall::uninstall(&state, out).map(|status| (status, Box::new(|| {}) as _));
    }
    let okstra = std::env::current_exe()
        .and_then(fs::canonicalize)
        .context("cannot find the running okstra binary")?;
    let bin_dir = match &args.bin_dir {
        Some(dir) => std::path::absolute(dir)
            .with_context(|| format!("cannot resolve `{}`", dir.display()))?,
        None => okstra
            .parent()
            .context("the okstra binary has no parent folder")?
            .to_owned(),
    };
    if bin_dir.exists() && !bin_dir.is_dir() {
        bail!(
            "`{}` is not a folder; pass a folder to `--bin-dir`",
            bin_dir.display()
        );
    }
    let mut hosts_chosen = Vec::new();
    for (chosen, host) in [
        (args.claude_code, Host::ClaudeCode),
        (args.codex, Host::Codex),
        (args.antigravity, Host::Antigravity),
    ] {
        if chosen {
            hosts_chosen.push(host);
        }
    }
    // The links start the wrapper's own small binary when it sits beside
    // okstra (what the engine starts too), else okstra itself.
    let wrapper = crate::provider_exec::Launcher::beside(&okstra);
    let link_target = if wrapper.lead.is_empty() {
        wrapper.program
    } else {
        okstra.clone()
    };
    let mut items = hosts::wrapper_links(&bin_dir, &link_target);
    if !hosts_chosen.is_empty() {
        let homes = Homes::from_env(&env)
            .context("`HOME` must be an absolute path to install into a host")?;
        for &host in &hosts_chosen {
            items.extend(hosts::host_items(host, &homes, &okstra)?);
        }
    }

    let old = read_manifest(&state.manifest)?;
    // Check every item first (conflicts, unparseable settings) without
    // writing, so a refusal leaves nothing half-installed.
    if !args.dry_run {
        let mut check = Out {
            dry_run: true,
            quiet: true,
            changes: 0,
            plan: Vec::new(),
        };
        for item in &items {
            place(item, &old, &state, &mut check, &mut Vec::new())?;
        }
    }
    let mut records: Vec<Record> = Vec::new();
    let mut failed = None;
    for item in &items {
        if let Err(err) = place(item, &old, &state, out, &mut records) {
            // What was done so far is still recorded, so uninstall finds it.
            failed = Some(err);
            break;
        }
    }
    let mut manifest = old.clone();
    manifest.schema_version = MANIFEST_VERSION;
    for record in records {
        match manifest.records.iter_mut().find(|r| r.same_slot(&record)) {
            Some(slot) => *slot = record,
            None => manifest.records.push(record),
        }
    }
    if manifest.records != old.records || old.schema_version != MANIFEST_VERSION {
        let mut dirs = Vec::new();
        ensure_dir(&state.dir, out.dry_run, &mut dirs)?;
        for dir in dirs {
            push_dir(&mut manifest, dir);
        }
        let mut bytes = serde_json::to_vec_pretty(&manifest)?;
        bytes.push(b'\n');
        if !out.dry_run {
            durable::write_atomic(&state.manifest, &bytes)
                .with_context(|| format!("cannot write `{}`", state.manifest.display()))?;
        }
        out.change(
            &format!("recorded the install in `{}`", state.manifest.display()),
            &format!("would record the install in `{}`", state.manifest.display()),
        );
    }
    if let Some(err) = failed {
        return Err(err);
    }
    let (changes, dry_run) = (out.changes, out.dry_run);
    let closing = move || {
        if changes == 0 {
            diag::progress("already installed; nothing changed");
        } else if dry_run {
            diag::progress("dry run; nothing was written");
        }
        for host in hosts_chosen {
            for note in hosts::host_notes(host) {
                diag::note(note);
            }
        }
    };
    Ok((ExitStatus::Success, Box::new(closing)))
}

fn push_dir(manifest: &mut Manifest, path: PathBuf) {
    let record = Record::Dir { path };
    if !manifest.records.contains(&record) {
        manifest.records.push(record);
    }
}

/// Put one item in place (or say what would be done), pushing its records
/// (folders created included) as it goes.
fn place(
    item: &Item,
    old: &Manifest,
    state: &State,
    out: &mut Out,
    records: &mut Vec<Record>,
) -> Result<()> {
    let recorded = |path: &Path| {
        old.records
            .iter()
            .find(|r| r.path() == path && !matches!(r, Record::Dir { .. }))
    };
    match item {
        Item::Link { path, target } => {
            let record = Record::Link {
                path: path.clone(),
                target: target.clone(),
            };
            match fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let current = fs::read_link(path)
                        .with_context(|| format!("cannot read link `{}`", path.display()))?;
                    if current == *target {
                        records.push(record);
                        return Ok(());
                    }
                    let ours = recorded(path).is_some()
                        || current
                            .file_name()
                            .is_some_and(|name| name.to_string_lossy().starts_with("okstra"));
                    if !ours {
                        bail!(
                            "`{}` is a link to `{}`, not to okstra; remove it or choose another `--bin-dir`",
                            path.display(),
                            current.display()
                        );
                    }
                }
                Ok(_) => bail!(
                    "`{}` exists and is not a link okstra made; remove it or choose another `--bin-dir`",
                    path.display()
                ),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("cannot inspect `{}`", path.display()));
                }
            }
            records.extend(parent_dirs(path, out.dry_run)?);
            if !out.dry_run {
                replace_link(path, target)?;
            }
            out.change(
                &format!("linked `{}` -> `{}`", path.display(), target.display()),
                &format!("would link `{}` -> `{}`", path.display(), target.display()),
            );
            records.push(record);
        }
        Item::File { path, bytes } => {
            let record = Record::File {
                path: path.clone(),
                sha256: sha256_hex(bytes),
            };
            match read_small(path)? {
                Some(current) if current == *bytes => {
                    records.push(record);
                    return Ok(());
                }
                Some(current) => {
                    let ours = matches!(recorded(path), Some(Record::File { sha256, .. }) if *sha256 == sha256_hex(&current));
                    if !ours {
                        bail!(
                            "`{}` exists and was not written by `okstra install` (or was edited since); move it away first",
                            path.display()
                        );
                    }
                }
                None => {}
            }
            records.extend(parent_dirs(path, out.dry_run)?);
            if !out.dry_run {
                durable::write_atomic(path, bytes)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
            }
            out.change(
                &format!("wrote `{}`", path.display()),
                &format!("would write `{}`", path.display()),
            );
            records.push(record);
        }
        Item::Hooks { path, groups } => merge_settings(path, groups, old, state, out, records)?,
    }
    Ok(())
}

/// Merge hook `groups` into the JSON settings file `path`.
fn merge_settings(
    path: &Path,
    groups: &[(String, Json)],
    old: &Manifest,
    state: &State,
    out: &mut Out,
    records: &mut Vec<Record>,
) -> Result<()> {
    // A settings file that is a link (dotfiles) is edited where it points.
    let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let before = read_small(&real)?
        .map(|bytes| {
            String::from_utf8(bytes).with_context(|| format!("`{}` is not UTF-8", path.display()))
        })
        .transpose()?;
    let mut doc = match &before {
        Some(text) => Json::parse(text).with_context(|| {
            format!(
                "`{}` is not valid JSON; fix it first, okstra never overwrites it",
                path.display()
            )
        })?,
        None => Json::Object(Vec::new()),
    };
    let previous = old.records.iter().find_map(|record| match record {
        Record::Hooks {
            path: p,
            groups,
            created,
            backup,
            backup_sha256,
        } if p == path => Some((groups, *created, backup.clone(), backup_sha256.clone())),
        _ => None,
    });
    // Groups an earlier install added that this one no longer wants (say,
    // okstra moved) are taken out first.
    if let Some((old_groups, ..)) = &previous {
        for stale in *old_groups {
            let wanted = groups
                .iter()
                .any(|(event, group)| *event == stale.event && group.to_value() == stale.group);
            if !wanted {
                json_doc::unmerge_hook(&mut doc, &stale.event, &stale.group);
            }
        }
    }
    for (event, group) in groups {
        json_doc::merge_hook(&mut doc, event, group)
            .with_context(|| format!("cannot add a hook to `{}`", path.display()))?;
    }
    let mut after = doc.to_pretty();
    if before.as_ref().is_none_or(|text| text.ends_with('\n')) {
        after.push('\n');
    }
    let created = previous
        .as_ref()
        .map_or(before.is_none(), |(_, created, ..)| *created);
    let (mut backup, mut backup_sha256) = previous
        .map(|(_, _, backup, sha256)| (backup, sha256))
        .unwrap_or_default();
    if before.as_deref() != Some(after.as_str()) {
        if backup.is_none()
            && !created
            && let Some(text) = &before
        {
            let target = state.backup_path(path);
            records.extend(parent_dirs(&target, out.dry_run)?);
            if !out.dry_run {
                write_private(&target, text.as_bytes())?;
            }
            backup = Some(target);
            backup_sha256 = Some(sha256_hex(text.as_bytes()));
        }
        records.extend(parent_dirs(&real, out.dry_run)?);
        let diff = similar::TextDiff::from_lines(before.as_deref().unwrap_or(""), &after)
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("{} (before)", path.display()),
                &format!("{} (after)", path.display()),
            )
            .to_string();
        if !out.dry_run {
            rewrite_settings(&real, after.as_bytes())?;
        }
        out.change(
            &format!("merged okstra's hooks into `{}`", path.display()),
            &format!("would change `{}`:\n{}", path.display(), diff.trim_end()),
        );
    }
    records.push(Record::Hooks {
        path: path.to_owned(),
        groups: groups
            .iter()
            .map(|(event, group)| HookRecord {
                event: event.clone(),
                group: group.to_value(),
            })
            .collect(),
        created,
        backup,
        backup_sha256,
    });
    Ok(())
}

fn read_manifest(path: &Path) -> Result<Manifest> {
    match read_small(path)? {
        None => Ok(Manifest::default()),
        Some(bytes) => serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "the install manifest `{}` is not valid; okstra will not guess what it installed",
                path.display()
            )
        }),
    }
}

/// A regular file's bytes; `None` when it does not exist. A folder, FIFO,
/// device or oversized file is an error.
fn read_small(path: &Path) -> Result<Option<Vec<u8>>> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(err).with_context(|| format!("cannot inspect `{}`", path.display()));
        }
    };
    if !meta.is_file() {
        bail!("`{}` is not a regular file", path.display());
    }
    if meta.len() > MAX_FILE_BYTES {
        bail!("`{}` is larger than {MAX_FILE_BYTES} bytes", path.display());
    }
    let file = fs::File::open(path).with_context(|| format!("cannot open `{}`", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(Some(bytes))
}

fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove `{}`", path.display()))
        }
        _ => Ok(()),
    }
}

/// Create `path`'s missing parent folders; each becomes a `Dir` record.
fn parent_dirs(path: &Path, dry_run: bool) -> Result<Vec<Record>> {
    let mut created = Vec::new();
    if let Some(parent) = path.parent() {
        ensure_dir(parent, dry_run, &mut created)?;
    }
    Ok(created
        .into_iter()
        .map(|path| Record::Dir { path })
        .collect())
}

/// Create `dir` and its missing ancestors, pushing each one created (outermost first).
fn ensure_dir(dir: &Path, dry_run: bool, created: &mut Vec<PathBuf>) -> Result<()> {
    let mut missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|ancestor| fs::symlink_metadata(ancestor).is_err())
        .collect();
    missing.reverse();
    for folder in missing {
        if !dry_run {
            fs::create_dir(folder)
                .with_context(|| format!("cannot create `{}`", folder.display()))?;
        }
        created.push(folder.to_owned());
    }
    Ok(())
}

/// Replace `path` with a link to `target` atomically (link beside, rename over).
fn replace_link(path: &Path, target: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let temp = dir.join(format!(
        ".{}.okstra-{}",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let _ = fs::remove_file(&temp);
    symlink(target, &temp)
        .with_context(|| format!("cannot create a link in `{}`", dir.display()))?;
    fs::rename(&temp, path).with_context(|| format!("cannot create `{}`", path.display()))?;
    Ok(())
}

/// A file only the user can read (the settings backup may hold keys).
/// Replace the user's settings file `real` (where a link leads) with
/// `bytes` atomically, keeping the mode it has: a `0644` file stays
/// readable to the tools that read it. A new file is private (`0600`).
fn rewrite_settings(real: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let written = match fs::metadata(real) {
        Ok(meta) => durable::write_atomic_mode(real, bytes, meta.permissions().mode() & 0o7777),
        Err(_) => durable::write_atomic(real, bytes),
    };
    written.with_context(|| format!("cannot write `{}`", real.display()))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create `{}`", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_follows_xdg_then_home() {
        let state = State::from_env(&|name| match name {
            "HOME" => Some("/h".to_owned()),
            "XDG_STATE_HOME" => Some("relative".to_owned()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            state.manifest,
            Path::new("/h/.local/state/okstra/install.json")
        );
        let state =
            State::from_env(&|name| (name == "XDG_STATE_HOME").then(|| "/s".to_owned())).unwrap();
        assert_eq!(state.dir, Path::new("/s/okstra"));
        assert_eq!(
            state.backup_path(Path::new("/h/.claude/settings.json")),
            Path::new("/s/okstra/backups/h%.claude%settings.json")
        );
        assert!(State::from_env(&|_| None).is_none());
    }

    #[test]
    fn records_share_a_slot_by_kind_and_path() {
        let link = Record::Link {
            path: "/b/x".into(),
            target: "/o".into(),
        };
        let other = Record::Link {
            path: "/b/x".into(),
            target: "/p".into(),
        };
        let dir = Record::Dir {
            path: "/b/x".into(),
        };
        assert!(link.same_slot(&other));
        assert!(!link.same_slot(&dir));
    }

    #[test]
    fn ensure_dir_reports_each_folder_it_creates_outermost_first() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b/c");
        let mut planned = Vec::new();
        ensure_dir(&deep, true, &mut planned).unwrap();
        assert!(!root.path().join("a").exists(), "a dry run creates nothing");
        let mut created = Vec::new();
        ensure_dir(&deep, false, &mut created).unwrap();
        assert_eq!(planned, created);
        assert_eq!(
            created,
            vec![root.path().join("a"), root.path().join("a/b"), deep.clone()]
        );
        let mut again = Vec::new();
        ensure_dir(&deep, false, &mut again).unwrap();
        assert!(again.is_empty());
    }
}
