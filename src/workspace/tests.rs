use std::process::Command;

use super::removal::remove_in;
use super::*;

fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| OsString::from(value))
    }
}

#[test]
fn copies_live_under_the_state_home_never_in_the_project() {
    assert_eq!(
        workspaces_root(&env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")])).unwrap(),
        PathBuf::from("/s/okstra/workspaces")
    );
    // A relative or empty XDG_STATE_HOME is ignored, as the spec says.
    for state in ["", "rel/state"] {
        let pairs: &'static [(&'static str, &'static str)] = match state {
            "" => &[("XDG_STATE_HOME", ""), ("HOME", "/h")],
            _ => &[("XDG_STATE_HOME", "rel/state"), ("HOME", "/h")],
        };
        assert_eq!(
            workspaces_root(&env(pairs)).unwrap(),
            PathBuf::from("/h/.local/state/okstra/workspaces")
        );
    }
    assert!(matches!(
        workspaces_root(&env(&[("HOME", "relative")])),
        Err(Error::NoStateHome)
    ));
}

#[test]
fn the_path_is_fixed_by_project_task_run_and_worker() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let place = |worker: &str| {
        locate_in(
            Path::new("/w"),
            &root,
            "demo/shop/t1",
            "project-analysis-001",
            worker,
        )
    };
    let kimi = place("kimi").unwrap();
    let hash = project_hash(&root);
    assert_eq!(hash.len(), 16);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        kimi.root,
        PathBuf::from(format!("/w/{hash}/demo/shop/t1/project-analysis-001/kimi"))
    );
    assert_eq!(
        kimi.project, kimi.root,
        "outside git the copy is the project"
    );
    assert!(!kimi.in_git);
    assert_eq!(place("kimi").unwrap(), kimi, "the same every time");
    assert_ne!(place("grok").unwrap().root, kimi.root);
    // Another project gets another folder.
    let other = tempfile::tempdir().unwrap();
    let elsewhere = locate_in(
        Path::new("/w"),
        other.path(),
        "demo/shop/t1",
        "project-analysis-001",
        "kimi",
    )
    .unwrap();
    assert_ne!(elsewhere.root, kimi.root);
    // Names that are not slugs never become path components.
    for (key, run, worker) in [
        ("demo/../t1", "r-001", "kimi"),
        ("demo/shop", "r-001", "kimi"),
        ("demo/shop/t1", "..", "kimi"),
        ("demo/shop/t1", "r-001", "../../etc"),
        ("demo/shop/t1", "r-001", ""),
    ] {
        assert!(
            matches!(
                locate_in(Path::new("/w"), &root, key, run, worker),
                Err(Error::Name { .. })
            ),
            "{key} {run} {worker}"
        );
    }
}

#[test]
fn a_project_in_a_subfolder_of_its_repository_keeps_its_place_in_the_copy() {
    let repo = tempfile::tempdir().unwrap();
    let top = repo.path().canonicalize().unwrap();
    std::fs::create_dir_all(top.join(".git")).unwrap();
    std::fs::create_dir_all(top.join("services/api")).unwrap();
    let located = locate_in(
        Path::new("/w"),
        &top.join("services/api"),
        "p/g/t",
        "r-001",
        "kimi",
    )
    .unwrap();
    assert!(located.in_git);
    assert_eq!(located.project, located.root.join("services/api"));
}

#[test]
fn snapshot_refs_differ_per_run_and_stay_valid_ref_names() {
    let run = |id: &str, created: &str| RunIdentity {
        project_root: "/p".into(),
        task_key: "a/b/c".into(),
        run_id: id.into(),
        run_dir: "/p/.okstra/tasks/a/b/c/x".into(),
        created_at: created.into(),
    };
    let first = snapshot_ref(&run("project-analysis-001", "2026-01-01T00:00:00.000Z"));
    assert!(first.starts_with("refs/okstra/snapshots/project-analysis-001-"));
    assert_eq!(
        first,
        snapshot_ref(&run("project-analysis-001", "2026-01-01T00:00:00.000Z"))
    );
    // The same id made again later (after `.okstra/` was deleted) is another run.
    assert_ne!(
        first,
        snapshot_ref(&run("project-analysis-001", "2026-02-01T00:00:00.000Z"))
    );
    let odd = snapshot_ref(&run("a..b.lock", "t"));
    let status = Command::new("git")
        .args(["check-ref-format", &odd])
        .status()
        .unwrap();
    assert!(status.success(), "{odd}");
}

#[test]
fn clis_without_a_read_only_mode_and_every_implementation_worker_need_a_copy() {
    assert!(needs_copy(Provider::Kimi, Role::Analyser));
    assert!(needs_copy(Provider::Grok, Role::Critic));
    assert!(needs_copy(Provider::Kimi, Role::Verifier));
    assert!(!needs_copy(Provider::Claude, Role::Analyser));
    assert!(!needs_copy(Provider::Codex, Role::Critic));
    assert!(!needs_copy(Provider::Claude, Role::ReportWriter));
    // The Executor's change goes onto a branch; verifiers see it in theirs.
    for provider in [Provider::Claude, Provider::Codex, Provider::Kimi] {
        assert!(needs_copy(provider, Role::Executor));
        assert!(needs_copy(provider, Role::Verifier));
    }
}

#[test]
fn a_run_branch_lives_under_okstras_own_namespace() {
    let run = RunIdentity {
        project_root: PathBuf::from("/p"),
        task_key: "shop/cart/expiry".into(),
        run_id: "implementation-001".into(),
        run_dir: PathBuf::from("/p/.okstra/tasks/shop/cart/expiry/implementation-001"),
        created_at: "2026-11-30T00:00:00Z".into(),
    };
    assert_eq!(
        branch_ref(&run).unwrap(),
        "refs/heads/okstra/shop/cart/expiry/implementation-001"
    );
    for bad in ["a..b/c/d", "a/b./c", "a/b/c.lock"] {
        let run = RunIdentity {
            task_key: bad.into(),
            ..run.clone()
        };
        assert!(matches!(branch_ref(&run), Err(Error::Name { .. })), "{bad}");
    }
}

#[test]
fn only_a_folder_whose_marker_names_the_run_is_removed() {
    let base = tempfile::tempdir().unwrap();
    let project = base.path().join("project");
    let run_dir = project.join(".okstra/tasks/p/g/t/r-001");
    std::fs::create_dir_all(&run_dir).unwrap();
    let workspaces = base.path().join("workspaces");
    let copy = workspaces.join("h/p/g/t/r-001/kimi");
    std::fs::create_dir_all(copy.join("src")).unwrap();
    let remove = |path: &Path, kind: WorkspaceKind, project: &Path, run: &Path| {
        remove_in(&workspaces, path, kind, project, run)
    };
    let marker = Marker {
        schema_version: MARKER_VERSION,
        project_root: canonical(&project),
        run_dir: canonical(&run_dir),
        worker_id: "kimi".into(),
        kind: WorkspaceKind::FileCopy,
        snapshot_ref: None,
        created_at: "now".into(),
    };
    // No marker: left alone.
    assert!(matches!(
        remove(&copy, WorkspaceKind::FileCopy, &project, &run_dir),
        Err(Error::Foreign { .. })
    ));
    marker.write(&copy).unwrap();
    // A marker of another run: left alone.
    let other_run = project.join(".okstra/tasks/p/g/t/r-002");
    std::fs::create_dir_all(&other_run).unwrap();
    assert!(matches!(
        remove(&copy, WorkspaceKind::FileCopy, &project, &other_run),
        Err(Error::Foreign { .. })
    ));
    // A symlink to it is never followed, nor one on the way to it.
    let link = workspaces.join("h/p/g/t/r-001/codex");
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    assert!(remove(&link, WorkspaceKind::FileCopy, &project, &run_dir).is_err());
    let parent_link = workspaces.join("h/p/g/t/linked");
    std::os::unix::fs::symlink(copy.parent().unwrap(), &parent_link).unwrap();
    assert!(matches!(
        remove(
            &parent_link.join("kimi"),
            WorkspaceKind::FileCopy,
            &project,
            &run_dir
        ),
        Err(Error::Foreign { .. })
    ));
    // The marker copied into a folder of another name, or outside the
    // workspaces folder, proves nothing.
    for elsewhere in [workspaces.join("h/p/g/t/r-001/grok"), project.join("src")] {
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::copy(copy.join(MARKER), elsewhere.join(MARKER)).unwrap();
        assert!(matches!(
            remove(&elsewhere, WorkspaceKind::FileCopy, &project, &run_dir),
            Err(Error::Foreign { .. })
        ));
        assert!(elsewhere.is_dir());
    }
    assert!(copy.is_dir());
    remove(&copy, WorkspaceKind::FileCopy, &project, &run_dir).unwrap();
    assert!(!copy.exists());
    // Already gone is removed.
    remove(&copy, WorkspaceKind::FileCopy, &project, &run_dir).unwrap();
    // An in-place workspace: only a symlink to the project goes.
    std::os::unix::fs::symlink(&project, &copy).unwrap();
    assert!(remove(&copy, WorkspaceKind::None, base.path(), &run_dir).is_err());
    remove(&copy, WorkspaceKind::None, &project, &run_dir).unwrap();
    assert!(!copy.exists() && project.is_dir());
}

#[test]
fn under_landlock_only_the_executor_has_a_copy_and_verifiers_read_it() {
    use Containment::{Copies, Landlock};
    use Provider::{Claude, Codex, Grok, Kimi};
    use Role::{Analyser, Critic, Executor, Verifier};
    use Runner::{CliWrapper, NativeSession};
    // (provider, role, runner, containment) → whose copy, if any.
    let cases = [
        (Kimi, Analyser, CliWrapper, Landlock, None),
        (Grok, Critic, CliWrapper, Landlock, None),
        (Claude, Analyser, CliWrapper, Landlock, None),
        (Claude, Executor, CliWrapper, Landlock, Some("me")),
        (Kimi, Verifier, CliWrapper, Landlock, Some("exec")),
        (Codex, Verifier, CliWrapper, Landlock, Some("exec")),
        // A host's session is not confined: a copy of its own, as before.
        (Claude, Verifier, NativeSession, Landlock, Some("me")),
        (Claude, Analyser, NativeSession, Landlock, None),
        // Contained by copies: every CLI with no read-only mode, the
        // Executor and every verifier in a copy of its own.
        (Kimi, Analyser, CliWrapper, Copies, Some("me")),
        (Grok, Critic, CliWrapper, Copies, Some("me")),
        (Claude, Analyser, CliWrapper, Copies, None),
        (Claude, Executor, CliWrapper, Copies, Some("me")),
        (Codex, Verifier, CliWrapper, Copies, Some("me")),
    ];
    for (provider, role, runner, containment, owner) in cases {
        let worker = Worker {
            id: "me",
            provider,
            role,
            runner,
        };
        assert_eq!(
            copy_owner(&worker, containment, Some("exec")),
            owner,
            "{provider} {role} {runner} {containment}"
        );
    }
    // No Executor to read (a run without one): the verifier's own.
    let verifier = Worker {
        id: "me",
        provider: Kimi,
        role: Verifier,
        runner: CliWrapper,
    };
    assert_eq!(copy_owner(&verifier, Landlock, None), Some("me"));
}
