//! The text board: aligned columns, counts, the run's line, attention and
//! dispatch lines.
//!
//! By default it fits [`WIDTH`] columns: the run folder's path on a line of
//! its own (the one line allowed to be longer), provider and model in one
//! column, names and reasons cut with `…`. `--wide` shows every column
//! whole, the runner too.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use super::board::RunStatus;
use crate::clock;
use crate::fsread;
use crate::lifecycle::par_map;
use crate::vocab::LandingState;

/// The width of the default board: a classic terminal's.
pub const WIDTH: usize = 80;

/// How the runs of a board are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// One run's whole board (`okstra status <run-dir>`).
    One,
    /// One line per run, then the total (`okstra status` over a project).
    Lines,
    /// Every run's whole board, then the total (`--all`).
    Boards,
}

/// The text board; `wide` keeps every cell whole.
pub(super) fn render(board: &[RunStatus<'_>], now: i64, view: View, wide: bool) -> String {
    let mut text = String::new();
    render_into(&mut text, board, now, view, wide).expect("writing to a String cannot fail");
    // Names and reasons come from files: no terminal escape gets through.
    fsread::escape_keep_lines(&text).into_owned()
}

pub(super) fn render_into(
    text: &mut String,
    board: &[RunStatus<'_>],
    now: i64,
    view: View,
    wide: bool,
) -> fmt::Result {
    if view == View::Lines {
        render_lines(text, board);
        return render_total(text, board, true);
    }
    // Runs are drawn independently, so a large board is drawn in parallel.
    for part in par_map(board, |run| {
        let mut part = String::new();
        if wide {
            render_run(&mut part, run, now).map(|()| part)
        } else {
            render_compact(&mut part, run, now).map(|()| part)
        }
    }) {
        text.push_str(&part?);
    }
    if view == View::Boards {
        render_total(text, board, false)?;
    }
    Ok(())
}

/// `n thing` or `n things`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The total line of a project's board: runs, workers per state, how many
/// need attention; after the one-line view, where to see more.
fn render_total(text: &mut String, board: &[RunStatus<'_>], lines: bool) -> fmt::Result {
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    let mut workers = 0;
    for run in board {
        for (state, count) in &run.counts {
            *totals.entry(state).or_insert(0) += count;
            workers += count;
        }
    }
    let attention: usize = board.iter().map(|r| r.attention.len()).sum();
    writeln!(
        text,
        "{}, {}{}; {attention} need{} attention",
        count(board.len(), "run", "runs"),
        count(workers, "worker", "workers"),
        counts_text(&totals),
        if attention == 1 { "s" } else { "" }
    )?;
    if lines && !board.is_empty() {
        writeln!(
            text,
            "`okstra status --all` draws every run's workers; `okstra status <run-dir>` one run's"
        )?;
    }
    Ok(())
}

/// One line per run: its task key and id, its workers' counts, its line
/// (outcome, verdict, why).
fn render_lines(text: &mut String, board: &[RunStatus<'_>]) {
    use crate::table::{Column, render as table};
    if board.is_empty() {
        return;
    }
    // Nothing is cut: a line names its run whole and says how it came out
    // whole (a long reason runs past the terminal's width instead).
    let columns = [
        Column::fixed("RUN"),
        Column::fixed("WORKERS"),
        Column::fixed("OUTCOME"),
    ];
    let rows: Vec<Vec<String>> = board
        .iter()
        .map(|run| {
            let attention = if run.attention.is_empty() {
                String::new()
            } else {
                format!(", {} need attention", run.attention.len())
            };
            vec![
                format!("{}/{}", run.task_key, run.run_id),
                format!(
                    "{}{attention}",
                    counts_text(&run.counts).trim_start_matches(": ")
                ),
                run.run.brief(),
            ]
        })
        .collect();
    text.push_str(&table(&columns, &rows, 0, None));
}

pub(super) fn counts_text(counts: &BTreeMap<&str, usize>) -> String {
    if counts.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!(": {}", parts.join(", "))
}

/// One run in [`WIDTH`] columns; its folder's path on a line of its own.
fn render_compact(text: &mut String, run: &RunStatus<'_>, now: i64) -> fmt::Result {
    use crate::table::{Column, ellipsize, render as table};
    let fit = |line: String| ellipsize(&line, WIDTH);
    writeln!(
        text,
        "{}",
        fit(format!(
            "{} {} ({})",
            run.task_key, run.run_id, run.task_type
        ))
    )?;
    writeln!(text, "  in {}", run.run_dir.display())?;
    let columns = [
        Column::shrinking("DISPATCH", 12, 1),
        Column::shrinking("CLI", 10, 0),
        Column::fixed("STATE"),
        Column::number("EXIT"),
        Column::number("TIME"),
        Column::shrinking("ACTIVE", 6, 2),
    ];
    let rows: Vec<Vec<String>> = run
        .workers
        .iter()
        .map(|w| {
            vec![
                w.dispatch_name.to_owned(),
                format!("{} {}", w.provider, w.model),
                w.state.as_str().to_owned(),
                w.exit_code
                    .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                w.elapsed_seconds
                    .map_or_else(|| "-".to_owned(), clock::short_duration),
                w.last_activity_ts.map_or_else(
                    || "-".to_owned(),
                    |at| format!("{} ago", clock::short_duration(now - at)),
                ),
            ]
        })
        .collect();
    let drawn = table(&columns, &rows, 2, Some(WIDTH));
    let mut lines = drawn.lines();
    if let Some(header) = lines.next() {
        writeln!(text, "{header}")?;
    }
    for (line, worker) in lines.zip(&run.workers) {
        writeln!(text, "{line}")?;
        if let Some(summary) = &worker.summary {
            writeln!(
                text,
                "{}",
                fit(format!(
                    "      {}: {}",
                    fsread::escape(worker.phase.as_deref().unwrap_or("heartbeat")),
                    fsread::escape(summary)
                ))
            )?;
        }
        for tail_line in worker.log_tail.iter().flatten() {
            writeln!(
                text,
                "{}",
                fit(format!("      | {}", fsread::escape(tail_line)))
            )?;
        }
    }
    writeln!(
        text,
        "{}",
        fit(format!(
            "  {}{}",
            count(run.workers.len(), "worker", "workers"),
            counts_text(&run.counts)
        ))
    )?;
    // Reasons and details may name paths: wrapped at the width, a path
    // longer than a line on a line of its own, never cut.
    let mut wrapped = |line: String| -> fmt::Result {
        for part in crate::table::wrap(&line, WIDTH, 6) {
            writeln!(text, "{part}")?;
        }
        Ok(())
    };
    wrapped(format!("  run: {}", run.run.text()))?;
    if let Some(err) = &run.team_state_error {
        wrapped(format!("  attention: team state: {err}"))?;
    }
    for item in &run.attention {
        wrapped(format!(
            "  attention: {} {}: {}",
            item.dispatch_name,
            item.state.as_str(),
            item.reason
        ))?;
    }
    for line in landing_lines(run) {
        wrapped(line)?;
    }
    for row in &run.dispatches {
        wrapped(dispatch_line(row))?;
    }
    Ok(())
}

/// The `  landing: …` lines of an implementation run's gate: landable (and
/// the command that lands it), landed, or one line per reason it may not.
fn landing_lines(run: &RunStatus<'_>) -> Vec<String> {
    let Some(landing) = &run.landing else {
        return Vec::new();
    };
    let branch = landing
        .branch
        .as_deref()
        .map_or_else(String::new, |b| format!(" `{b}`"));
    match landing.state {
        LandingState::Landable => vec![format!(
            "  landing: landable{branch}: `okstra land {}` applies it",
            run.run_dir.display()
        )],
        LandingState::Landed => vec![format!("  landing: landed{branch}")],
        state @ LandingState::Blocked => landing
            .reasons
            .iter()
            .map(|reason| {
                format!(
                    "  landing: {state}{branch}: {}",
                    fsread::escape(&reason.line())
                )
            })
            .collect(),
    }
}

/// `  dispatch: <name> <kind> attempt <n> <state> [usage]: detail`.
fn dispatch_line(row: &super::dispatch_rows::DispatchRow) -> String {
    let usage = row
        .usage
        .as_ref()
        .and_then(|value| serde_json::from_value::<crate::usage::Record>(value.clone()).ok())
        .map_or_else(String::new, |record| format!(" [{}]", record.short()));
    format!(
        "  dispatch: {} {} attempt {} {}{usage}{}",
        row.dispatch_name,
        row.kind,
        row.attempt,
        row.state,
        row.detail
            .as_deref()
            .map_or_else(String::new, |d| format!(": {}", crate::fsread::escape(d)))
    )
}

/// One run with every column whole (`--wide`).
pub(super) fn render_run(text: &mut String, run: &RunStatus<'_>, now: i64) -> fmt::Result {
    writeln!(
        text,
        "{} {} ({})  {}",
        run.task_key,
        run.run_id,
        run.task_type,
        run.run_dir.display()
    )?;
    let header = [
        "DISPATCH", "PROVIDER", "MODEL", "RUNNER", "STATE", "EXIT", "ELAPSED", "ACTIVITY",
    ]
    .map(Cow::Borrowed);
    let rows: Vec<[Cow<'_, str>; 8]> = run
        .workers
        .iter()
        .map(|w| {
            [
                Cow::Borrowed(w.dispatch_name),
                Cow::Borrowed(w.provider),
                Cow::Borrowed(w.model),
                Cow::Borrowed(w.runner),
                Cow::Borrowed(w.state.as_str()),
                w.exit_code
                    .map_or(Cow::Borrowed("-"), |c| Cow::Owned(c.to_string())),
                w.elapsed_seconds.map_or(Cow::Borrowed("-"), |secs| {
                    Cow::Owned(clock::short_duration(secs))
                }),
                w.last_activity_ts.map_or(Cow::Borrowed("-"), |at| {
                    Cow::Owned(format!("{} ago", clock::short_duration(now - at)))
                }),
            ]
        })
        .collect();
    let mut widths = [0; 8];
    for row in rows.iter().chain([&header]) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // Cells padded to their column and two spaces apart; no trailing blanks.
    let line = |text: &mut String, cells: &[Cow<'_, str>; 8]| {
        text.push_str("  ");
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if index > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            text.extend(std::iter::repeat_n(' ', width - cell.chars().count()));
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
    };
    line(text, &header);
    for (row, worker) in rows.iter().zip(&run.workers) {
        line(text, row);
        if let Some(summary) = &worker.summary {
            writeln!(
                text,
                "      {}: {}",
                fsread::escape(worker.phase.as_deref().unwrap_or("heartbeat")),
                fsread::escape(summary)
            )?;
        }
        for tail_line in worker.log_tail.iter().flatten() {
            writeln!(text, "      | {}", fsread::escape(tail_line))?;
        }
    }
    writeln!(
        text,
        "  {}{}",
        count(run.workers.len(), "worker", "workers"),
        counts_text(&run.counts)
    )?;
    writeln!(text, "  run: {}", run.run.text())?;
    if let Some(err) = &run.team_state_error {
        writeln!(text, "  attention: team state: {err}")?;
    }
    for item in &run.attention {
        writeln!(
            text,
            "  attention: {} {}: {}",
            item.dispatch_name,
            item.state.as_str(),
            item.reason
        )?;
    }
    for line in landing_lines(run) {
        writeln!(text, "{line}")?;
    }
    for row in &run.dispatches {
        writeln!(text, "{}", dispatch_line(row))?;
    }
    Ok(())
}
