//! `okstra install --uninstall`: remove what the manifest records, and only
//! that. A link is removed only while it still points at the recorded
//! okstra, a file only while its hash still matches, a folder only when
//! empty; okstra's hook groups are taken out of settings files, and the
//! backup is put back byte for byte when nothing else changed since.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::json_doc::{self, Json};
use super::{HookRecord, Out, Record, State, read_manifest, read_small, remove_file};
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
    let mut dirs = Vec::new();
    let mut left = 0_usize;
    for record in manifest.records.iter().rev() {
        match record {
            Record::Dir { path } => dirs.push(path.clone()),
            Record::Link { path, target } => {
                if fs::read_link(path).is_ok_and(|current| current == *target) {
                    if !out.dry_run {
                        remove_file(path)?;
                    }
                    out.change(
                        &format!("removed `{}`", path.display()),
                        &format!("would remove `{}`", path.display()),
                    );
                } else if path.symlink_metadata().is_ok() {
                    left += 1;
                    warn_left(path);
                }
            }
            Record::File { path, sha256 } => match read_small(path)? {
                Some(bytes) if sha256_hex(&bytes) == *sha256 => {
                    if !out.dry_run {
                        remove_file(path)?;
                    }
                    out.change(
                        &format!("removed `{}`", path.display()),
                        &format!("would remove `{}`", path.display()),
                    );
                }
                Some(_) => {
                    left += 1;
                    warn_left(path);
                }
                None => {}
            },
            Record::Hooks {
                path,
                groups,
                created,
                backup,
            } => unmerge_settings(path, groups, *created, backup.as_deref(), out)?,
        }
    }
    if !out.dry_run {
        remove_file(&state.manifest)?;
    }
    out.change(
        &format!("removed `{}`", state.manifest.display()),
        &format!("would remove `{}`", state.manifest.display()),
    );
    // Deepest first, and only when empty: a folder the user filled stays.
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in dirs {
        if out.dry_run {
            out.change("", &format!("would remove `{}` if empty", dir.display()));
        } else if fs::remove_dir(&dir).is_ok() {
            out.change(&format!("removed `{}`", dir.display()), "");
        }
    }
    if left > 0 {
        diag::progress(format_args!(
            "left {left} changed file(s) in place; remove them yourself if you no longer want them"
        ));
    }
    Ok(ExitStatus::Success)
}

fn warn_left(path: &Path) {
    diag::warning(format_args!(
        "left `{}`: it changed since okstra installed it",
        path.display()
    ));
}

/// Take okstra's hook groups out of `path`; restore the backup when the
/// result is what the file was before okstra touched it.
fn unmerge_settings(
    path: &Path,
    groups: &[HookRecord],
    created: bool,
    backup: Option<&Path>,
    out: &mut Out,
) -> Result<()> {
    let real = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let Some(bytes) = read_small(&real)? else {
        return Ok(());
    };
    let text =
        String::from_utf8(bytes).with_context(|| format!("`{}` is not UTF-8", path.display()))?;
    let mut doc = Json::parse(&text).with_context(|| {
        format!(
            "`{}` is not valid JSON; fix it, then uninstall again",
            path.display()
        )
    })?;
    for record in groups {
        json_doc::unmerge_hook(&mut doc, &record.event, &record.group);
    }
    let original = match backup {
        Some(backup) => read_small(backup)?,
        None => None,
    };
    let restored = original.as_ref().filter(|bytes| {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| Json::parse(text).ok())
            .is_some_and(|before| before == doc)
    });
    let remove = created && doc == Json::Object(Vec::new());
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
                Some(bytes) => durable::write_atomic(&real, bytes)
                    .with_context(|| format!("cannot write `{}`", real.display()))?,
            }
        }
        out.change(
            &format!("removed okstra's hooks from `{}`", path.display()),
            &format!("would remove okstra's hooks from `{}`", path.display()),
        );
    }
    if let Some(backup) = backup
        && !out.dry_run
    {
        remove_file(backup)?;
    }
    Ok(())
}
