//! Which worker items a report cites, and whether each resolves: the
//! worker result files are read and indexed once, each on its own thread,
//! while data.json is parsed and checked; every `sourceItems` entry must
//! name a rostered worker and an item its result holds exactly once.

use super::{
    HashMap, Indexed, JoinHandle, Path, Problem, ROW_TABLES, RunFacts, Value, fsread, items, rows,
    severity, thread,
};

/// Worker result files being read and indexed in the background.
pub struct PendingIndexes(Vec<(String, JoinHandle<Indexed>)>);

impl PendingIndexes {
    /// Start reading every contributor's result file, one thread each, so
    /// the work overlaps with parsing data.json and checking its schema.
    pub fn start(run: &RunFacts) -> Self {
        let handles = run
            .contributors()
            .map(|worker| {
                let path = worker.result_path.clone();
                (
                    worker.worker_id.clone(),
                    thread::spawn(move || index_file(&path)),
                )
            })
            .collect();
        Self(handles)
    }

    /// Wait for every index.
    pub fn finish(self) -> HashMap<String, Indexed> {
        self.0
            .into_iter()
            .map(|(worker, handle)| {
                let indexed = handle.join().unwrap_or_else(|_| {
                    Indexed::Unreadable("indexing it failed unexpectedly".to_owned())
                });
                (worker, indexed)
            })
            .collect()
    }
}

/// What the source-item check knows about one citable worker.
struct Citable<'a> {
    shown: String,
    index: Option<&'a Indexed>,
    unreadable_reported: bool,
}

pub(super) fn source_items(
    report: &Value,
    run: Option<&RunFacts>,
    indexes: &HashMap<String, Indexed>,
    problems: &mut Vec<Problem>,
) {
    // Without a manifest the coverage list is the best roster we have.
    let mut workers: Vec<(&str, Citable<'_>)> = match run {
        Some(run) => run
            .roster
            .iter()
            .map(|w| {
                let citable = Citable {
                    shown: shown_path(&w.result_path, &run.run_dir),
                    index: indexes.get(&w.worker_id),
                    unreadable_reported: false,
                };
                (w.worker_id.as_str(), citable)
            })
            .collect(),
        None => report
            .get("workerCoverage")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.get("workerId").and_then(Value::as_str))
            .map(|id| {
                let citable = Citable {
                    shown: String::new(),
                    index: None,
                    unreadable_reported: false,
                };
                (id, citable)
            })
            .collect(),
    };
    let roster_names = workers
        .iter()
        .map(|(id, _)| *id)
        .collect::<Vec<_>>()
        .join(", ");
    for (table, _) in ROW_TABLES {
        for (row, value) in rows(report, table) {
            let entries = value.get("sourceItems").and_then(Value::as_array);
            for (index, entry) in entries.into_iter().flatten().enumerate() {
                let pointer = || format!("/{table}/{row}/sourceItems/{index}");
                let Some((worker, item)) = entry.as_str().and_then(|s| s.split_once(':')) else {
                    continue; // the schema reports malformed entries
                };
                let Some((_, citable)) = workers.iter_mut().find(|(id, _)| *id == worker) else {
                    let whose = if run.is_some() {
                        "the run's roster"
                    } else {
                        "`workerCoverage`"
                    };
                    problems.push(Problem::new(
                        "source-item",
                        pointer(),
                        format!(
                            "`{worker}:{item}` names worker `{worker}`, who is not on {whose} \
                             ({roster_names})"
                        ),
                    ));
                    continue;
                };
                if run.is_none() {
                    continue;
                }
                let shown = &citable.shown;
                match citable.index {
                    None | Some(Indexed::Unreadable(_)) if citable.unreadable_reported => {}
                    None => {
                        citable.unreadable_reported = true;
                        problems.push(Problem::new(
                            "source-item",
                            pointer(),
                            format!(
                                "`{worker}:{item}` cites worker `{worker}`, who writes the report \
                                 and has no findings to cite"
                            ),
                        ));
                    }
                    Some(Indexed::Unreadable(reason)) => {
                        citable.unreadable_reported = true;
                        problems.push(Problem::new(
                            "source-item",
                            pointer(),
                            format!(
                                "`{worker}:{item}` cites worker `{worker}`, whose result \
                                 `{shown}` cannot be read: {reason}"
                            ),
                        ));
                    }
                    Some(Indexed::Items(items, _)) => match items.get(item).copied().unwrap_or(0) {
                        1 => {}
                        0 => problems.push(Problem::new(
                            "source-item",
                            pointer(),
                            format!(
                                "`{worker}:{item}`: item `{item}` does not appear in `{shown}`"
                            ),
                        )),
                        count => problems.push(Problem::new(
                            "source-item",
                            pointer(),
                            format!(
                                "`{worker}:{item}`: item `{item}` appears {count} times in \
                                 `{shown}`; it must be unique within the worker's result"
                            ),
                        )),
                    },
                }
            }
        }
    }
}

fn index_file(path: &Path) -> Indexed {
    // Bounded, never a FIFO, never through a link (the path was confined to
    // the run when the manifest was read).
    match fsread::read_no_follow(path, fsread::Kind::Result) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Indexed::Items(items::counts(&text), severity::of_result(&text)),
            Err(err) => {
                let text = String::from_utf8_lossy(err.as_bytes());
                Indexed::Items(items::counts(&text), severity::of_result(&text))
            }
        },
        Err(err) => Indexed::Unreadable(unreadable(&err)),
    }
}

/// Why a result file could not be read, as one lowercase phrase.
fn unreadable(err: &fsread::Error) -> String {
    match err {
        fsread::Error::Open { source, .. } | fsread::Error::Read { source, .. } => {
            source.to_string().to_lowercase()
        }
        other => crate::fsread::escape(&other.to_string()).into_owned(),
    }
}

/// A path relative to the run folder when it is inside it (stable messages).
pub(super) fn shown_path(path: &Path, run_dir: &Path) -> String {
    path.strip_prefix(run_dir)
        .unwrap_or(path)
        .display()
        .to_string()
}
