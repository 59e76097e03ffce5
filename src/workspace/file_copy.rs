//! A file copy of a project outside git: the files its ignore rules keep
//! (`.gitignore`, `.ignore`, the user's global git excludes — matched by
//! the `ignore` crate, ripgrep's), never `.okstra/` or a `.git` (a `.git`
//! file would lead a CLI's git back into the user's repository), within
//! [`MAX_COPY_FILES`] files and [`MAX_COPY_BYTES`] bytes.
//!
//! Everything is counted before anything is copied, so a project over the
//! bound is refused without writing a byte. Regular files keep their mode;
//! symlinks stay symlinks, except that one pointing into the project by an
//! absolute path is pointed at the copy instead (a write through it would
//! land in the project). FIFOs, sockets and devices are skipped.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::{Error, Location, MAX_COPY_BYTES, MAX_COPY_FILES, Marker};

/// One thing to copy, relative to the project.
enum Entry {
    Dir(PathBuf),
    File(PathBuf),
    Link(PathBuf),
}

/// Make the file copy of `project` at `location` (rebuilt when one exists).
pub(super) fn make(project: &Path, location: &Location, marker: &Marker) -> Result<(), Error> {
    let entries = list(project)?;
    let root = &location.root;
    if root.symlink_metadata().is_ok() {
        match Marker::read(root) {
            Some(found) if found.project_root == marker.project_root => {
                std::fs::remove_dir_all(root).map_err(Error::io("remove", root))?;
            }
            _ => {
                return Err(Error::Foreign {
                    path: root.clone(),
                    why: "something else is where its copy belongs".into(),
                });
            }
        }
    }
    std::fs::create_dir_all(root).map_err(Error::io("create", root))?;
    marker.write(root)?;
    for entry in &entries {
        match entry {
            Entry::Dir(relative) => {
                let to = root.join(relative);
                std::fs::create_dir_all(&to).map_err(Error::io("create", &to))?;
            }
            Entry::File(relative) => {
                let to = root.join(relative);
                std::fs::copy(project.join(relative), &to).map_err(Error::io("copy to", &to))?;
            }
            Entry::Link(relative) => {
                let from = project.join(relative);
                let target = std::fs::read_link(&from).map_err(Error::io("read", &from))?;
                let target = match target.strip_prefix(project) {
                    Ok(inside) if target.is_absolute() => root.join(inside),
                    _ => target,
                };
                let to = root.join(relative);
                std::os::unix::fs::symlink(&target, &to).map_err(Error::io("link", &to))?;
            }
        }
    }
    Ok(())
}

/// Everything to copy, parents before children; refused over the bound.
fn list(project: &Path) -> Result<Vec<Entry>, Error> {
    let walk = WalkBuilder::new(project)
        .hidden(false)
        .parents(false)
        .require_git(false)
        .git_exclude(false)
        .follow_links(false)
        .filter_entry(|entry| {
            entry.depth() == 0 || !matches!(entry.file_name().to_str(), Some(".okstra" | ".git"))
        })
        .build();
    let too_large = |limit: String| Error::TooLarge {
        project: project.to_path_buf(),
        limit,
    };
    let mut entries = Vec::new();
    let (mut files, mut bytes) = (0_u64, 0_u64);
    for found in walk {
        let found = found.map_err(|source| Error::Walk {
            path: project.to_path_buf(),
            source,
        })?;
        if found.depth() == 0 {
            continue;
        }
        let Ok(relative) = found.path().strip_prefix(project) else {
            continue;
        };
        let relative = relative.to_path_buf();
        let Some(kind) = found.file_type() else {
            continue;
        };
        if kind.is_dir() {
            entries.push(Entry::Dir(relative));
            continue;
        }
        if kind.is_symlink() {
            entries.push(Entry::Link(relative));
        } else if kind.is_file() {
            let size = found
                .metadata()
                .map_err(|source| Error::Walk {
                    path: found.path().to_path_buf(),
                    source,
                })?
                .len();
            bytes += size;
            entries.push(Entry::File(relative));
        } else {
            continue;
        }
        files += 1;
        if files > MAX_COPY_FILES {
            return Err(too_large(format!("{MAX_COPY_FILES} files")));
        }
        if bytes > MAX_COPY_BYTES {
            return Err(too_large(format!("{} MiB", MAX_COPY_BYTES >> 20)));
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(entries: &[Entry]) -> Vec<String> {
        let mut names: Vec<String> = entries
            .iter()
            .map(|entry| match entry {
                Entry::Dir(path) => format!("{}/", path.display()),
                Entry::File(path) => path.display().to_string(),
                Entry::Link(path) => format!("{}@", path.display()),
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn ignore_rules_hold_outside_git_and_okstra_and_git_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            (".gitignore", "*.log\n"),
            (".ignore", "data/\n"),
            ("src/a.py", "a"),
            ("src/b.log", "log"),
            ("data/dump.bin", "big"),
            (".okstra/run.log", "run"),
            (".hidden", "kept"),
            ("sub/.git", "gitdir: /elsewhere\n"),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        std::os::unix::fs::symlink("src/a.py", root.join("link")).unwrap();
        assert_eq!(
            names(&list(root).unwrap()),
            [
                ".gitignore",
                ".hidden",
                ".ignore",
                "link@",
                "src/",
                "src/a.py",
                "sub/"
            ]
        );
    }
}
