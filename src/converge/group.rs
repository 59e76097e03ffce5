//! Claims whose anchors overlap in the same file: presented to a reviewer
//! once, as one entry listing the members (joined pair by pair across
//! workers, so a group may hold two claims of one worker); and whether two
//! claims overlap ([`overlap`]), which puts a reviewer's own claim beside
//! another's.
//!
//! Two claims overlap when an anchor of each resolved (`verified`, or
//! `moved` — then at the lines the excerpt was found on) to line ranges of
//! the same file that share a line. Groups are the connected components of
//! "overlaps, and the owners differ". A group changes how claims are shown,
//! never how they are judged or who is credited: each member still gets its
//! own verdict from every reviewer who did not report it, and two members
//! are one finding only when reviewers say so (`same claim as Item 3a`,
//! `derive::identity`).

use std::collections::BTreeMap;

use crate::anchors::{self, Checked};
use crate::derive::identity::Sets;

use super::ledger::{Group, Grouping, PlanItem};
use crate::vocab::AnchorStatus;

/// An anchor spanning more lines than this (a whole file, a whole
/// function) says where a claim lives too vaguely to group it with others.
const MAX_GROUP_SPAN: u32 = 30;

/// The line ranges `anchors` resolved to, as (normalised path, first, last).
fn spans(anchors: &[Checked]) -> Vec<(String, u32, u32)> {
    anchors
        .iter()
        .filter_map(|anchor| {
            let lines = match anchor.status {
                AnchorStatus::Verified => &anchor.lines,
                AnchorStatus::Moved => anchor.found_at.as_ref()?,
                _ => return None,
            };
            let (first, last) = if let Some((first, last)) = lines.split_once('-') {
                (first.parse().ok()?, last.parse().ok()?)
            } else {
                let line: u32 = lines.parse().ok()?;
                (line, line)
            };
            let path = anchors::snapshot::normalise(&anchor.path)?;
            (last >= first && last - first < MAX_GROUP_SPAN).then_some((path, first, last))
        })
        .collect()
}

/// Whether an anchor of `a` and one of `b` resolved to lines of the same
/// file that share a line (the overlap that groups claims).
pub fn overlap(a: &[Checked], b: &[Checked]) -> bool {
    let theirs = spans(b);
    spans(a).iter().any(|(path, first, last)| {
        theirs
            .iter()
            .any(|(p, f, l)| p == path && f <= last && first <= l)
    })
}

/// Group `items` (ids `G-1`, `G-2` … in the order of their first member),
/// set each member's grouping, and return the groups.
pub fn assign(items: &mut [PlanItem]) -> Vec<Group> {
    let mut by_path: BTreeMap<String, Vec<(u32, u32, usize)>> = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        for (path, first, last) in spans(&item.anchoring.anchors) {
            by_path.entry(path).or_default().push((first, last, index));
        }
    }
    // The smaller index leads, so a group's order is the items' order.
    let mut sets = Sets::new(items.len());
    for spans in by_path.values_mut() {
        spans.sort_unstable();
        // Sweep: every span against the ones still open when it starts.
        let mut open: Vec<(u32, usize)> = Vec::new();
        for &(first, last, index) in spans.iter() {
            open.retain(|(end, _)| *end >= first);
            for &(_, other) in &open {
                if items[other].owner != items[index].owner {
                    sets.join(other, index);
                }
            }
            open.push((last, index));
        }
    }
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for index in 0..items.len() {
        let root = sets.find(index);
        members.entry(root).or_default().push(index);
    }
    let mut groups = Vec::new();
    for indexes in members.into_values().filter(|m| m.len() > 1) {
        let id = format!("G-{}", groups.len() + 1);
        let ids: Vec<String> = indexes.iter().map(|&i| items[i].item_id.clone()).collect();
        for &index in &indexes {
            items[index].grouping = Grouping {
                group: Some(id.clone()),
            };
        }
        groups.push(Group {
            at: extent(indexes.iter().map(|&i| &items[i].anchoring.anchors)),
            id,
            items: ids,
        });
    }
    for item in items
        .iter_mut()
        .filter(|item| item.grouping.group.is_none())
    {
        item.grouping = Grouping::default();
    }
    groups
}

/// `src/a.py:16-27` (or several files, comma-separated): the lines the
/// members' spans cover in every file two or more of them share.
fn extent<'a>(members: impl Iterator<Item = &'a Vec<Checked>>) -> String {
    let mut files: BTreeMap<String, (u32, u32, usize)> = BTreeMap::new();
    for anchors in members {
        let mut seen = std::collections::BTreeSet::new();
        for (path, first, last) in spans(anchors) {
            let entry = files.entry(path.clone()).or_insert((first, last, 0));
            entry.0 = entry.0.min(first);
            entry.1 = entry.1.max(last);
            if seen.insert(path) {
                entry.2 += 1;
            }
        }
    }
    files
        .into_iter()
        .filter(|(_, (.., count))| *count > 1)
        .map(|(path, (first, last, _))| format!("{path}:{}", anchors::grammar::lines(first, last)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::converge::ledger::Anchoring;
    use crate::vocab::AnchorStatus;

    fn checked(location: &str, status: AnchorStatus, found_at: Option<&str>) -> Checked {
        let (path, lines) = location.rsplit_once(':').unwrap();
        Checked {
            path: path.to_owned(),
            lines: lines.to_owned(),
            excerpt: None,
            excerpt_sha256: None,
            status,
            found_at: found_at.map(str::to_owned),
            reason: None,
        }
    }

    fn item(id: &str, anchors: Vec<Checked>) -> PlanItem {
        PlanItem {
            item_id: id.to_owned(),
            owner: id.split_once(':').unwrap().0.to_owned(),
            section: String::new(),
            text: String::new(),
            evidence: Vec::new(),
            truncated: false,
            anchoring: Anchoring {
                anchor_status: Some(AnchorStatus::of(&anchors)),
                anchors,
            },
            grouping: Grouping::default(),
            source: PathBuf::new(),
            reviewers: Vec::new(),
            previous_verdicts: Vec::new(),
        }
    }

    #[test]
    fn overlapping_claims_of_different_workers_form_one_group() {
        use AnchorStatus::{Moved, Unanchored, Verified};
        let mut items = vec![
            item(
                "claude:F-1",
                vec![checked("src/inv.py:18-22", Verified, None)],
            ),
            item(
                "claude:F-2",
                vec![checked("src/inv.py:25-27", Verified, None)],
            ),
            item("codex:1", vec![checked("./src/inv.py:20", Verified, None)]),
            item(
                "kimi:K-1",
                vec![checked("src/inv.py:90", Moved, Some("21-22"))],
            ),
            // Same lines, but the anchor did not resolve: not grouped.
            item("grok:G-1", vec![checked("src/inv.py:18", Unanchored, None)]),
            // Same worker only: no group.
            item("codex:2", vec![checked("src/inv.py:26", Verified, None)]),
            // A whole-file anchor is too vague to group.
            item(
                "kimi:K-2",
                vec![checked("src/inv.py:1-200", Verified, None)],
            ),
            item(
                "kimi:K-3",
                vec![checked("src/server.py:26", Verified, None)],
            ),
        ];
        let groups = assign(&mut items);
        assert_eq!(
            groups,
            vec![
                Group {
                    id: "G-1".into(),
                    items: vec!["claude:F-1".into(), "codex:1".into(), "kimi:K-1".into()],
                    at: "src/inv.py:18-22".into(),
                },
                Group {
                    id: "G-2".into(),
                    items: vec!["claude:F-2".into(), "codex:2".into()],
                    at: "src/inv.py:25-27".into(),
                },
            ]
        );
        assert_eq!(items[2].grouping.group.as_deref(), Some("G-1"));
        for lone in [4, 6, 7] {
            assert_eq!(items[lone].grouping, Grouping::default(), "{lone}");
        }
    }
}
