//! `okstra publish github <run> --repo OWNER/NAME --pr N`: one atomic
//! pull-request review of a run's findings.
//!
//! What it does, in order, and what it never does:
//! 1. checks its input (the repository name, the API base, the token from
//!    `GITHUB_TOKEN` or `GH_TOKEN`: never argv, never printed or sent in a
//!    text — a server message or a review that quotes it shows `***`) and the
//!    run's report (it must validate) and recorded commit;
//! 2. reads the pull request and refuses, with one line, when its head is
//!    not the commit the run analysed;
//! 3. reads every page of its reviews: one whose body holds this run's
//!    hidden marker means the run is already published, and nothing is
//!    posted again;
//! 4. reads every page of its files, so each inline comment's lines can be
//!    checked against the diff (`github::Commentable`);
//! 5. posts exactly one review (`event: COMMENT`, pinned to the commit), or
//!    with `--dry-run` prints its exact request body and posts nothing.
//!
//! Exit codes: 0 published (or already published); 1 refused (the report
//! is invalid, the pull request moved on); 2 bad input or an API answer
//! other than success (401, 403, 404, 422 … each turned into one line).

mod github;
mod http;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::cli::{PublishCommand, PublishGithubArgs};
use crate::diag;
use crate::exit::ExitStatus;
use crate::output::Reply;
use crate::report::{self, findings, sarif};
use crate::run::Run;
use crate::run::team_state;

use self::github::{Commentable, Summary};
use self::http::{Answer, Base, Client};

/// Items per page the list endpoints are asked for (GitHub's maximum).
const PER_PAGE: usize = 100;
/// Pages read of one list at most (GitHub lists at most 3 000 files).
const MAX_PAGES: usize = 100;

/// `okstra publish …`.
pub fn publish_command(command: &PublishCommand) -> Result<Reply> {
    match command {
        PublishCommand::Github(args) => github_command(args),
    }
}

/// The token, from the environment only.
fn token() -> Option<String> {
    ["GITHUB_TOKEN", "GH_TOKEN"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|value| value.trim().to_owned())
        .find(|value| !value.is_empty())
}

/// `OWNER/NAME`, each part a GitHub name.
fn check_repo(repo: &str) -> Result<(&str, &str)> {
    let valid = |part: &str| {
        !part.is_empty()
            && part.len() <= 100
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match repo.split_once('/') {
        Some((owner, name)) if valid(owner) && valid(name) => Ok((owner, name)),
        _ => bail!(
            "invalid `--repo` `{}`: expected `OWNER/NAME`, such as `acme/shop`",
            crate::fsread::escape(repo)
        ),
    }
}

fn github_command(args: &PublishGithubArgs) -> Result<Reply> {
    let (owner, name) = check_repo(&args.repo)?;
    let base = Base::parse(&args.api_url)?;
    let token = token();
    if token.is_none() && !args.dry_run {
        bail!(
            "no token: set `GITHUB_TOKEN` (or `GH_TOKEN`) to a token that may write pull-request reviews"
        );
    }
    let run = Run::open(&args.run_dir)?;
    let checked = report::check_report(&run.dir)?;
    if !checked.is_valid() {
        for problem in &checked.problems {
            diag::detail(problem);
        }
        diag::error(format_args!(
            "refusing to publish `{}`: its report has {} problem{} (see `okstra validate`)",
            run.dir.display(),
            checked.problems.len(),
            if checked.problems.len() == 1 { "" } else { "s" }
        ));
        return Ok(Reply::status(ExitStatus::Failure));
    }
    let Some(source) = run.source.clone() else {
        bail!(
            "`{}` recorded no commit (its project was not a git work tree when it was rendered); \
             a review must be pinned to the commit the run analysed",
            run.dir.display()
        );
    };
    if !source.clean {
        diag::warning(format_args!(
            "the run analysed uncommitted changes on top of `{}`; comments may not match the \
             pull request's lines",
            source.commit
        ));
    }
    let client = Client::new(base, token);
    let pulls = format!("/repos/{owner}/{name}/pulls/{}", args.pr);

    let pull = expect_ok(
        &client,
        "read the pull request",
        &pulls,
        client.get(&pulls)?,
    )?;
    let head = pull
        .pointer("/head/sha")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if head != source.commit {
        diag::error(format_args!(
            "refusing to publish: pull request #{} of `{owner}/{name}` is at `{}` but the run \
             analysed `{}`; run okstra on the pull request's head",
            args.pr,
            crate::fsread::escape(&crate::fsread::clip(&client.redact(head), 64)),
            source.commit
        ));
        return Ok(Reply::status(ExitStatus::Failure));
    }

    let marker = github::marker(&run.task_key, &run.run_id);
    let reviews = pages(
        &client,
        "read the pull request's reviews",
        &format!("{pulls}/reviews"),
    )?;
    if let Some(earlier) = reviews.iter().find(|review| {
        review
            .get("body")
            .and_then(Value::as_str)
            .is_some_and(|body| body.contains(&marker))
    }) {
        let id = earlier
            .get("id")
            .map_or_else(String::new, ToString::to_string);
        diag::progress(format_args!(
            "run `{}` is already published on pull request #{} (review {id}); nothing posted",
            run.run_id, args.pr
        ));
        return Ok(address(&client, earlier));
    }

    let files = pages(
        &client,
        "read the pull request's files",
        &format!("{pulls}/files"),
    )?;
    let found = findings::collect(&checked.value, Some(&run.dir))?;
    let mut diff = Commentable::under(&found.repository_prefix);
    for file in &files {
        if let (Some(path), Some(patch)) = (
            file.get("filename").and_then(Value::as_str),
            file.get("patch").and_then(Value::as_str),
        ) {
            diff.add(path, patch);
        }
    }

    let reported: Vec<&findings::Finding> = found
        .list
        .iter()
        .filter(|f| sarif::is_reported(f))
        .collect();
    let summary = summary(&checked.value, &run, &source.commit, marker)?;
    let mut body = github::review(&summary, &reported, &diff);
    // A worker may have quoted the token in a finding: it is neither
    // printed nor posted.
    client.redact_json(&mut body);

    if args.dry_run {
        let reply = Reply::foreign_json(&body)?;
        diag::progress(format_args!(
            "dry run: this is the review `POST {}` would send; nothing was posted",
            client.base().url(&format!("{pulls}/reviews"))
        ));
        return Ok(reply);
    }
    let path = format!("{pulls}/reviews");
    let posted = expect_ok(
        &client,
        "post the review",
        &path,
        client.post(&path, &body)?,
    )?;
    let inline = body["comments"].as_array().map_or(0, Vec::len);
    diag::progress(format_args!(
        "published run `{}` on pull request #{}: one review, {inline} inline comment{}",
        run.run_id,
        args.pr,
        if inline == 1 { "" } else { "s" }
    ));
    Ok(address(&client, &posted))
}

/// A review's address on GitHub, the answer of a publish (nothing when
/// GitHub gave none).
fn address(client: &Client, review: &Value) -> Reply {
    match review.get("html_url").and_then(Value::as_str) {
        Some(url) => Reply::line(crate::fsread::escape(&client.redact(url))),
        None => Reply::status(ExitStatus::Success),
    }
}

/// The body of a successful answer, or one line saying what GitHub refused.
fn expect_ok(client: &Client, what: &str, path: &str, answer: Answer) -> Result<Value> {
    if (200..300).contains(&answer.status) {
        return Ok(answer.body);
    }
    // Redacted before it is cut to length: no piece of the token shows.
    let mut body = answer.body;
    client.redact_json(&mut body);
    let said = github_message(&body);
    let url = client.base().url(path);
    let hint = match answer.status {
        401 => "the token in `GITHUB_TOKEN`/`GH_TOKEN` was refused (expired or wrong)",
        403 => {
            "the token may not do this (it needs `pull-requests: write`), or a rate limit was hit"
        }
        404 => "no such repository or pull request, or the token cannot see it",
        422 => "GitHub refused the request as sent",
        _ => "GitHub could not do it",
    };
    bail!(
        "cannot {what}: `{url}` answered {}: {hint}{}",
        answer.status,
        if said.is_empty() {
            String::new()
        } else {
            format!(" (GitHub said: {said})")
        }
    )
}

/// GitHub's `message` and `errors`, one escaped line.
fn github_message(body: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(message) = body.get("message").and_then(Value::as_str) {
        parts.push(message.to_owned());
    }
    for error in body
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(5)
    {
        match error {
            Value::String(text) => parts.push(text.clone()),
            other => {
                if let Some(text) = other.get("message").and_then(Value::as_str) {
                    parts.push(text.to_owned());
                }
            }
        }
    }
    let joined = parts.join("; ");
    crate::fsread::escape(&crate::fsread::clip(&joined, 500)).into_owned()
}

/// Every item of a paginated list, page by page until a short page.
fn pages(client: &Client, what: &str, path: &str) -> Result<Vec<Value>> {
    let mut all = Vec::new();
    for page in 1..=MAX_PAGES {
        let paged = format!("{path}?per_page={PER_PAGE}&page={page}");
        let body = expect_ok(client, what, path, client.get(&paged)?)?;
        let Value::Array(items) = body else {
            bail!(
                "cannot {what}: `{}` did not answer with a list",
                client.base().url(path)
            );
        };
        let short = items.len() < PER_PAGE;
        all.extend(items);
        if short {
            return Ok(all);
        }
    }
    Ok(all)
}

/// The summary's facts: verdict, verification, coverage, cost.
fn summary(report: &Value, run: &Run, commit: &str, marker: String) -> Result<Summary> {
    let text = |pointer: &str| {
        report
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let coverage = report
        .get("workerCoverage")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| {
            let field = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("?");
            format!("{} {}", field("workerId"), field("terminalStatus"))
        })
        .collect();
    let totals = crate::usage::recorded_totals(&team_state::read_raw(run)?);
    let cost = if totals.tokens == 0 && totals.cost_usd == 0.0 {
        "not recorded".to_owned()
    } else {
        totals.cost().to_string()
    };
    Ok(Summary {
        title: text("/header/title"),
        verdict_token: text("/finalVerdict/verdictToken"),
        direction: text("/finalVerdict/direction"),
        statement: text("/finalVerdict/statement"),
        verification: findings::verification(report),
        coverage,
        cost,
        commit: commit.to_owned(),
        marker,
        refuted: report
            .pointer("/verification/items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|item| item.get("finalClass").and_then(Value::as_str) == Some("refuted"))
            .count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_are_owner_slash_name() {
        assert_eq!(check_repo("acme/shop").unwrap(), ("acme", "shop"));
        assert_eq!(check_repo("a-b/c.d_e").unwrap(), ("a-b", "c.d_e"));
        for bad in [
            "acme", "acme/", "/shop", "a/b/c", "a/..", "a b/c", "a/c?x=1",
        ] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn github_messages_become_one_escaped_line() {
        let body = serde_json::json!({
            "message": "Validation Failed\n\u{1b}[31m",
            "errors": ["Line must be part of the diff", {"message": "pull_request_review_thread.line is invalid"}]
        });
        let line = github_message(&body);
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line}");
        assert!(
            line.contains(
                "Line must be part of the diff; pull_request_review_thread.line is invalid"
            )
        );
    }
}
