//! Text tables for people: cells padded into columns two spaces apart, no
//! trailing blanks, and — when a width is given — the columns that may
//! shrink cut with an ellipsis until the table fits. Used by `okstra
//! status`, the live view of `okstra run` and `okstra usage`.
//!
//! Widths are counted in characters; every cell is escaped by its caller
//! (text from files and CLIs) before it gets here.

/// One column.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub header: &'static str,
    /// Cut (with `…`) when the table is too wide; never below `min`.
    pub shrinks: bool,
    pub min: usize,
    /// Numbers line up on the right.
    pub right: bool,
    /// Which shrinking column gives way first: the lowest rank.
    pub rank: u8,
}

impl Column {
    /// A column that keeps its width.
    pub const fn fixed(header: &'static str) -> Column {
        Column {
            header,
            shrinks: false,
            min: 0,
            right: false,
            rank: 0,
        }
    }

    /// A column cut down to no less than `min` characters when needed, in
    /// the order of `rank` (the lowest first).
    pub const fn shrinking(header: &'static str, min: usize, rank: u8) -> Column {
        Column {
            header,
            shrinks: true,
            min,
            right: false,
            rank,
        }
    }

    /// A column of numbers, aligned right.
    pub const fn number(header: &'static str) -> Column {
        Column {
            header,
            shrinks: false,
            min: 0,
            right: true,
            rank: 0,
        }
    }
}

/// `text` cut to at most `max` characters, its last one `…` when cut.
pub fn ellipsize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// `line` broken at spaces into lines of at most `width` characters, the
/// later ones indented by `indent` spaces; a word longer than a line (a
/// path) stands on a line of its own, whole.
pub fn wrap(line: &str, width: usize, indent: usize) -> Vec<String> {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let mut lines = Vec::new();
    let mut current = " ".repeat(lead);
    let mut has_word = false;
    for word in line[lead..].split(' ').filter(|w| !w.is_empty()) {
        if has_word && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut current));
            current = " ".repeat(indent);
            has_word = false;
        }
        if has_word {
            current.push(' ');
        }
        current.push_str(word);
        has_word = true;
    }
    lines.push(current);
    lines
}

/// The table: a header row, then `rows`, each line starting with
/// `indent` spaces; within `width` characters when one is given (as far as
/// the shrinking columns allow).
pub fn render(
    columns: &[Column],
    rows: &[Vec<String>],
    indent: usize,
    width: Option<usize>,
) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|c| c.header.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    if let Some(limit) = width {
        let total = |widths: &[usize]| {
            indent + widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)
        };
        // The shrinking columns give way in the order of their rank.
        let mut order: Vec<usize> = (0..columns.len()).filter(|i| columns[*i].shrinks).collect();
        order.sort_by_key(|i| columns[*i].rank);
        for index in order {
            let over = total(&widths).saturating_sub(limit);
            let room = widths[index].saturating_sub(columns[index].min.max(1));
            widths[index] -= over.min(room);
        }
    }
    let mut text = String::new();
    let header: Vec<String> = columns.iter().map(|c| c.header.to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let start = text.len();
        text.extend(std::iter::repeat_n(' ', indent));
        for (index, (column, width)) in columns.iter().zip(&widths).enumerate() {
            if index > 0 {
                text.push_str("  ");
            }
            let cell = ellipsize(row.get(index).map_or("", String::as_str), *width);
            let pad = width - cell.chars().count();
            if column.right {
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(&cell);
            } else {
                text.push_str(&cell);
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let kept = text[start..].trim_end().len();
        text.truncate(start + kept);
        text.push('\n');
    }
    text
}

/// `1234` → `1.2k`, `2500000` → `2.5M`.
pub fn human(count: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "one decimal of a display value")]
    let value = count as f64;
    if count >= 1_000_000 {
        format!("{:.1}M", value / 1e6)
    } else if count >= 1_000 {
        format!("{:.1}k", value / 1e3)
    } else {
        count.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_cut_with_an_ellipsis() {
        assert_eq!(
            ellipsize("antigravity-worker-reverify-r2", 12),
            "antigravity…"
        );
        assert_eq!(ellipsize("short", 12), "short");
        assert_eq!(ellipsize("ab", 1), "…");
    }

    #[test]
    fn long_lines_wrap_and_paths_stand_whole() {
        let path = format!("/tmp/{}/x.status.json", "a".repeat(90));
        let line = format!("  attention: codex-worker exited: sidecar `{path}` is a FIFO");
        let wrapped = wrap(&line, 40, 4);
        assert_eq!(wrapped[0], "  attention: codex-worker exited:");
        assert_eq!(wrapped[1], "    sidecar");
        assert_eq!(wrapped[2], format!("    `{path}`"));
        assert_eq!(wrapped[3], "    is a FIFO");
        assert_eq!(wrap("short", 40, 4), ["short"]);
    }

    #[test]
    fn a_table_fits_its_width_by_cutting_the_shrinking_columns() {
        let columns = [
            Column::shrinking("NAME", 8, 0),
            Column::fixed("STATE"),
            Column::number("N"),
            Column::shrinking("LAST", 4, 1),
        ];
        let rows = vec![
            vec![
                "antigravity-worker-reverify-r2".into(),
                "running".into(),
                "7".into(),
                "reconnecting (network) after a long silence".into(),
            ],
            vec!["w".into(), "done".into(), "12".into(), String::new()],
        ];
        let text = render(&columns, &rows, 2, Some(40));
        for line in text.lines() {
            assert!(
                line.chars().count() <= 40,
                "{line:?} ({})",
                line.chars().count()
            );
            assert_eq!(line, line.trim_end());
        }
        assert_eq!(text.lines().nth(2).unwrap(), "  w         done     12");
        // NAME gave way first (rank 0), to its minimum, then LAST.
        assert!(text.contains("  antigra…  running"), "{text}");
        // Without a width nothing is cut.
        let wide = render(&columns, &rows, 0, None);
        assert!(wide.contains("antigravity-worker-reverify-r2"));
    }
}
