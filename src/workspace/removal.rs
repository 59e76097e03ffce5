//! Which folders okstra may remove as its own copies, and removing them: a
//! path from a record counts only when it lies beneath okstra's workspaces
//! folder through no symlink and its marker names the run and the worker.

use super::{Error, Marker, canonical, git_copy, own_git_dir, workspaces_root};
use crate::vocab::WorkspaceKind;
use std::io;
use std::path::Path;

/// Whether the folder at `path` is a copy of `run_dir` of `project_root`:
/// a real folder beneath okstra's workspaces folder ([`workspaces_root`]),
/// reached through no symlink, whose marker names both and the worker the
/// folder is named for. A path from a record is never used on the record's
/// word alone; a marker copied anywhere else proves nothing.
pub fn owned(path: &Path, project_root: &Path, run_dir: &Path) -> Result<(), Error> {
    let workspaces = workspaces_root(&|name| std::env::var_os(name))?;
    owned_in(&workspaces, path, project_root, run_dir)
}

pub(super) fn owned_in(
    workspaces: &Path,
    path: &Path,
    project_root: &Path,
    run_dir: &Path,
) -> Result<(), Error> {
    let foreign = |why: &str| Error::Foreign {
        path: path.to_path_buf(),
        why: why.to_owned(),
    };
    beneath(workspaces, path, false)?;
    match path.symlink_metadata() {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(foreign("not a folder")),
        Err(source) => {
            return Err(Error::Io {
                action: "inspect",
                path: path.to_path_buf(),
                source,
            });
        }
    }
    let Some(marker) = Marker::read(path) else {
        return Err(foreign("it holds no okstra marker"));
    };
    if canonical(&marker.project_root) != canonical(project_root)
        || canonical(&marker.run_dir) != canonical(run_dir)
    {
        return Err(foreign("its marker names another run"));
    }
    if path.file_name() != Some(std::ffi::OsStr::new(&marker.worker_id)) {
        return Err(foreign("its marker names another worker's copy"));
    }
    Ok(())
}

/// `path` lies beneath `workspaces` (as given, or resolved), as plain
/// names, none of them a symlink — but the last when `last_may_link` (an
/// in-place workspace is one). Checked on the way down, so a folder above
/// the copy that leads elsewhere (`…/run/link` → the project) is refused.
pub(super) fn beneath(workspaces: &Path, path: &Path, last_may_link: bool) -> Result<(), Error> {
    let foreign = |why: String| Error::Foreign {
        path: path.to_path_buf(),
        why,
    };
    let resolved = canonical(workspaces);
    let Some((base, rest)) = [workspaces, resolved.as_path()]
        .into_iter()
        .find_map(|base| Some((base, path.strip_prefix(base).ok()?)))
    else {
        return Err(foreign(format!(
            "it is not beneath okstra's workspaces folder `{}`",
            workspaces.display()
        )));
    };
    let names: Vec<&std::ffi::OsStr> = rest
        .components()
        .map(|component| match component {
            std::path::Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect::<Option<_>>()
        .filter(|names: &Vec<_>| !names.is_empty())
        .ok_or_else(|| {
            foreign("it is not a plain path beneath okstra's workspaces folder".into())
        })?;
    let mut at = base.to_path_buf();
    for (index, name) in names.iter().enumerate() {
        at.push(name);
        let last = index + 1 == names.len();
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() && !(last && last_may_link) => {
                return Err(foreign(format!(
                    "`{}` on the way to it is a symlink",
                    at.display()
                )));
            }
            Ok(_) => {}
            Err(source) => {
                return Err(Error::Io {
                    action: "inspect",
                    path: at,
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Remove the workspace at `path` of `kind`, when it is provably okstra's
/// for `run_dir` of `project_root`: beneath okstra's workspaces folder
/// through no symlink, a copy whose marker names the run and its worker
/// ([`owned`]), or a symlink to the project itself. A path that does not
/// exist is already removed. Anything else is left alone and is an
/// [`Error::Foreign`].
pub fn remove(
    path: &Path,
    kind: WorkspaceKind,
    project_root: &Path,
    run_dir: &Path,
) -> Result<(), Error> {
    let workspaces = workspaces_root(&|name| std::env::var_os(name))?;
    remove_in(&workspaces, path, kind, project_root, run_dir)
}

/// Whether [`remove`] would remove something at `path` (`false`: nothing
/// is there); `Err` is why it would not.
pub fn removable(
    path: &Path,
    kind: WorkspaceKind,
    project_root: &Path,
    run_dir: &Path,
) -> Result<bool, Error> {
    let workspaces = workspaces_root(&|name| std::env::var_os(name))?;
    removable_in(&workspaces, path, kind, project_root, run_dir)
}

pub(super) fn removable_in(
    workspaces: &Path,
    path: &Path,
    kind: WorkspaceKind,
    project_root: &Path,
    run_dir: &Path,
) -> Result<bool, Error> {
    match path.symlink_metadata() {
        Ok(_) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(Error::Io {
                action: "inspect",
                path: path.to_path_buf(),
                source,
            });
        }
    }
    if kind != WorkspaceKind::None {
        owned_in(workspaces, path, project_root, run_dir)?;
        return Ok(true);
    }
    let foreign = |why: &str| Error::Foreign {
        path: path.to_path_buf(),
        why: why.to_owned(),
    };
    beneath(workspaces, path, true)?;
    if !path
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink())
    {
        return Err(foreign(
            "an in-place workspace is a symlink, and this is not",
        ));
    }
    let target = std::fs::read_link(path).map_err(Error::io("read", path))?;
    if canonical(&target) != canonical(project_root) {
        return Err(foreign("the symlink does not lead to the project"));
    }
    Ok(true)
}

pub(super) fn remove_in(
    workspaces: &Path,
    path: &Path,
    kind: WorkspaceKind,
    project_root: &Path,
    run_dir: &Path,
) -> Result<(), Error> {
    if !removable_in(workspaces, path, kind, project_root, run_dir)? {
        return Ok(());
    }
    if kind == WorkspaceKind::None {
        return std::fs::remove_file(path).map_err(Error::io("remove", path));
    }
    std::fs::remove_dir_all(path).map_err(Error::io("remove", path))?;
    if kind == WorkspaceKind::GitCopy {
        // okstra's own git directory for it and its lock, beside it;
        // unlinked, never followed, whatever is there.
        let own = own_git_dir(path);
        git_copy::remove_entry(&own.with_extension("lock"))?;
        git_copy::remove_entry(&own)?;
        // The folder of okstra's git directories goes with its last one
        // (only while it is empty), so an emptied run folder can go too.
        if let Some(folder) = own.parent() {
            let _ = std::fs::remove_dir(folder);
        }
    }
    Ok(())
}
