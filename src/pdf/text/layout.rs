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
//! Bounds: a frame with more than `MAX_SEGMENTS` segments keeps content order; one with more
//! than `MAX_SORTED_BLOCKS` blocks keeps them top to bottom (the sort is cubic in blocks, a
//! bit set per block keeps it to a few hundred million word operations at most).

use std::ops::Range;

use super::SPACE_EM;

/// A gap between two runs on one line wider than this many ems parts the line into segments
/// (table cells, columns): pdftotext's widest word gap (`maxWordSpacing`) is 1.5 em, its
/// narrowest gap between columns (`minColSpacing1`) 0.7 em.
const COLUMN_GAP_EM: f64 = 1.0;

/// The farthest apart, in ems of the block, two lines of one block may be: pdftotext's
/// `maxLineSpacingDelta`.
const LINE_SPACING_EM: f64 = 1.5;

/// A gap between two runs of a line that were not shown one right after the other wider than
/// this fraction of the font size is a space: pdftotext parts such words at its
/// `maxCharSpacing` (LilyPond's lyric hyphens stand 0.06 em after their syllables).
const APART_SPACE_EM: f64 = 0.03;

/// How far a run's baseline may be from its line's main baseline, in ems of the larger
/// (pdftotext's `maxIntraLineDelta`): super- and subscripts sit within it.
const INTRA_LINE_EM: f64 = 0.5;

/// How much the font size of a line may differ from its block's, as a fraction of the
/// block's.
const BLOCK_SIZE_DELTA: f64 = 0.2;

/// How close, in ems, a segment on a block's last line must come to the block's earlier lines
/// to join that line (pdftotext's `minColSpacing1`).
const SAME_LINE_SLACK_EM: f64 = 0.7;

/// Segments above which a frame keeps content order: forming blocks compares each segment
/// with the blocks still open above it.
const MAX_SEGMENTS: usize = 20_000;

/// Blocks above which a frame's blocks keep their top-to-bottom order instead of the sort.
const MAX_SORTED_BLOCKS: usize = 2_000;

/// Open blocks a segment is compared with (the most recent ones).
const MAX_OPEN_BLOCKS: usize = 512;

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

/// Segments (in line order, each line's in order along it) into blocks, in the order their
/// first lines come.
fn form_blocks(segments: &[Segment]) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for (index, segment) in segments.iter().enumerate() {
        open.retain(|&b| {
            let block = &blocks[b];
            block.last_line == segment.line || segment.base - block.last_base <= LINE_SPACING_EM * block.size
        });
        let recent = &open[open.len().saturating_sub(MAX_OPEN_BLOCKS)..];
        let similar = |block: &Block, delta: f64| (segment.size - block.size).abs() < delta * block.size;
        // A segment on a block's last line, within the block's earlier lines.
        let same_line = recent.iter().copied().find(|&b| {
            let block = &blocks[b];
            let slack = SAME_LINE_SLACK_EM * segment.size;
            block.last_line == segment.line
                && block.earlier.is_some_and(|(start, end)| segment.start < end + slack && segment.end > start - slack)
                && similar(block, 0.6)
        });
        if let Some(b) = same_line {
            let block = &mut blocks[b];
            if let Some(line) = block.lines.last_mut() {
                line.push(index);
            }
            block.start = block.start.min(segment.start);
            block.end = block.end.max(segment.end);
            block.top = block.top.min(segment.base - segment.size);
            block.bottom = block.bottom.max(segment.base);
            continue;
        }
        let overlap = |block: &Block| segment.end.min(block.end) - segment.start.max(block.start);
        let below = recent
            .iter()
            .copied()
            .filter(|&b| {
                let block = &blocks[b];
                block.last_line < segment.line
                    && segment.base - block.last_base <= LINE_SPACING_EM * block.size
                    && similar(block, BLOCK_SIZE_DELTA)
                    && overlap(block) > 0.0
            })
            .max_by(|&a, &b| overlap(&blocks[a]).total_cmp(&overlap(&blocks[b])));
        if let Some(b) = below {
            let block = &mut blocks[b];
            block.earlier = Some((block.start, block.end));
            block.lines.push(vec![index]);
            block.start = block.start.min(segment.start);
            block.end = block.end.max(segment.end);
            block.bottom = block.bottom.max(segment.base);
            block.last_base = segment.base;
            block.last_line = segment.line;
            continue;
        }
        open.push(blocks.len());
        blocks.push(Block {
            lines: vec![vec![index]],
            start: segment.start,
            end: segment.end,
            earlier: None,
            top: segment.base - segment.size,
            bottom: segment.base,
            last_base: segment.base,
            last_line: segment.line,
            size: segment.size,
        });
    }
    blocks
}

/// Rounds of [`merge_interleaved`]: each round merges every pair it finds, so a few suffice.
const MAX_MERGE_ROUNDS: usize = 8;

/// Merges blocks that share lines and overlap along them (within `SAME_LINE_SLACK_EM`), line
/// by line: a table of contents whose numbers and titles stand apart everywhere but where a
/// chapter's outdented number lets its title start under the section numbers is one block, as
/// pdftotext's blocks grow to take in every word that comes that close.
fn merge_interleaved(mut blocks: Vec<Block>, segments: &[Segment]) -> Vec<Block> {
    let first_line = |block: &Block| block.lines.first().and_then(|line| line.first()).map_or(0, |&s| segments[s].line);
    for _ in 0..MAX_MERGE_ROUNDS {
        let mut merged = false;
        let mut index = 0;
        while index < blocks.len() {
            let mut other = index + 1;
            while other < blocks.len() {
                let (a, b) = (&blocks[index], &blocks[other]);
                let slack = SAME_LINE_SLACK_EM * a.size.min(b.size);
                let share_lines = first_line(a) <= b.last_line && first_line(b) <= a.last_line;
                if share_lines && a.start < b.end + slack && b.start < a.end + slack {
                    let absorbed = blocks.remove(other);
                    join_line_by_line(&mut blocks[index], absorbed, segments);
                    merged = true;
                } else {
                    other += 1;
                }
            }
            index += 1;
        }
        if !merged {
            break;
        }
    }
    blocks
}

/// `absorbed`'s lines into `block`'s, each line's segments in order along it.
fn join_line_by_line(block: &mut Block, absorbed: Block, segments: &[Segment]) {
    let mut all: Vec<usize> = block.lines.drain(..).flatten().chain(absorbed.lines.into_iter().flatten()).collect();
    all.sort_by(|&a, &b| segments[a].line.cmp(&segments[b].line).then(segments[a].start.total_cmp(&segments[b].start)));
    for segment in all {
        match block.lines.last_mut() {
            Some(line) if line.last().is_some_and(|&last| segments[last].line == segments[segment].line) => {
                line.push(segment);
            }
            _ => block.lines.push(vec![segment]),
        }
    }
    block.start = block.start.min(absorbed.start);
    block.end = block.end.max(absorbed.end);
    block.top = block.top.min(absorbed.top);
    block.bottom = block.bottom.max(absorbed.bottom);
    if absorbed.last_line > block.last_line {
        (block.last_line, block.last_base) = (absorbed.last_line, absorbed.last_base);
    }
}

/// A block's box as the sort sees it: along the line widened (see the module docs), and
/// across it.
#[derive(Clone, Copy)]
struct SortBox {
    start: f64,
    end: f64,
    top: f64,
}

/// Rule 1: `a` and `b` overlap along the line and `a` starts above `b`.
fn is_before_by_rule_1(a: &SortBox, b: &SortBox) -> bool {
    a.start <= b.end && b.start <= a.end && a.top < b.top
}

/// Rule 2 without its condition: `a` ends before `b` starts along the line.
fn is_before_by_rule_2(a: &SortBox, b: &SortBox) -> bool {
    a.end <= b.start
}

/// The blocks' reading order: poppler's depth-first topological sort (`visitDepthFirst`)
/// by the two rules, with the search for an intervening block done on bit sets.
fn reading_order(blocks: &[Block]) -> Vec<usize> {
    let count = blocks.len();
    let tables = tables(blocks);
    let boxes = widened(blocks, &tables);
    let words = count.div_ceil(64);
    // after[a] has b when a is before b by rule 1; before[b] has a then.
    let mut after = vec![0u64; count * words];
    let mut before = vec![0u64; count * words];
    for (a, a_box) in boxes.iter().enumerate() {
        for (b, b_box) in boxes.iter().enumerate() {
            if is_before_by_rule_1(a_box, b_box) {
                after[a * words + b / 64] |= 1 << (b % 64);
                before[b * words + a / 64] |= 1 << (a % 64);
            }
        }
    }
    let is_before = |a: usize, b: usize| {
        if tables[a].is_some() && tables[a] == tables[b] {
            // Cells of one table read row by row: a cell comes after those left of it on its
            // row and those wholly above it.
            let (a, b) = (&blocks[a], &blocks[b]);
            return (a.end <= b.start && a.top <= b.bottom && a.bottom >= b.top) || a.bottom <= b.top;
        }
        if after[a * words + b / 64] & (1 << (b % 64)) != 0 {
            return true;
        }
        // Rule 2 holds unless some c comes after b and before a by rule 1.
        is_before_by_rule_2(&boxes[a], &boxes[b])
            && !after[b * words..(b + 1) * words]
                .iter()
                .zip(&before[a * words..(a + 1) * words])
                .any(|(x, y)| x & y != 0)
    };
    let mut visited = vec![false; count];
    let mut order = Vec::with_capacity(count);
    // (block, the next candidate to look at): an explicit stack, as the chains can be long.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for first in 0..count {
        if visited[first] {
            continue;
        }
        visited[first] = true;
        stack.push((first, 0));
        while let Some(top) = stack.last_mut() {
            let block = top.0;
            let candidate = (top.1..count).find(|&other| !visited[other] && is_before(other, block));
            match candidate {
                Some(other) => {
                    top.1 = other + 1;
                    visited[other] = true;
                    stack.push((other, 0));
                }
                None => {
                    order.push(block);
                    stack.pop();
                }
            }
        }
    }
    order
}

/// Each block's box as the sort sees it: a table's cells all take the table's box (so the
/// table sorts as one among other blocks); any other block widens along the line to the
/// widest block below it that no block beside it (overlapping it across the line) is in the
/// way of, as poppler widens its blocks.
fn widened(blocks: &[Block], tables: &[Option<usize>]) -> Vec<SortBox> {
    let mut envelopes: Vec<SortBox> = Vec::new();
    for (block, table) in blocks.iter().zip(tables) {
        let Some(table) = *table else { continue };
        if envelopes.len() <= table {
            envelopes.resize(table + 1, SortBox { start: f64::INFINITY, end: f64::NEG_INFINITY, top: f64::INFINITY });
        }
        let envelope = &mut envelopes[table];
        envelope.start = envelope.start.min(block.start);
        envelope.end = envelope.end.max(block.end);
        envelope.top = envelope.top.min(block.top);
    }
    blocks
        .iter()
        .enumerate()
        .map(|(index, block)| {
            if let Some(table) = tables[index] {
                return envelopes[table];
            }
            let (mut limit_start, mut limit_end) = (f64::NEG_INFINITY, f64::INFINITY);
            for (other_index, other) in blocks.iter().enumerate() {
                if other_index != index && overlap_across(block, other) {
                    if other.start > block.end {
                        limit_end = limit_end.min(other.start);
                    }
                    if other.end < block.start {
                        limit_start = limit_start.max(other.end);
                    }
                }
            }
            let (mut start, mut end) = (block.start, block.end);
            for (other_index, other) in blocks.iter().enumerate() {
                if other_index != index && other.top >= block.bottom {
                    if other.end > end && other.end <= limit_end {
                        end = other.end;
                    }
                    if other.start < start && other.start >= limit_start {
                        start = other.start;
                    }
                }
            }
            SortBox { start, end, top: block.top }
        })
        .collect()
}

/// Whether `a` and `b` share some height across the line.
fn overlap_across(a: &Block, b: &Block) -> bool {
    a.top <= b.bottom && a.bottom >= b.top
}

/// Whether `a` and `b` share some extent along the line.
fn overlap_along(a: &Block, b: &Block) -> bool {
    a.start <= b.end && a.end >= b.start
}

/// Which table each block is a cell of, found as poppler finds tables: a block, its nearest
/// neighbour to the right on its lines, its nearest below, and the nearest below and to the
/// right, aligned in both directions (centred, left or right along the line; centred, top or
/// bottom across it), are four cells of one table.
fn tables(blocks: &[Block]) -> Vec<Option<usize>> {
    let mut tables: Vec<Option<usize>> = vec![None; blocks.len()];
    let mut count = 0;
    for (index, block) in blocks.iter().enumerate() {
        let (mut right, mut below, mut diagonal) = (None, None, None);
        let (mut right_start, mut below_top) = (f64::INFINITY, f64::INFINITY);
        let (mut diagonal_start, mut diagonal_top) = (f64::INFINITY, f64::INFINITY);
        for (other_index, other) in blocks.iter().enumerate() {
            if other_index == index {
                continue;
            }
            if overlap_across(block, other) && other.start > block.end && other.start < right_start {
                right_start = other.start;
                right = Some(other_index);
            } else if overlap_along(block, other) && other.top > block.bottom && other.top < below_top {
                below_top = other.top;
                below = Some(other_index);
            } else if other.start > block.end
                && other.start < diagonal_start
                && other.top > block.bottom
                && other.top < diagonal_top
            {
                (diagonal_start, diagonal_top) = (other.start, other.top);
                diagonal = Some(other_index);
            }
        }
        let (Some(right), Some(below), Some(diagonal)) = (right, below, diagonal) else { continue };
        let (b2, b3, b4) = (&blocks[right], &blocks[below], &blocks[diagonal]);
        if overlap_along(b3, b4)
            || overlap_across(b2, b4)
            || overlap_along(b2, b3)
            || overlap_across(b2, b3)
            || !overlap_along(b4, b2)
            || !overlap_across(b4, b3)
        {
            continue;
        }
        let size = block.size.min(b2.size).min(b3.size).min(b4.size);
        let (slack_along, slack_across) = (SAME_LINE_SLACK_EM * size, INTRA_LINE_EM * size);
        let near = |a: f64, b: f64, slack: f64| (a - b).abs() <= slack;
        let centre_along = |b: &Block| (b.start + b.end) / 2.0;
        let centre_across = |b: &Block| (b.top + b.bottom) / 2.0;
        let aligned_along = (near(centre_along(block), centre_along(b3), slack_along)
            && near(centre_along(b2), centre_along(b4), slack_along))
            || (near(block.start, b3.start, slack_along) && near(b2.start, b4.start, slack_along))
            || (near(block.end, b3.end, slack_along) && near(b2.end, b4.end, slack_along));
        let aligned_across = (near(centre_across(block), centre_across(b2), slack_across)
            && near(centre_across(b3), centre_across(b4), slack_across))
            || (near(block.top, b2.top, slack_across) && near(b3.top, b4.top, slack_across))
            || (near(block.bottom, b2.bottom, slack_across) && near(b3.bottom, b4.bottom, slack_across));
        if aligned_along && aligned_across {
            let cells = [index, right, below, diagonal];
            let table = cells.iter().filter_map(|&cell| tables[cell]).max().unwrap_or_else(|| {
                count += 1;
                count - 1
            });
            for cell in cells {
                tables[cell] = Some(table);
            }
        }
    }
    tables
}
