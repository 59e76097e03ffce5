//! The run log of a task key: `.okstra/tasks/<p>/<g>/<t>/runs.jsonl`, one
//! JSON line per run okstra created for the key, appended under the
//! `.okstra/` lock and flushed before the run folder is moved into place.
//!
//! Every render asks two questions of a task key, and the log answers both
//! without opening a single run manifest: which sequence numbers were ever
//! used (so a number is never handed out twice, even after its folder was
//! deleted), and which runs exist, in creation order (the run a new one
//! continues). Appending never replaces or deletes a file, so a render
//! frees no inode either (ext4 without a journal makes every later inode
//! allocation in a block group step over each inode freed there in the
//! last 30 seconds).
//!
//! The log is read defensively because people edit `.okstra/`: a logged run
//! whose folder is gone is not a run; a run folder with no line (copied in
//! from elsewhere) is still seen, through the listing of the task folder; a
//! torn last line (a crash mid-append) is skipped, and the next append
//! starts on a fresh line.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::TaskType;
use crate::{durable, fsread};

/// The log's file name, inside the task folder.
pub const FILE_NAME: &str = "runs.jsonl";

/// One created run, as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The run folder's name, `<task-type>-<NNN>`.
    pub run_id: String,
    pub task_type: String,
    pub sequence: u32,
    /// The run manifest's `createdAt`.
    pub created_at: String,
}

/// What a task folder holds: its log and the names of its sub-folders.
#[derive(Debug, Default)]
pub struct TaskRuns {
    /// The log's readable lines, in append (creation) order.
    pub logged: Vec<Entry>,
    /// Names of the folders in the task folder (run folders and strays).
    pub folders: HashSet<String>,
}

impl TaskRuns {
    /// Read the log and list the folder; a missing task folder is empty.
    /// A log that is not a regular file, or is over the limit for an event
    /// log, is an error: reading it as empty could reuse a number.
    pub fn read(task_dir: &Path) -> Result<TaskRuns, fsread::Error> {
        let mut runs = TaskRuns::default();
        let Ok(entries) = std::fs::read_dir(task_dir) else {
            return Ok(runs);
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir())
                && let Ok(name) = entry.file_name().into_string()
            {
                runs.folders.insert(name);
            }
        }
        if let Some(bytes) =
            fsread::read_no_follow_if_exists(&task_dir.join(FILE_NAME), fsread::Kind::Events)?
        {
            runs.logged = parse(&bytes);
        }
        Ok(runs)
    }

    /// The next sequence number for `task_type`: one past the highest it
    /// ever had, logged or on a folder name. `None` once `u32` is used up.
    pub fn next_sequence(&self, task_type: TaskType) -> Option<u32> {
        let prefix = format!("{task_type}-");
        let on_disk = self
            .folders
            .iter()
            .filter_map(|name| name.strip_prefix(&prefix)?.parse::<u32>().ok());
        let logged = self
            .logged
            .iter()
            .filter(|entry| entry.task_type == task_type.as_str())
            .map(|entry| entry.sequence);
        on_disk.chain(logged).max().unwrap_or(0).checked_add(1)
    }
}

/// The readable lines of a log; anything else (a torn line, garbage) is
/// skipped.
pub fn parse(bytes: &[u8]) -> Vec<Entry> {
    bytes
        .split(|byte| *byte == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// Append `entry` to the log in `task_dir` and flush it (and, when this
/// creates the log, the folder entry too). The caller holds the `.okstra/`
/// lock, so appends never interleave.
pub fn append(task_dir: &Path, entry: &Entry) -> io::Result<()> {
    durable::append_line(&task_dir.join(FILE_NAME), |_| {
        serde_json::to_vec(entry).map_err(io::Error::from)
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn entry(task_type: TaskType, sequence: u32) -> Entry {
        Entry {
            run_id: format!("{task_type}-{sequence:03}"),
            task_type: task_type.as_str().to_owned(),
            sequence,
            created_at: format!("2026-11-30T10:00:0{sequence}.000Z"),
        }
    }

    #[test]
    fn appended_entries_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let first = entry(TaskType::ErrorAnalysis, 1);
        let second = entry(TaskType::Implementation, 1);
        append(dir.path(), &first).unwrap();
        append(dir.path(), &second).unwrap();
        assert_eq!(
            TaskRuns::read(dir.path()).unwrap().logged,
            vec![first, second]
        );
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_the_next_append_starts_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let first = entry(TaskType::ErrorAnalysis, 1);
        append(dir.path(), &first).unwrap();
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap();
        std::io::Write::write_all(&mut log, br#"{"runId":"error-analysis-002","task"#).unwrap();
        let third = entry(TaskType::ErrorAnalysis, 3);
        append(dir.path(), &third).unwrap();
        assert_eq!(
            TaskRuns::read(dir.path()).unwrap().logged,
            vec![first, third]
        );
    }

    #[test]
    fn the_next_sequence_is_past_both_the_log_and_the_folders() {
        let dir = tempfile::tempdir().unwrap();
        let runs = TaskRuns::read(&dir.path().join("missing")).unwrap();
        assert_eq!(runs.next_sequence(TaskType::ErrorAnalysis), Some(1));

        // Logged up to 4 (folder deleted since), a folder 6 that was copied
        // in without a line, and other task types and strays ignored.
        append(dir.path(), &entry(TaskType::ErrorAnalysis, 4)).unwrap();
        append(dir.path(), &entry(TaskType::Implementation, 9)).unwrap();
        for name in ["error-analysis-006", "error-analysis-x", "notes"] {
            fs::create_dir(dir.path().join(name)).unwrap();
        }
        let runs = TaskRuns::read(dir.path()).unwrap();
        assert_eq!(runs.next_sequence(TaskType::ErrorAnalysis), Some(7));
        assert_eq!(runs.next_sequence(TaskType::Implementation), Some(10));
        assert_eq!(runs.next_sequence(TaskType::ProjectAnalysis), Some(1));

        append(dir.path(), &entry(TaskType::ProjectAnalysis, u32::MAX)).unwrap();
        let runs = TaskRuns::read(dir.path()).unwrap();
        assert_eq!(runs.next_sequence(TaskType::ProjectAnalysis), None);
    }

    const LOG: &[u8] = b"{\"runId\":\"error-analysis-001\",\"taskType\":\"error-analysis\",\"sequence\":1,\"createdAt\":\"2026-11-30T10:00:01.000Z\"}\n{\"runId\":\"x\",\"task";

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Whatever a log holds, reading it neither panics nor stalls, and
        /// the next sequence is computed.
        #[test]
        fn proptest_any_log_parses(input in crate::fuzz::damaged(LOG), noise in crate::fuzz::bytes()) {
            for bytes in [&input, &noise] {
                let logged = crate::fuzz::bounded(|| parse(bytes));
                let runs = TaskRuns { logged, folders: HashSet::new() };
                let _ = runs.next_sequence(TaskType::ErrorAnalysis);
            }
        }
    }
}
