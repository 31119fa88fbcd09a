//! Reading order: one page's positioned strings (`Run`s, in the order the content stream
//! showed them) into its text.
//!
//! Runs are grouped by direction: the four upright ones (left to right, bottom to top, upside
//! down, top to bottom) are each laid out in their own frame, where "along" is the writing
//! direction and "down" the direction the next line goes; diagonal runs keep content order.
//! In a frame:
//!
//! 1. **lines**: runs whose baselines lie within half an em of the line's main baseline (that
//!    of its largest run), sorted along it; a smaller run (a super- or subscript) next to a
//!    run of a neighbouring line, within half that line's em, joins it;
//! 2. **segments**: a line parts where the gap between two runs is wider than `COLUMN_GAP_EM`
//!    (columns, table cells); runs within a segment are parted by a space when the gap between
//!    them is wider than [`super::SPACE_EM`] of an em, as in content order;
//! 3. **blocks**: a segment joins the block whose last line is at most `LINE_SPACING_EM` above
//!    it, of a similar size, and overlaps it along the line (the most, when several do); a
//!    segment on the block's last line joins that line when it lies within the block's earlier
//!    lines (a justified line's wide gap); then blocks that share lines and overlap along them
//!    merge, line by line, as pdftotext's blocks grow;
//! 4. **block order**: a topological sort by T. M. Breuel's two rules ("High Performance
//!    Document Layout Analysis", 2003), as poppler's `pdftotext` sorts: `a` comes before `b`
//!    when (1) they overlap along the line and `a` starts above `b`, or (2) `a` ends before
//!    `b` starts along the line and no block `c` lies below `b` and above `a` overlapping
//!    both (by rule 1). Each block first widens to the widest block below it that no
//!    neighbour on the same lines is in the way of, and blocks found to be the cells of a
//!    table (four aligned neighbours, as poppler finds them) take the table's box and read
//!    row by row among themselves, as poppler's do.
//!
//! Steps 1 and 2, and writing the text, are here; step 3 is `blocks`, step 4 `order`.
//!
//! Bounds: a frame with more than `MAX_SEGMENTS` segments keeps content order; one with more
//! than `MAX_SORTED_BLOCKS` blocks keeps them top to bottom (the sort is cubic in blocks, a
//! bit set per block keeps it to a few hundred million word operations at most).

use std::ops::Range;

use super::SPACE_EM;

mod blocks;
mod order;

use blocks::{form_blocks, merge_interleaved};
use order::reading_order;

/// A gap between two runs on one line wider than this many ems parts the line into segments
/// (table cells, columns): pdftotext's widest word gap (`maxWordSpacing`) is 1.5 em, its
/// narrowest gap between columns (`minColSpacing1`) 0.7 em.
const COLUMN_GAP_EM: f64 = 1.0;

/// A gap between two runs of a line that were not shown one right after the other wider than
/// this fraction of the font size is a space: pdftotext parts such words at its
/// `maxCharSpacing` (LilyPond's lyric hyphens stand 0.06 em after their syllables).
const APART_SPACE_EM: f64 = 0.03;

/// How far a run's baseline may be from its line's main baseline, in ems of the larger
/// (pdftotext's `maxIntraLineDelta`): super- and subscripts sit within it.
const INTRA_LINE_EM: f64 = 0.5;

/// How close, in ems, a segment on a block's last line must come to the block's earlier lines
/// to join that line (pdftotext's `minColSpacing1`).
const SAME_LINE_SLACK_EM: f64 = 0.7;

/// Segments above which a frame keeps content order: forming blocks compares each segment
/// with the blocks still open above it.
const MAX_SEGMENTS: usize = 20_000;

/// Blocks above which a frame's blocks keep their top-to-bottom order instead of the sort.
const MAX_SORTED_BLOCKS: usize = 2_000;

/// One string shown on the page: where it starts and ends on the page (device space), the
/// direction of its baseline, its font size there, and its characters (a range of the page's
/// text buffer).
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub(super) start: (f64, f64),
    pub(super) end: (f64, f64),
    /// A unit vector along the baseline.
    pub(super) direction: (f64, f64),
    pub(super) size: f64,
    pub(super) text: Range<usize>,
}

impl Run {
    /// Whether `next`, shown right after `self`, continues it on the same baseline with no
    /// gap, so the two can be one run (words placed glyph by glyph).
    pub(super) fn is_continued_by(&self, next: &Self) -> bool {
        let em = self.size.max(next.size);
        let (along, across) = offset(self.end, next.start, next.direction);
        self.text.end == next.text.start
            && (self.direction.0 - next.direction.0).abs() < 1e-6
            && (self.direction.1 - next.direction.1).abs() < 1e-6
            && (self.size - next.size).abs() <= 0.01 * em
            && across.abs() <= 0.01 * em
            && (-0.01 * em..=SPACE_EM * em).contains(&along)
    }

    /// `self` followed by `next` (see [`Self::is_continued_by`]).
    pub(super) fn continue_with(&mut self, next: &Self) {
        self.end = next.end;
        self.text.end = next.text.end;
        self.size = self.size.max(next.size);
    }
}

/// `to - from` along and across `direction`.
fn offset(from: (f64, f64), to: (f64, f64), (dx, dy): (f64, f64)) -> (f64, f64) {
    let (gap_x, gap_y) = (to.0 - from.0, to.1 - from.1);
    (gap_x * dx + gap_y * dy, gap_x * dy - gap_y * dx)
}

/// Text in content order: a line break where a run's baseline is elsewhere than where the
/// last one ended, a space where it starts more than [`SPACE_EM`] of an em after it (or far
/// before it).
#[derive(Default)]
pub(super) struct ContentOrder {
    pub(super) out: String,
    last: Option<((f64, f64), f64)>,
}

impl ContentOrder {
    pub(super) fn push(&mut self, run: &Run, text: &str) {
        if let Some((last_end, last_size)) = self.last {
            let (along, across) = offset(last_end, run.start, run.direction);
            let em = run.size.max(last_size);
            if across.abs() > INTRA_LINE_EM * em {
                line_break(&mut self.out);
            } else if along > SPACE_EM * em || along < -em {
                space(&mut self.out);
            }
        }
        self.out.push_str(text);
        self.last = Some((run.end, run.size));
    }
}

fn line_break(out: &mut String) {
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn space(out: &mut String) {
    if !out.is_empty() && !out.ends_with([' ', '\n']) {
        out.push(' ');
    }
}

/// The page's text in reading order, lines ending in newlines (see the module docs).
pub(super) fn page_text(runs: &[Run], text: &str) -> String {
    // Frames 0 to 3 are the upright directions, 4 the diagonal ones.
    let mut frames: [Vec<usize>; 5] = Default::default();
    for (index, run) in runs.iter().enumerate() {
        if !text[run.text.clone()].trim().is_empty() {
            frames[frame_of(run.direction)].push(index);
        }
    }
    let mut by_size: Vec<usize> = (0..4).collect();
    let weight = |frame: usize| frames[frame].iter().map(|&i| runs[i].text.len()).sum::<usize>();
    by_size.sort_by_key(|&frame| std::cmp::Reverse(weight(frame)));
    let mut out = String::new();
    for frame in by_size {
        if !frames[frame].is_empty() {
            lay_out(runs, &frames[frame], frame, text, &mut out);
        }
    }
    if !frames[4].is_empty() {
        let mut diagonal = ContentOrder::default();
        for &index in &frames[4] {
            diagonal.push(&runs[index], &text[runs[index].text.clone()]);
        }
        push_lines(&mut out, &diagonal.out);
    }
    out
}

/// The upright direction a baseline runs in (0 left to right, 1 bottom to top, 2 right to
/// left, 3 top to bottom), or 4 when it is diagonal (more than a tenth off, as pdftotext
/// counts).
fn frame_of((dx, dy): (f64, f64)) -> usize {
    if dy.abs() <= 0.1 * dx.abs() {
        if dx >= 0.0 { 0 } else { 2 }
    } else if dx.abs() <= 0.1 * dy.abs() {
        if dy >= 0.0 { 1 } else { 3 }
    } else {
        4
    }
}

/// Appends `lines` to `out` on a line of their own.
fn push_lines(out: &mut String, lines: &str) {
    let lines = lines.trim_end();
    if lines.is_empty() {
        return;
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(lines);
    out.push('\n');
}

/// A run in its frame: from `start` to `end` along the line, its baseline at `base` (growing
/// downwards, line by line).
#[derive(Clone, Copy)]
struct Placed {
    start: f64,
    end: f64,
    base: f64,
    size: f64,
    run: usize,
}

/// Part of a line between two wide gaps: `placed[runs]`, in order along the line.
struct Segment {
    runs: Range<usize>,
    start: f64,
    end: f64,
    base: f64,
    size: f64,
    line: usize,
}

/// Runs on one baseline, in order along it: `base` and `size` are its largest run's.
struct Line {
    runs: Vec<Placed>,
    base: f64,
    size: f64,
}

/// Runs into lines, top to bottom. A line takes the runs whose baselines are within half an
/// em of the smaller of its size and theirs (so two lines of a column beside a large heading
/// stay two); then a smaller run (a super- or subscript) that a neighbouring line's baseline is
/// within half of that line's em of, and that comes right before or after one of its runs,
/// moves to that line.
fn form_lines(mut placed: Vec<Placed>) -> Vec<Line> {
    placed.sort_by(|a, b| a.base.total_cmp(&b.base).then(a.run.cmp(&b.run)));
    let mut lines: Vec<Line> = Vec::new();
    for current in placed {
        match lines.last_mut() {
            Some(line) if (current.base - line.base).abs() <= INTRA_LINE_EM * current.size.min(line.size) => {
                if current.size > line.size {
                    (line.base, line.size) = (current.base, current.size);
                }
                line.runs.push(current);
            }
            _ => lines.push(Line { runs: vec![current], base: current.base, size: current.size }),
        }
    }
    for line in &mut lines {
        line.runs.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.run.cmp(&b.run)));
    }
    // (from line, run index there, to line)
    let mut moves: Vec<(usize, usize, usize)> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        for (position, current) in line.runs.iter().enumerate() {
            let neighbours = [index.checked_sub(1), Some(index + 1)];
            let target = neighbours.into_iter().flatten().filter(|&other| other < lines.len()).find(|&other| {
                let other_line = &lines[other];
                current.size < other_line.size
                    && (current.base - other_line.base).abs() <= INTRA_LINE_EM * other_line.size
                    && is_next_to(current, &other_line.runs, COLUMN_GAP_EM * other_line.size)
            });
            if let Some(target) = target {
                moves.push((index, position, target));
            }
        }
    }
    if moves.is_empty() {
        return lines;
    }
    let mut moved: Vec<Vec<Placed>> = (0..lines.len()).map(|_| Vec::new()).collect();
    for &(from, position, to) in moves.iter().rev() {
        let run = lines[from].runs.remove(position);
        moved[to].push(run);
    }
    for (line, extra) in lines.iter_mut().zip(moved) {
        if !extra.is_empty() {
            line.runs.extend(extra);
            line.runs.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.run.cmp(&b.run)));
        }
    }
    lines.retain(|line| !line.runs.is_empty());
    lines
}

/// Whether `run` starts or ends within `gap` of one of `runs` (sorted by start).
fn is_next_to(run: &Placed, runs: &[Placed], gap: f64) -> bool {
    let after = runs.partition_point(|other| other.start <= run.start);
    let before_ends_near = after.checked_sub(1).is_some_and(|i| runs[i].end >= run.start - gap);
    let after_starts_near = runs.get(after).is_some_and(|other| other.start <= run.end + gap);
    before_ends_near || after_starts_near
}

/// Lines of segments stacked closely.
struct Block {
    /// Each line's segments, in order along it.
    lines: Vec<Vec<usize>>,
    start: f64,
    end: f64,
    /// Extent along the line of all lines but the last.
    earlier: Option<(f64, f64)>,
    top: f64,
    bottom: f64,
    last_base: f64,
    last_line: usize,
    size: f64,
}

/// Lays out the runs `members` (indices into `runs`) of `frame`, appending their text to `out`.
///
/// Kept whole: one pass places the runs, sorts them into lines and writes each line, and the line
/// being written (its base, its last run, its size) is state every step shares.
fn lay_out(runs: &[Run], members: &[usize], frame: usize, text: &str, out: &mut String) {
    let (along, down) = match frame {
        0 => ((1.0, 0.0), (0.0, -1.0)),
        1 => ((0.0, 1.0), (1.0, 0.0)),
        2 => ((-1.0, 0.0), (0.0, 1.0)),
        _ => ((0.0, -1.0), (-1.0, 0.0)),
    };
    let dot = |(x, y): (f64, f64), (ax, ay): (f64, f64)| x * ax + y * ay;
    let placed: Vec<Placed> = members
        .iter()
        .map(|&index| {
            let run = &runs[index];
            let (a, b) = (dot(run.start, along), dot(run.end, along));
            Placed { start: a.min(b), end: a.max(b), base: dot(run.start, down), size: run.size, run: index }
        })
        .filter(|p| p.start.is_finite() && p.end.is_finite() && p.base.is_finite())
        .collect();

    let lines = form_lines(placed);
    let mut placed: Vec<Placed> = Vec::with_capacity(members.len());
    let mut segments: Vec<Segment> = Vec::new();
    for (line, members) in lines.into_iter().enumerate() {
        for current in members.runs {
            let index = placed.len();
            placed.push(current);
            let new_segment = match segments.last() {
                Some(segment) if segment.line == line => {
                    current.start - segment.end > COLUMN_GAP_EM * current.size.max(segment.size)
                }
                _ => true,
            };
            if new_segment {
                segments.push(Segment {
                    runs: index..index + 1,
                    start: current.start,
                    end: current.end,
                    base: members.base,
                    size: current.size,
                    line,
                });
            } else if let Some(segment) = segments.last_mut() {
                segment.runs.end = index + 1;
                segment.end = segment.end.max(current.end);
                segment.size = segment.size.max(current.size);
            }
        }
    }
    if segments.len() > MAX_SEGMENTS {
        let mut content = ContentOrder::default();
        for &index in members {
            content.push(&runs[index], &text[runs[index].text.clone()]);
        }
        push_lines(out, &content.out);
        return;
    }

    let mut blocks = form_blocks(&segments);
    let order = if blocks.len() > MAX_SORTED_BLOCKS {
        (0..blocks.len()).collect()
    } else {
        blocks = merge_interleaved(blocks, &segments);
        reading_order(&blocks)
    };
    for index in order {
        let mut block_text = String::new();
        for line in &blocks[index].lines {
            line_break(&mut block_text);
            for &segment in line {
                space(&mut block_text);
                write_segment(&segments[segment], &placed, runs, text, &mut block_text);
            }
        }
        push_lines(out, &block_text);
    }
}

/// Appends a segment's runs, parted by a space where the gap says: wider than [`SPACE_EM`] of
/// an em between a run and the one shown right after it, wider than [`APART_SPACE_EM`] between
/// runs shown apart (or in fonts of other sizes), which pdftotext holds for separate words.
fn write_segment(segment: &Segment, placed: &[Placed], runs: &[Run], text: &str, out: &mut String) {
    let mut previous: Option<(f64, f64, usize)> = None;
    for current in &placed[segment.runs.clone()] {
        let run = &runs[current.run];
        if let Some((end, size, before)) = previous {
            let em = size.max(current.size);
            let gap = current.start - end;
            let shown_next = runs[before].text.end == run.text.start && (size - current.size).abs() <= 0.01 * em;
            let threshold = if shown_next { SPACE_EM } else { APART_SPACE_EM };
            if gap > threshold * em || gap < -em {
                space(out);
            }
        }
        out.push_str(&text[run.text.clone()]);
        previous = Some((previous.map_or(current.end, |(end, ..)| end.max(current.end)), current.size, current.run));
    }
}
