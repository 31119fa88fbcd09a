//! Step 4 of the layout, block order: a topological sort of a frame's blocks by T. M.
//! Breuel's two rules, as poppler's `pdftotext` sorts, on boxes widened first: each block to
//! the widest block below it that no neighbour on its lines is in the way of, and the cells of
//! a table (four aligned neighbours) to the table's box, reading row by row among themselves.

use super::{Block, INTRA_LINE_EM, SAME_LINE_SLACK_EM};

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
///
/// Kept whole: it follows poppler's `visitDepthFirst` step for step, which is how it can be checked
/// against poppler.
pub(super) fn reading_order(blocks: &[Block]) -> Vec<usize> {
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
///
/// Kept whole: it follows poppler's table search step for step (the four cells, then their
/// alignment), which is how it can be checked against poppler.
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
