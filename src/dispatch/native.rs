//! `native-session` dispatches: attempts the host runs as its own
//! sub-agents, okstra's side of them.
//!
//! [`hand_out`] gives the host one attempt (for `okstra next`, and `okstra
//! dispatch` when it meets one): a dispatch record, started, with a fresh
//! nonce, and a task file beside the prompt
//! (`prompts/<dispatch>.attempt-<N>.task.md`) that points at the prompt and
//! gives the attempt's tagged marker line. The rendered prompt is never
//! rewritten, so its bytes — which key a completed attempt on resume — stay
//! the same for every attempt.
//!
//! [`accept`] is the one way back, and the trust boundary: only a native
//! attempt that was handed out and has not ended (or the byte-identical
//! answer again), only a result block whose begin line carries that
//! attempt's nonce (round 1's answer cannot pass for round 2's), extracted
//! exactly as a wrapper worker's is (`recover`), no larger than the result
//! limit every reader of a result keeps (`fsread::Kind::Result`: a larger
//! one is refused, nothing written), written atomically to the
//! Result and worker-results paths, the attempt closed `completed` (or
//! `empty-output`, with why) and its provenance kept: `hook` when okstra's
//! sub-agent-stop hook took the sub-agent's final message, `relayed` when
//! someone passed it to `okstra submit`.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::catalog::{DispatchKind, Runner};
use crate::digest::sha256_hex;
use crate::run::Run;
use crate::run::events;
use crate::run::layout;
use crate::run::team_state::{self, DispatchRecord, Edit, TeamState};
use crate::vocab::{Ending, Recovery, Word};

use super::attempt;
use super::recover::{self, RESULT_END, WORKER_RESULTS_BEGIN, WORKER_RESULTS_END};
use super::select::Planned;
use crate::vocab::EventKind;
use crate::vocab::Provenance;

/// The start of every result block's begin line; a native attempt's goes on
/// with its tag.
const BEGIN_PREFIX: &str = "=== OKSTRA RESULT BEGIN";
/// Lines of a refused or empty answer kept in the record, as a log tail.
const TAIL_LINES: usize = 40;
/// How long the hook waits for the team state's lock: a host waits for its
/// hook before it goes on, and a write in progress takes milliseconds. Past
/// this the answer is left for `okstra submit` (a busy
/// [`crate::durable::lock::Error`]).
pub const HOOK_LOCK_WAIT: Duration = Duration::from_secs(5);

/// What a native attempt's begin line says: which run, dispatch and attempt
/// the block answers, and the attempt's nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub dispatch: String,
    pub attempt: u32,
    pub nonce: String,
    pub run_dir: PathBuf,
}

impl Tag {
    /// `=== OKSTRA RESULT BEGIN dispatch=<name> attempt=<N> nonce=<hex>
    /// run=<run folder> ===` (the run folder last: it may hold spaces).
    pub fn line(&self) -> String {
        format!(
            "{BEGIN_PREFIX} dispatch={} attempt={} nonce={} run={} ===",
            self.dispatch,
            self.attempt,
            self.nonce,
            self.run_dir.display()
        )
    }

    /// The tag of a begin line, if it is a tagged one.
    pub fn parse(line: &str) -> Option<Tag> {
        let rest = line
            .trim()
            .strip_prefix(BEGIN_PREFIX)?
            .strip_prefix(' ')?
            .strip_suffix(" ===")?;
        let (dispatch, rest) = rest.strip_prefix("dispatch=")?.split_once(' ')?;
        let (attempt, rest) = rest.strip_prefix("attempt=")?.split_once(' ')?;
        let (nonce, run_dir) = rest.strip_prefix("nonce=")?.split_once(' ')?;
        let run_dir = run_dir.strip_prefix("run=")?;
        let plain = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
        if !plain(dispatch) || !plain(nonce) || run_dir.is_empty() {
            return None;
        }
        Some(Tag {
            dispatch: dispatch.to_owned(),
            attempt: attempt.parse().ok()?,
            nonce: nonce.to_owned(),
            run_dir: PathBuf::from(run_dir),
        })
    }

    /// The newest tagged begin line of `text` (complete block or not).
    pub fn last_in(text: &str) -> Option<Tag> {
        text.lines().rev().find_map(Tag::parse)
    }
}

/// One attempt handed to the host.
#[derive(Debug, Clone)]
pub struct Handout {
    pub record: DispatchRecord,
    /// The task file the host gives its sub-agent.
    pub task_path: PathBuf,
    /// The command line that takes the sub-agent's final message on stdin.
    pub submit: String,
}

/// The `okstra submit` line of `dispatch_name` in `run`.
pub fn submit_line(run: &Run, dispatch_name: &str) -> String {
    crate::shell::okstra_line(&["submit", &run.dir.to_string_lossy(), dispatch_name, "-"])
}

/// Hand `planned` (a `native-session` dispatch) to the host: the attempt
/// already handed out if one is open (the same nonce: asking twice is
/// harmless), else its next attempt — the worker's one retry, spent, when
/// the last attempt on the same prompt failed. Decided again under the
/// team state's lock, from the state as it is then: two callers never hand
/// out two attempts, and an attempt answered meanwhile is not handed out
/// again (`None`).
pub fn hand_out(run: &Run, planned: &Planned) -> Result<Option<Handout>> {
    super::snapshot_before_reviewers(run, std::slice::from_ref(planned));
    let prompt_sha256 = planned.prompt_hash();
    let Some(mut record) =
        team_state::transact(run, |state| decide(state, planned, prompt_sha256))?
    else {
        return Ok(None);
    };
    // A role that works in a copy gets it before the host is told of the
    // attempt (recorded first, then made); an attempt handed out again
    // keeps the copy, and the guard, it was given.
    if record.workspace.is_none() && crate::workspace::needs_copy(planned.provider, planned.role) {
        let state = run.team_state()?;
        super::place::native(run, &state, planned, &mut record)?;
        team_state::update(run, &[team_state::Change::Put(&record)])?;
    }
    let task_path = layout::task_file(&record.prompt_path, record.attempt);
    let submit = submit_line(run, &record.dispatch_name);
    let text = task_text(run, &record, &submit);
    super::write_if_changed(&task_path, text.as_bytes())?;
    Ok(Some(Handout {
        record,
        task_path,
        submit,
    }))
}

/// The attempt to hand out, and the edits that record it; none when the
/// host has nothing to run for `planned` now.
fn decide(
    state: &TeamState,
    planned: &Planned,
    prompt_sha256: Option<String>,
) -> Result<(Vec<Edit>, Option<DispatchRecord>)> {
    let latest = state.latest(&planned.dispatch_name);
    let facts = super::select::Facts {
        prompt_sha256: prompt_sha256.clone(),
        ..super::select::Facts::default()
    };
    if super::select::decide_in(planned, state, &facts)
        != super::select::Decision::Skip(super::select::Skip::Host)
    {
        return Ok((Vec::new(), None));
    }
    if let Some(open) = latest.filter(|r| r.ending.is_none()) {
        if open.runner != Some(Runner::NativeSession) {
            bail!(
                "`{}` attempt {} runs under okstra's wrapper, not in the host's session",
                open.dispatch_name,
                open.attempt
            );
        }
        if open.nonce.is_some() {
            return Ok((Vec::new(), Some(open.clone())));
        }
        // Recorded by an older `okstra dispatch`: give it its nonce now.
        let mut adopted = open.clone();
        adopted.nonce = Some(nonce(&adopted));
        if adopted.started_at.is_none() {
            adopted.start();
        }
        return Ok((vec![Edit::Put(Box::new(adopted.clone()))], Some(adopted)));
    }
    let mut next = planned.clone();
    next.attempt = latest.map_or(1, |r| r.attempt + 1);
    let mut edits = Vec::new();
    let failed_before = latest
        .filter(|r| r.prompt_path == planned.paths.prompt_path)
        .is_some_and(|r| r.ending != Some(Ending::Completed) && !r.was_interrupted());
    if failed_before {
        if state.retry_spent(&planned.assignment_name) {
            bail!(
                "`{}` has no attempt left: its one retry is spent",
                planned.dispatch_name
            );
        }
        next.kind = DispatchKind::Retry;
        edits.push(Edit::SpendRetry(planned.assignment_name.clone()));
    }
    let mut record = attempt::record(&next, prompt_sha256);
    record.dispatcher_pid = None;
    record.log_path = None;
    record.sidecar_path = None;
    record.start();
    record.nonce = Some(nonce(&record));
    edits.insert(0, Edit::Put(Box::new(record.clone())));
    Ok((edits, Some(record)))
}

/// A fresh nonce: 16 random bytes from the kernel, in hex; should that
/// fail, a digest of what makes this moment unique. It tells one attempt's
/// answer from another's, it guards no secret.
fn nonce(record: &DispatchRecord) -> String {
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if random.is_ok() {
        return bytes.iter().fold(String::with_capacity(32), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        });
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{} {} {} {nanos}",
        record.dispatch_name,
        record.attempt,
        std::process::id()
    );
    sha256_hex(seed.as_bytes())[..32].to_owned()
}

/// The task file: where the prompt is, the attempt's marker line, and how
/// the answer comes back on this host.
fn task_text(run: &Run, record: &DispatchRecord, submit: &str) -> String {
    let tag = Tag {
        dispatch: record.dispatch_name.clone(),
        attempt: record.attempt,
        nonce: record.nonce.clone().unwrap_or_default(),
        run_dir: run.dir.clone(),
    };
    let delivery = if run.lead_runtime.has_subagent_stop_hook() {
        format!(
            "okstra takes your final message when you stop. Only if you are asked to, also pass that same message on stdin to `{submit}`."
        )
    } else {
        format!(
            "This host has no okstra hook: before you stop, pass your final message on stdin to `{submit}` (for example with a quoted here-document), then print it as your final message."
        )
    };
    format!(
        "# okstra task: `{dispatch}`, attempt {attempt}\n\n\
         Read `{prompt}` completely and follow it exactly: it is your whole task, and you work on it alone.\n\n\
         Your final message carries your result blocks as that prompt shows, with one change: the first marker line is this one, exactly, because it tells okstra which task you answer:\n\n\
         {tag}\n\n\
         {delivery}\n",
        dispatch = record.dispatch_name,
        attempt = record.attempt,
        prompt = record.prompt_path.display(),
        tag = tag.line(),
    )
}

impl Provenance {
    /// The record's word for it (`recoveredFrom`).
    pub fn recovery(self) -> Recovery {
        match self {
            Provenance::Hook => Recovery::Hook,
            Provenance::Relayed => Recovery::Relayed,
        }
    }
}

/// What [`accept`] did.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The attempt's record as it now stands.
    pub record: DispatchRecord,
    /// The same answer had been recorded already: nothing changed.
    pub repeat: bool,
}

/// What an answer holds for one attempt.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    result: Option<String>,
    worker_results: Option<String>,
}

/// Take `message`, the answer to `dispatch_name`'s handed-out attempt (see
/// the module documentation). `Err` is a refusal: nothing was written. The
/// hook waits at most [`HOOK_LOCK_WAIT`] for the team state (then `Err` is
/// a busy [`crate::durable::lock::Error`], not a refusal); `okstra submit`
/// up to the team state's own bound.
pub fn accept(
    run: &Run,
    dispatch_name: &str,
    message: &[u8],
    agent_id: Option<&str>,
    provenance: Provenance,
) -> Result<Accepted> {
    let text = std::str::from_utf8(message)
        .with_context(|| format!("the answer for `{dispatch_name}` is not UTF-8 text"))?;
    let wait = match provenance {
        Provenance::Hook => Some(HOOK_LOCK_WAIT),
        Provenance::Relayed => None,
    };
    let accepted = team_state::transact_within(run, wait, |state| {
        let Some(latest) = state.latest(dispatch_name) else {
            bail!(
                "`{dispatch_name}` has no attempt in this run: `okstra next {}` hands out the native tasks and names them",
                run.dir.display()
            );
        };
        if latest.runner != Some(Runner::NativeSession) {
            bail!(
                "`{dispatch_name}` runs through okstra's wrapper (`cli-wrapper`): okstra takes its result from the CLI itself; `okstra submit` is for the native tasks `okstra next` hands out"
            );
        }
        let Some(nonce) = latest.nonce.as_deref() else {
            bail!(
                "attempt {} of `{dispatch_name}` was not handed out by `okstra next`, so no answer can be matched to it",
                latest.attempt
            );
        };
        let answer = read_answer(text, latest, nonce)?;
        let oversize = [
            ("result", &answer.result),
            ("worker-results", &answer.worker_results),
        ]
        .into_iter()
        .find_map(|(what, block)| recover::too_large(what, block.as_deref()?));
        if let Some(why) = oversize {
            bail!(
                "the answer to `{dispatch_name}` attempt {} is refused: {why}; nothing was written",
                latest.attempt
            );
        }
        if latest.ending.is_some() {
            if is_same(latest, &answer) {
                return Ok((
                    Vec::new(),
                    Accepted {
                        record: latest.clone(),
                        repeat: true,
                    },
                ));
            }
            bail!(
                "attempt {} of `{dispatch_name}` already has a different answer ({}, {}); a second answer is refused",
                latest.attempt,
                latest.ending.map_or("ended", Ending::as_str),
                latest
                    .recovered_from
                    .as_ref()
                    .map_or_else(|| "recorded".to_owned(), ToString::to_string)
            );
        }
        let record = close(run, latest, &answer, text, agent_id, provenance)?;
        let owner = run
            .assignment(&record.worker_id)
            .map_or_else(|| record.dispatch_name.clone(), |a| a.dispatch_name.clone());
        let mut edits = vec![Edit::Put(Box::new(record.clone()))];
        if let (true, Some(ending)) = (record.dispatch_name == owner, record.ending) {
            edits.push(Edit::Terminal(owner, ending));
        }
        Ok((
            edits,
            Accepted {
                record,
                repeat: false,
            },
        ))
    })?;
    if !accepted.repeat {
        record_events(run, &accepted.record);
    }
    Ok(accepted)
}

/// The blocks of `text` for the attempt `record` with nonce `nonce`: the
/// last complete result block tagged with it (and the worker-results block
/// of the message), none when no block is tagged for it. A block tagged
/// for another attempt is refused: it answers another task.
fn read_answer(text: &str, record: &DispatchRecord, nonce: &str) -> Result<Answer> {
    let own = |line: &str| Tag::parse(line).is_some_and(|tag| tag.nonce == nonce);
    if let Some((begin, result)) = recover::last_block_where(text, own, RESULT_END) {
        let tag = Tag::parse(&begin).context("the begin line was just parsed")?;
        if tag.dispatch != record.dispatch_name || tag.attempt != record.attempt {
            bail!(
                "the result block is tagged `{}` attempt {}, but its nonce is attempt {} of `{}`'s: the tag was edited",
                crate::fsread::escape(&tag.dispatch),
                tag.attempt,
                record.attempt,
                record.dispatch_name
            );
        }
        return Ok(Answer {
            result: Some(result),
            worker_results: recover::last_block(text, WORKER_RESULTS_BEGIN, WORKER_RESULTS_END),
        });
    }
    if let Some(other) = Tag::last_in(text) {
        bail!(
            "the answer is tagged for `{}` attempt {} (nonce `{}`), not for attempt {} of `{}`: it answers another task",
            crate::fsread::escape(&other.dispatch),
            other.attempt,
            crate::fsread::escape(&other.nonce),
            record.attempt,
            record.dispatch_name
        );
    }
    Ok(Answer {
        result: None,
        worker_results: None,
    })
}

/// Whether `answer` is what `record` already holds.
fn is_same(record: &DispatchRecord, answer: &Answer) -> bool {
    let sha = |text: &Option<String>| text.as_deref().map(|t| sha256_hex(t.as_bytes()));
    match (&answer.result, record.ending) {
        (None, Some(Ending::EmptyOutput)) => record.result_sha256.is_none(),
        (Some(_), Some(Ending::Completed)) => {
            sha(&answer.result) == record.result_sha256
                && sha(&answer.worker_results) == record.worker_results_sha256
        }
        _ => false,
    }
}

/// Write the answer's files and close the attempt.
fn close(
    run: &Run,
    open: &DispatchRecord,
    answer: &Answer,
    text: &str,
    agent_id: Option<&str>,
    provenance: Provenance,
) -> Result<DispatchRecord> {
    let mut record = open.clone();
    record.agent_id = agent_id.map(str::to_owned).or(record.agent_id);
    let started = record
        .started_at
        .as_deref()
        .and_then(crate::clock::parse_rfc3339);
    if let Some(result) = &answer.result {
        write(run, &record.result_path, "`resultPath`", result)?;
        record.result_sha256 = Some(sha256_hex(result.as_bytes()));
        if let Some(audit) = &answer.worker_results {
            write(
                run,
                &record.worker_results_path,
                "`workerResultsPath`",
                audit,
            )?;
            record.worker_results_sha256 = Some(sha256_hex(audit.as_bytes()));
        }
        record.recovered_from = Some(Word::Known(provenance.recovery()));
        record.end(
            Ending::Completed,
            format!(
                "the sub-agent's answer came back by {}",
                match provenance {
                    Provenance::Hook => "okstra's hook",
                    Provenance::Relayed => "`okstra submit`",
                }
            ),
        );
    } else if let Some(bytes) = attempt::written_during(&record.result_path, started) {
        // A worker that may write (a native Executor) wrote its file itself.
        record.result_sha256 = Some(sha256_hex(&bytes));
        record.recovered_from = Some(Word::Known(Recovery::File));
        record.end(
            Ending::Completed,
            "the sub-agent wrote its Result Path itself".to_owned(),
        );
    } else {
        record.end(
            Ending::EmptyOutput,
            format!(
                "the answer has no complete result block tagged for attempt {} (`{BEGIN_PREFIX} dispatch={} attempt={} nonce=…`)",
                record.attempt, record.dispatch_name, record.attempt
            ),
        );
        record.recovered_from = None;
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
        record.log_tail = Some(
            tail.iter()
                .map(|line| crate::fsread::clip(line, 2000))
                .collect(),
        );
    }
    // A native Executor's change goes onto the run's branch here, once its
    // guard shows it kept to its copy; otherwise the attempt fails.
    if let Err(why) = super::change::onto_branch(run, &mut record) {
        super::change::fail(&mut record, why);
    }
    Ok(record)
}

/// Write one of an attempt's files: inside the run, through no symlink.
fn write(run: &Run, path: &Path, what: &str, text: &str) -> Result<()> {
    let path = crate::confine::inside_no_links(path, &run.dir, what)?;
    crate::durable::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// The lead events of an accepted answer: how the attempt ended (with its
/// provenance), and the sub-agent's id for usage.
fn record_events(run: &Run, record: &DispatchRecord) {
    attempt::announce(run, record);
    if let Some(agent) = &record.agent_id {
        record_session(run, Some(&record.dispatch_name), agent);
    }
}

/// Record a Claude Code session (the lead's, `worker: None`) or a native
/// worker's sub-agent id, once, so `okstra usage` finds its transcript.
/// Only a Claude Code lead's: okstra reads no other host's sessions.
pub fn record_session(run: &Run, worker: Option<&str>, id: &str) {
    if run.lead_runtime != crate::catalog::LeadRuntime::ClaudeCode || !crate::usage::is_valid_id(id)
    {
        return;
    }
    if events::exists(run, EventKind::Session, "sessionId", id) {
        return;
    }
    let mut fields = vec![("sessionId", id)];
    if let Some(worker) = worker {
        fields.push(("worker", worker));
    }
    events::record(run, EventKind::Session, &fields);
}

/// `TAIL_LINES` is the record schema's `logTail` bound too.
const _: () = assert!(TAIL_LINES == recover::TAIL_LINES);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_and_odd_lines_are_not_tags() {
        let tag = Tag {
            dispatch: "claude-worker-reverify-r2".into(),
            attempt: 3,
            nonce: "00ff".repeat(8),
            run_dir: PathBuf::from("/my runs/p/.okstra/tasks/a/b/c/x-001"),
        };
        assert_eq!(Tag::parse(&tag.line()), Some(tag.clone()));
        assert_eq!(Tag::parse(&format!("  {}  ", tag.line())), Some(tag));
        for line in [
            "=== OKSTRA RESULT BEGIN ===",
            "=== OKSTRA RESULT BEGIN dispatch=a attempt=x nonce=b run=/r ===",
            "=== OKSTRA RESULT BEGIN dispatch=a attempt=1 nonce= run=/r ===",
            "=== OKSTRA RESULT BEGIN dispatch=a attempt=1 nonce=b run= ===",
            "=== OKSTRA RESULT BEGIN attempt=1 dispatch=a nonce=b run=/r ===",
        ] {
            assert_eq!(Tag::parse(line), None, "{line}");
        }
    }

    fn open_record(nonce: &str) -> DispatchRecord {
        let paths = crate::run::roster::DispatchPaths {
            prompt_path: "/r/prompts/claude-worker.md".into(),
            result_path: "/r/results/claude-worker.md".into(),
            worker_results_path: "/r/results/claude-worker.worker-results.md".into(),
            error_path: "/r/results/claude-worker.error.md".into(),
            heartbeat_path: std::path::PathBuf::new(),
        };
        DispatchRecord {
            runner: Some(Runner::NativeSession),
            nonce: Some(nonce.into()),
            ..DispatchRecord::queued("claude-worker", DispatchKind::Initial, 1, "claude", &paths)
        }
    }

    fn tagged(dispatch: &str, attempt: u32, nonce: &str) -> String {
        Tag {
            dispatch: dispatch.into(),
            attempt,
            nonce: nonce.into(),
            run_dir: "/r".into(),
        }
        .line()
    }

    #[test]
    fn only_the_block_tagged_with_the_attempts_nonce_counts() {
        let record = open_record("aaaa");
        let message = format!(
            "Done.\n=== OKSTRA RESULT BEGIN ===\nuntagged\n=== OKSTRA RESULT END ===\n{}\n| F-1 | x |\n=== OKSTRA RESULT END ===\n=== OKSTRA WORKER-RESULTS BEGIN ===\naudit\n=== OKSTRA WORKER-RESULTS END ===\n",
            tagged("claude-worker", 1, "aaaa")
        );
        let answer = read_answer(&message, &record, "aaaa").unwrap();
        assert_eq!(answer.result.as_deref(), Some("| F-1 | x |\n"));
        assert_eq!(answer.worker_results.as_deref(), Some("audit\n"));
        // Untagged blocks only: nothing for this attempt.
        let plain = "=== OKSTRA RESULT BEGIN ===\nx\n=== OKSTRA RESULT END ===\n";
        assert_eq!(
            read_answer(plain, &record, "aaaa").unwrap(),
            Answer {
                result: None,
                worker_results: None
            }
        );
        // Another attempt's answer is refused, whole or cut.
        let other = format!(
            "{}\nx\n=== OKSTRA RESULT END ===\n",
            tagged("claude-worker-reverify-r1", 1, "bbbb")
        );
        let err = read_answer(&other, &record, "aaaa")
            .unwrap_err()
            .to_string();
        assert!(err.contains("it answers another task"), "{err}");
        // The right nonce under an edited name is refused too.
        let edited = format!(
            "{}\nx\n=== OKSTRA RESULT END ===\n",
            tagged("codex-worker", 1, "aaaa")
        );
        let err = read_answer(&edited, &record, "aaaa")
            .unwrap_err()
            .to_string();
        assert!(err.contains("the tag was edited"), "{err}");
    }

    #[test]
    fn a_repeat_is_the_same_only_when_its_blocks_are() {
        let mut record = open_record("aaaa");
        record.ending = Some(Ending::Completed);
        record.result_sha256 = Some(sha256_hex(b"r\n"));
        let same = Answer {
            result: Some("r\n".into()),
            worker_results: None,
        };
        assert!(is_same(&record, &same));
        let other = Answer {
            result: Some("s\n".into()),
            worker_results: None,
        };
        assert!(!is_same(&record, &other));
        record.ending = Some(Ending::EmptyOutput);
        record.result_sha256 = None;
        assert!(is_same(
            &record,
            &Answer {
                result: None,
                worker_results: None
            }
        ));
        assert!(!is_same(&record, &same));
    }
}
