//! provider-exec: its two entries, the wrapper's own binary
//! (`okstra-provider-exec`, which `okstra dispatch` starts) and `okstra
//! provider-exec` (the fallback, and the documented command), do the same
//! for the same call: exit code, stdout, stderr, log, sidecar and the CLI's
//! argv.

use pretty_assertions::assert_eq;
use serde_json::Map;

use crate::support::limit;

use super::*;

/// What one call left behind, with the world's own folder written
/// `<world>` and the fields that differ between any two runs (pids, times)
/// left out.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    log: Option<Vec<u8>>,
    sidecar: Option<Map<String, Value>>,
    argv: Option<String>,
}

/// The sidecar fields that are this run's own.
const VOLATILE: [&str; 7] = [
    "pid",
    "child_pid",
    "pgid",
    "started_ts",
    "ended_ts",
    "duration_ms",
    "idle_at_ts",
];

/// One call of `case` through `program` with `lead` before its arguments,
/// in a world of its own where `binary` runs `script` (none when `script`
/// is empty).
fn outcome(program: &Path, lead: &[&str], case: &Case) -> Outcome {
    let world = World::empty();
    if !case.script.is_empty() {
        world.install(case.binary, case.script);
    }
    let mut args = world.args(case.provider, case.extra);
    if let Some(keep) = case.keep {
        args.truncate(keep);
    }
    let args: Vec<OsString> = lead.iter().map(OsString::from).chain(args).collect();
    let run = world.run_with(world.spawn_program(program, &args), limit());
    let base = world.path("");
    let base = base.to_str().unwrap().trim_end_matches('/');
    let neutral = |text: &str| text.replace(base, "<world>");
    let sidecar = world.sidecar().is_file().then(|| {
        let text = neutral(&fs::read_to_string(world.sidecar()).unwrap());
        let mut fields: Map<String, Value> = serde_json::from_str(&text).unwrap();
        for name in VOLATILE {
            fields.remove(name);
        }
        fields
    });
    let cli_argv = world
        .fake()
        .join("argv")
        .is_file()
        .then(|| neutral(&String::from_utf8_lossy(&world.recorded("argv"))));
    Outcome {
        code: run.code(),
        stdout: run.stdout,
        stderr: neutral(&run.stderr),
        log: fs::read(world.log()).ok(),
        sidecar,
        argv: cli_argv,
    }
}

/// One call: `provider` with `extra` arguments, `binary` on `PATH`
/// running `providers/<script>`; `keep` cuts the arguments short; `code`
/// is the exit code both entries must end with.
struct Case {
    provider: &'static str,
    binary: &'static str,
    script: &'static str,
    extra: &'static [&'static str],
    keep: Option<usize>,
    code: i32,
}

const fn case(provider: &'static str, script: &'static str, code: i32) -> Case {
    Case {
        provider,
        binary: provider,
        script,
        extra: &[],
        keep: None,
        code,
    }
}

#[test]
fn the_wrapper_binary_and_okstra_provider_exec_behave_the_same() {
    let cases = [
        // A run that succeeds, one that fails, one killed by a signal,
        // bytes that are not UTF-8.
        case("claude", "ok.sh", 0),
        case("codex", "fail.sh", 3),
        case("kimi", "killed.sh", 137),
        case("grok", "binary.sh", 0),
        // The CLI's argv and a role's own idle timeout in the sidecar.
        Case {
            extra: &["", "executor"],
            ..case("grok", "record.sh", 0)
        },
        // Refusals: too few arguments, a bad idle timeout, no CLI on PATH.
        Case {
            keep: Some(3),
            ..case("claude", "ok.sh", 64)
        },
        Case {
            extra: &["", "", "5s"],
            ..case("codex", "ok.sh", 69)
        },
        case("grok", "", 127),
        // Help, on stdout.
        Case {
            binary: "claude",
            keep: Some(1),
            ..case("--help", "ok.sh", 0)
        },
    ];
    for case in &cases {
        let what = format!("{} {} {:?}", case.provider, case.script, case.extra);
        let own = outcome(&wrapper_path(), &[], case);
        assert_eq!(own.code, case.code, "{what}: {}", own.stderr);
        // The CLI ran (help and refusals start nothing): there is
        // something to compare.
        let started = case.keep.is_none() && matches!(case.code, 0 | 3 | 137);
        assert_eq!(own.sidecar.is_some(), started, "{what}");
        assert_eq!(own.log.is_some(), started, "{what}");
        let okstra = outcome(&okstra_path(), &["provider-exec"], case);
        assert_eq!(own, okstra, "{what}");
    }
}
