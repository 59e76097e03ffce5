//! `okstra install --uninstall`: remove what the manifest records, and only
//! what `okstra install` could have written there.
//!
//! The manifest is a file anyone can edit, so every record is first checked
//! against the places install writes ([`Places`]): an `okstra-<provider>-exec`
//! link to an okstra binary, a host's okstra skill file, okstra's reap hook
//! groups in a host's settings file, the backup install made of that file
//! in okstra's state folder, and the folders created for those. Then a link
//! is removed only while it still points at the recorded target, a file or
//! backup only while its recorded hash still matches, a folder only when
//! empty; a settings file loses only okstra's groups, and gets its backup
//! back byte for byte when nothing else changed since.
//!
//! Anything else is kept and named on stderr, one line each, and a refusal
//! (or a failed removal) of one record never stops the others. At the end
//! the manifest is rewritten atomically to list what was kept, or removed
//! when nothing was.

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use super::hosts::{self, HOSTS, Homes};
use super::json_doc::{self, Json};
use super::{
    HookRecord, MANIFEST_VERSION, Manifest, Out, Record, State, read_manifest, read_small,
    remove_file, rewrite_settings,
};
use crate::diag;
use crate::digest::sha256_hex;
use crate::durable;
use crate::exit::ExitStatus;

/// `okstra install --uninstall`.
pub(super) fn uninstall(state: &State, out: &mut Out) -> Result<ExitStatus> {
    let manifest = read_manifest(&state.manifest)?;
    if manifest.records.is_empty() {
        diag::progress(format_args!(
            "nothing recorded in `{}`; nothing to remove",
            state.manifest.display()
        ));
        return Ok(ExitStatus::Success);
    }
    let env = |name: &str| std::env::var(name).ok();
    let places = Places::new(state, Homes::from_env(&env).as_ref());
    let mut tally = Tally::default();
    let mut kept = Vec::new();
    for record in manifest.records.iter().rev() {
        if matches!(record, Record::Dir { .. }) {
            continue;
        }
        let outcome = places
            .check(record)
            .map_err(|why| anyhow::anyhow!(why))
            .and_then(|()| remove(record, &places, out));
        match outcome {
            Ok(Left::Nothing) => {}
            Ok(Left::Changed(left)) => {
                tally.changed += 1;
                kept.push(left);
            }
            Ok(Left::Refused(left)) => {
                tally.refused += 1;
                kept.push(left);
            }
            Err(err) => {
                tally.refused += 1;
                diag::warning(format_args!("kept `{}`: {err:#}", record.path().display()));
                kept.push(record.clone());
            }
        }
    }
    kept.reverse();

    // Folders: only those install creates for what it writes, deepest
    // first, and only when empty.
    let mut dirs = Vec::new();
    for record in &manifest.records {
        let Record::Dir { path } = record else {
            continue;
        };
        if places.is_created_dir(path, &manifest.records) {
            dirs.push(path.clone());
        } else {
            tally.refused += 1;
            diag::warning(format_args!(
                "kept `{}`: it is not a folder `okstra install` creates for what it installs",
                path.display()
            ));
            kept.push(record.clone());
        }
    }
    let keep_manifest = !kept.is_empty();
    if !keep_manifest {
        if !out.dry_run {
            remove_file(&state.manifest)?;
        }
        out.change(
            &format!("removed `{}`", state.manifest.display()),
            &format!("would remove `{}`", state.manifest.display()),
        );
    }
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in dirs {
        if out.dry_run {
            out.change("", &format!("would remove `{}` if empty", dir.display()));
        } else if fs::remove_dir(&dir).is_ok() {
            out.change(&format!("removed `{}`", dir.display()), "");
        } else if dir.symlink_metadata().is_ok() {
            kept.push(Record::Dir { path: dir });
        }
    }
    if keep_manifest {
        let left = Manifest {
            schema_version: MANIFEST_VERSION,
            records: kept,
        };
        let mut bytes = serde_json::to_vec_pretty(&left)?;
        bytes.push(b'\n');
        if !out.dry_run {
            durable::write_atomic(&state.manifest, &bytes)
                .with_context(|| format!("cannot write `{}`", state.manifest.display()))?;
        }
        out.change(
            &format!(
                "`{}` now lists only what was kept",
                state.manifest.display()
            ),
            &format!(
                "would rewrite `{}` to list only what is kept",
                state.manifest.display()
            ),
        );
    }
    if tally.changed > 0 {
        diag::progress(format_args!(
            "left {} changed file(s) in place; remove them yourself if you no longer want them",
            tally.changed
        ));
    }
    if tally.refused > 0 {
        diag::error(format_args!(
            "kept {} recorded entr{} that `okstra install` did not write or that could not be \
             removed (named above); see `{}`",
            tally.refused,
            if tally.refused == 1 { "y" } else { "ies" },
            state.manifest.display()
        ));
        return Ok(ExitStatus::Error);
    }
    Ok(ExitStatus::Success)
}

/// What uninstall left, by why.
#[derive(Default)]
struct Tally {
    /// Left in place because the user changed it since.
    changed: usize,
    /// Not okstra's to remove, or its removal failed.
    refused: usize,
}

/// The places `okstra install` writes, to check a record against.
struct Places<'a> {
    state: &'a State,
    /// Each host's skill file (none without an absolute `HOME`).
    skills: Vec<PathBuf>,
    /// Each host's settings file that gets a hook.
    settings: Vec<PathBuf>,
}

impl<'a> Places<'a> {
    fn new(state: &'a State, homes: Option<&Homes>) -> Self {
        let (skills, settings) = match homes {
            Some(homes) => (
                HOSTS.iter().map(|&h| hosts::skill_path(h, homes)).collect(),
                HOSTS
                    .iter()
                    .filter_map(|&h| hosts::settings_path(h, homes))
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        Places {
            state,
            skills,
            settings,
        }
    }

    /// `Ok` when `record` names something install writes; else why not.
    fn check(&self, record: &Record) -> Result<(), String> {
        let path = record.path();
        if !is_plain_absolute(path) {
            return Err("it is not an absolute path without `..`".to_owned());
        }
        match record {
            Record::Link { target, .. } => {
                let named = path
                    .file_name()
                    .is_some_and(|name| hosts::is_wrapper_name(&name.to_string_lossy()));
                if !named {
                    return Err(
                        "it is not an `okstra-<provider>-exec` link `okstra install` makes"
                            .to_owned(),
                    );
                }
                let to_okstra = target
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with("okstra"));
                if !to_okstra {
                    return Err(format!(
                        "its recorded target `{}` is not an okstra binary",
                        target.display()
                    ));
                }
                Ok(())
            }
            Record::File { .. } => {
                if self.skills.iter().any(|skill| skill == path) {
                    Ok(())
                } else {
                    Err(format!(
                        "it is not one of the skill files `okstra install` writes ({})",
                        listed(&self.skills)
                    ))
                }
            }
            Record::Hooks { groups, .. } => {
                if !self.settings.iter().any(|settings| settings == path) {
                    return Err(format!(
                        "it is not a settings file `okstra install` adds a hook to ({})",
                        listed(&self.settings)
                    ));
                }
                if let Some(foreign) = groups
                    .iter()
                    .find(|record| !hosts::is_okstra_group(&record.group))
                {
                    return Err(format!(
                        "its recorded `{}` hook group is not okstra's reap hook",
                        foreign.event
                    ));
                }
                Ok(())
            }
            Record::Dir { .. } => Err("a folder is checked with what it holds".to_owned()),
        }
    }

    /// Whether `dir` is a folder install creates: the state folder or one
    /// of its ancestors, or an ancestor of a record that passed [`check`].
    ///
    /// [`check`]: Places::check
    fn is_created_dir(&self, dir: &Path, records: &[Record]) -> bool {
        if !is_plain_absolute(dir) {
            return false;
        }
        let holds = |path: &Path| path != dir && path.starts_with(dir);
        holds(&self.state.manifest)
            || records.iter().any(|record| {
                !matches!(record, Record::Dir { .. })
                    && self.check(record).is_ok()
                    && (holds(record.path())
                        || matches!(record, Record::Hooks { backup: Some(b), .. }
                            if self.is_backup_of(record.path(), b) && holds(b)))
            })
    }

    /// Whether `backup` is where install keeps the backup of `settings`.
    fn is_backup_of(&self, settings: &Path, backup: &Path) -> bool {
        self.state.backup_path(settings) == backup
    }
}

/// `path` is absolute and has no `.` or `..` in it.
fn is_plain_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|part| matches!(part, Component::RootDir | Component::Normal(_)))
}

fn listed(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none without an absolute `HOME`".to_owned();
    }
    paths
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a record left behind, to keep listing in the manifest.
enum Left {
    Nothing,
    /// Left in place because it changed since install (named on stderr).
    Changed(Record),
    /// Partly not install's (a backup it never wrote; named on stderr).
    Refused(Record),
}

/// Remove one checked record.
fn remove(record: &Record, places: &Places<'_>, out: &mut Out) -> Result<Left> {
    match record {
        Record::Link { path, target } => {
            if fs::read_link(path).is_ok_and(|current| current == *target) {
                if !out.dry_run {
                    remove_file(path)?;
                }
                removed(out, path);
                Ok(Left::Nothing)
            } else if path.symlink_metadata().is_ok() {
                warn_left(path);
                Ok(Left::Changed(record.clone()))
            } else {
                Ok(Left::Nothing)
            }
        }
        Record::File { path, sha256 } => match read_small(path)? {
            Some(bytes) if sha256_hex(&bytes) == *sha256 => {
                if !out.dry_run {
                    remove_file(path)?;
                }
                removed(out, path);
                Ok(Left::Nothing)
            }
            Some(_) => {
                warn_left(path);
                Ok(Left::Changed(record.clone()))
            }
            None => Ok(Left::Nothing),
        },
        Record::Hooks {
            path,
            groups,
            created,
            backup,
            backup_sha256,
        } => {
            let mut backup =
                judge_backup(places, path, backup.as_deref(), backup_sha256.as_deref());
            let present = unmerge_settings(path, groups, *created, &backup, out)?;
            if let (false, Backup::Use(used, _)) = (present, &backup) {
                // The user removed the settings file: their original is
                // now only in the backup, so it stays.
                backup = Backup::Keep {
                    path: used.clone(),
                    why: format!(
                        "`{}` no longer exists, so its backup is all that is left of it",
                        path.display()
                    ),
                    foreign: false,
                };
            }
            match backup {
                Backup::Keep {
                    path: kept,
                    why,
                    foreign,
                } => {
                    let left = Record::Hooks {
                        path: path.clone(),
                        groups: Vec::new(),
                        created: *created,
                        backup: Some(kept.clone()),
                        backup_sha256: backup_sha256.clone(),
                    };
                    if foreign {
                        diag::warning(format_args!("kept `{}`: {why}", kept.display()));
                        Ok(Left::Refused(left))
                    } else {
                        diag::warning(format_args!("left `{}`: {why}", kept.display()));
                        Ok(Left::Changed(left))
                    }
                }
                Backup::Use(used, _) => {
                    if !out.dry_run {
                        remove_file(&used)?;
                    }
                    Ok(Left::Nothing)
                }
                Backup::None => Ok(Left::Nothing),
            }
        }
        Record::Dir { .. } => Ok(Left::Nothing),
    }
}

fn removed(out: &mut Out, path: &Path) {
    out.change(
        &format!("removed `{}`", path.display()),
        &format!("would remove `{}`", path.display()),
    );
}

fn warn_left(path: &Path) {
    diag::warning(format_args!(
        "left `{}`: it changed since okstra installed it",
        path.display()
    ));
}

/// What to do with a settings file's recorded backup.
enum Backup {
    /// None recorded, or it is gone.
    None,
    /// Install's own backup, unchanged: restore from it, then remove it.
    Use(PathBuf, Vec<u8>),
    /// Not install's backup (`foreign`), or changed since: never read as
    /// the original, never removed.
    Keep {
        path: PathBuf,
        why: String,
        foreign: bool,
    },
}

fn judge_backup(
    places: &Places<'_>,
    settings: &Path,
    backup: Option<&Path>,
    sha256: Option<&str>,
) -> Backup {
    let Some(backup) = backup else {
        return Backup::None;
    };
    if !places.is_backup_of(settings, backup) {
        return Backup::Keep {
            path: backup.to_owned(),
            why: format!(
                "it is not the backup `okstra install` keeps of `{}` (that is `{}`)",
                settings.display(),
                places.state.backup_path(settings).display()
            ),
            foreign: true,
        };
    }
    match read_small(backup) {
        Ok(None) => Backup::None,
        Ok(Some(bytes)) if sha256.is_none_or(|sha256| sha256_hex(&bytes) == sha256) => {
            Backup::Use(backup.to_owned(), bytes)
        }
        Ok(Some(_)) => Backup::Keep {
            path: backup.to_owned(),
            why: "it changed since okstra backed the settings up".to_owned(),
            foreign: false,
        },
        Err(err) => Backup::Keep {
            path: backup.to_owned(),
            why: format!("{err:#}"),
            foreign: true,
        },
    }
}

/// Take okstra's hook groups out of `path`; restore the backup when the
/// result is what the file was before okstra touched it. A file with none
/// of okstra's groups left is not rewritten. `false` when `path` is gone.
fn unmerge_settings(
    path: &Path,
    groups: &[HookRecord],
    created: bool,
    backup: &Backup,
    out: &mut Out,
) -> Result<bool> {
    let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let Some(bytes) = read_small(&real)? else {
        return Ok(false);
    };
    let text =
        String::from_utf8(bytes).with_context(|| format!("`{}` is not UTF-8", path.display()))?;
    let mut doc = Json::parse(&text).with_context(|| {
        format!(
            "`{}` is not valid JSON; fix it, then uninstall again",
            path.display()
        )
    })?;
    let mut taken = false;
    for record in groups {
        taken |= json_doc::unmerge_hook(&mut doc, &record.event, &record.group);
    }
    let original = match backup {
        Backup::Use(_, bytes) => Some(bytes),
        Backup::None | Backup::Keep { .. } => None,
    };
    let restored = original.filter(|bytes| {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| Json::parse(text).ok())
            .is_some_and(|before| before == doc)
    });
    let remove = created && doc == Json::Object(Vec::new());
    if !taken && restored.is_none() && !remove {
        return Ok(true);
    }
    let after: Option<Vec<u8>> = if remove {
        None
    } else if let Some(bytes) = restored {
        Some(bytes.clone())
    } else {
        let mut pretty = doc.to_pretty();
        if text.ends_with('\n') {
            pretty.push('\n');
        }
        Some(pretty.into_bytes())
    };
    if after.as_deref() != Some(text.as_bytes()) {
        if !out.dry_run {
            match &after {
                None => remove_file(&real)?,
                Some(bytes) => rewrite_settings(&real, bytes)?,
            }
        }
        out.change(
            &format!("removed okstra's hooks from `{}`", path.display()),
            &format!("would remove okstra's hooks from `{}`", path.display()),
        );
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(state: &State) -> Places<'_> {
        let homes = Homes::from_env(&|name| (name == "HOME").then(|| "/h".to_owned()));
        Places::new(state, homes.as_ref())
    }

    #[test]
    fn only_records_in_installs_places_pass() {
        let state = State::from_env(&|name| (name == "HOME").then(|| "/h".to_owned())).unwrap();
        let places = places(&state);
        let link = |path: &str, target: &str| Record::Link {
            path: path.into(),
            target: target.into(),
        };
        let file = |path: &str| Record::File {
            path: path.into(),
            sha256: String::new(),
        };
        assert!(
            places
                .check(&link("/b/okstra-grok-exec", "/o/okstra"))
                .is_ok()
        );
        assert!(
            places
                .check(&file("/h/.claude/skills/okstra/SKILL.md"))
                .is_ok()
        );
        for refused in [
            link("/b/okstra-sh-exec", "/o/okstra"),
            link("/b/okstra-grok-exec", "/bin/rm"),
            link("b/okstra-grok-exec", "/o/okstra"),
            file("/h/notes.md"),
            file("/h/.claude/skills/okstra/../../../notes/SKILL.md"),
            Record::Hooks {
                path: "/h/.bashrc".into(),
                groups: Vec::new(),
                created: true,
                backup: None,
                backup_sha256: None,
            },
        ] {
            assert!(places.check(&refused).is_err(), "{refused:?}");
        }
        let records = [file("/h/.claude/skills/okstra/SKILL.md")];
        for (dir, created) in [
            ("/h/.claude/skills/okstra", true),
            ("/h/.claude", true),
            ("/h/.local/state/okstra", true),
            ("/h/.claude/skills/okstra/SKILL.md", false),
            ("/h/Documents", false),
            ("/h/.claude/../Documents", false),
        ] {
            assert_eq!(
                places.is_created_dir(Path::new(dir), &records),
                created,
                "{dir}"
            );
        }
        assert!(places.is_backup_of(
            Path::new("/h/.claude/settings.json"),
            Path::new("/h/.local/state/okstra/backups/h%.claude%settings.json")
        ));
    }
}
