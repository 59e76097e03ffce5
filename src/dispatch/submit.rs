//! The two ways a native task's answer comes back: `okstra submit` (the
//! sub-agent, or the lead, passes the final message) and `okstra hook
//! subagent-stop` (the host hands okstra every finished sub-agent's final
//! message; okstra takes the ones that carry an okstra task's tag and lets
//! everything else pass). Both go through [`native::accept`], the one trust
//! boundary. A user's answer to a question `okstra next` asked goes through
//! `okstra submit` too, under the question's name.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cli::{HookArgs, SubmitArgs};
use crate::diag;
use crate::exit::ExitStatus;
use crate::fsread;
use crate::output::Reply;
use crate::run::Run;
use crate::run::ask;

use crate::vocab::Ending;

use super::native::{self, Tag};
use crate::vocab::EventKind;
use crate::vocab::Provenance;
use crate::vocab::Question;

/// `okstra submit <run-dir> <dispatch-name> [FILE|-] [--agent-id ID]`.
///
/// Exit 0 the answer completed the attempt (or is the one it already
/// holds), 1 it was recorded but held no result (`empty-output`; `okstra
/// next` offers the retry), 2 refused: nothing written.
pub fn submit_command(args: &SubmitArgs) -> Result<Reply> {
    if let Some(id) = &args.agent_id
        && !crate::usage::is_valid_id(id)
    {
        bail!(
            "invalid value `{}` for `--agent-id`: expected the sub-agent's id, 1 to 128 letters, digits, `-` or `_`",
            fsread::escape(id)
        );
    }
    let message = read_message(args.input.as_deref())?;
    let run = Run::open(&args.run_dir)?;
    if let Some(question) = Question::named(&args.dispatch_name) {
        let path = ask::answer(&run, question, &message)?;
        diag::progress(format_args!(
            "recorded the user's answer to `{}` in `{}`; go on with `okstra next {}`",
            question.name(),
            path.display(),
            run.dir.display()
        ));
        return Ok(Reply::line(path.display()));
    }
    let accepted = native::accept(
        &run,
        &args.dispatch_name,
        &message,
        args.agent_id.as_deref(),
        Provenance::Relayed,
    )?;
    let record = &accepted.record;
    let ending = record.ending.map_or("open", Ending::as_str);
    diag::progress(format_args!(
        "{} `{}` attempt {}: {ending}{}",
        if accepted.repeat {
            "already recorded"
        } else {
            "recorded"
        },
        record.dispatch_name,
        record.attempt,
        record
            .detail
            .as_deref()
            .filter(|_| record.ending != Some(Ending::Completed))
            .map_or_else(String::new, |why| format!(" ({})", fsread::escape(why)))
    ));
    if record.ending == Some(Ending::Completed) {
        Ok(Reply::line(record.result_path.display()))
    } else {
        Ok(Reply::status(ExitStatus::Failure))
    }
}

/// The message: a file, or stdin (`-` or nothing), bounded.
fn read_message(input: Option<&Path>) -> Result<Vec<u8>> {
    match input {
        None => read_stdin(),
        Some(path) if path == Path::new("-") => read_stdin(),
        Some(path) => Ok(fsread::read(path, fsread::Kind::Answer)?),
    }
}

fn read_stdin() -> Result<Vec<u8>> {
    Ok(fsread::read_stream(
        std::io::stdin().lock(),
        Path::new("-"),
        fsread::Kind::Answer,
    )?)
}

/// `okstra hook subagent-stop`: read the host's hook input on stdin and
/// hand an okstra task's answer to [`native::accept`]. It never blocks the
/// host: whatever happens it exits 0 and prints nothing on stdout (a
/// refusal is a `result-refused` lead event of the run and one line on
/// stderr).
pub fn hook_command(_args: &HookArgs) -> ExitStatus {
    match take_answer() {
        Ok(None) => {}
        Ok(Some(Taken::Took(done))) => diag::progress(done),
        Ok(Some(Taken::Left(why))) => diag::note(format_args!("okstra hook: {why}")),
        Err(err) => diag::warning(format_args!("okstra hook: {err:#}")),
    }
    ExitStatus::Success
}

/// What the hook did with an okstra task's answer.
enum Taken {
    /// Took it (a line saying how the attempt ended).
    Took(String),
    /// Left it for `okstra submit`: the team state stayed locked (why, and
    /// the command that takes it).
    Left(String),
}

/// What the hook input names, and what became of the answer, if it was an
/// okstra task's.
fn take_answer() -> Result<Option<Taken>> {
    let bytes = read_stdin()?;
    let input: Value =
        serde_json::from_slice(&bytes).context("the hook input on stdin is not JSON")?;
    let Some(message) = input.get("last_assistant_message").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some(tag) = Tag::last_in(message) else {
        // Not an okstra task's sub-agent: none of okstra's business.
        return Ok(None);
    };
    let run = Run::open(&tag.run_dir).with_context(|| {
        format!(
            "the answer names the run `{}`, which okstra cannot open",
            tag.run_dir.display()
        )
    })?;
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    let agent_id = text("agent_id").filter(|id| crate::usage::is_valid_id(id));
    match native::accept(
        &run,
        &tag.dispatch,
        message.as_bytes(),
        agent_id.as_deref(),
        Provenance::Hook,
    ) {
        Ok(accepted) => {
            // Only now is the input known to come from the attempt's own
            // sub-agent (its nonce matched): its session may count as the
            // run's. A refused input leaves nothing of itself behind.
            if let Some(session) = text("session_id") {
                native::record_session(&run, None, &session);
            }
            Ok(Some(Taken::Took(format!(
                "took the answer of `{}` attempt {}: {}",
                accepted.record.dispatch_name,
                accepted.record.attempt,
                accepted.record.ending.map_or("open", Ending::as_str)
            ))))
        }
        Err(err)
            if err
                .downcast_ref::<crate::durable::lock::Error>()
                .is_some_and(crate::durable::lock::Error::is_busy) =>
        {
            // Not refused: okstra could not look. The answer stays the
            // host's to pass on.
            let submit = native::submit_line(&run, &tag.dispatch);
            Ok(Some(Taken::Left(format!(
                "{err:#}; the answer of `{}` attempt {} was not taken: pass the sub-agent's final message on stdin to `{submit}`",
                crate::fsread::escape(&tag.dispatch),
                tag.attempt
            ))))
        }
        Err(err) => {
            let reason = format!("{err:#}");
            crate::run::events::record(
                &run,
                EventKind::ResultRefused,
                &[
                    ("name", tag.dispatch.as_str()),
                    ("attempt", &tag.attempt.to_string()),
                    ("provenance", Provenance::Hook.as_str()),
                    ("reason", &crate::fsread::clip(&reason, 2000)),
                ],
            );
            Err(err)
        }
    }
}
