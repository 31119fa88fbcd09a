//! Step 3 of the layout, blocks: segments stacked closely, of a similar size and overlapping
//! along the line, form a block; a segment on a block's last line within its earlier lines
//! joins that line; then blocks that share lines and overlap along them merge, line by line.

use super::{Block, SAME_LINE_SLACK_EM, Segment};

/// The farthest apart, in ems of the block, two lines of one block may be: pdftotext's
/// `maxLineSpacingDelta`.
const LINE_SPACING_EM: f64 = 1.5;

/// How much the font size of a line may differ from its block's, as a fraction of the
/// block's.
const BLOCK_SIZE_DELTA: f64 = 0.2;

/// Open blocks a segment is compared with (the most recent ones).
const MAX_OPEN_BLOCKS: usize = 512;

/// Segments (in line order, each line's in order along it) into blocks, in the order their
/// first lines come.
///
/// Kept whole: one pass over the segments, each joining the open block it continues or opening one,
/// with the open blocks as state every step shares.
pub(super) fn form_blocks(segments: &[Segment]) -> Vec<Block> {
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
pub(super) fn merge_interleaved(mut blocks: Vec<Block>, segments: &[Segment]) -> Vec<Block> {
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
