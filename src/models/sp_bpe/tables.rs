//! The tables of the fast path, built once at load from the pieces.
//!
//! The merge of `sentencepiece` (see the parent module) only ever makes
//! pieces: two neighbours join when their concatenation is a piece. So
//!
//! - every symbol is a piece or a single character, and the merges it can
//!   take part in are the splits of pieces in two such parts (`pairs`);
//! - no symbol ever spans two neighbouring characters `x y` that are not
//!   next to each other in any piece (`joins`): the text can be cut there,
//!   and both sides merge independently (each side's merges are a
//!   subsequence of the whole text's, in the same order, since the global
//!   choice, highest score then leftmost, is also the best on its side).
//!
//! With Llama-2's vocabulary no piece has `▁` after another character and
//! almost no CJK character sits in a longer piece, so the cuts fall before
//! every word and around nearly every CJK character.
//!
//! Characters are keyed by *code*: the scalar value, except that `▁`
//! (U+2581) and the space both have code 0x20 (the normalizer writes every
//! space as `▁`; a piece with a real space can never match and is left out).

use super::PieceType;
use rustc_hash::{FxHashMap, FxHashSet};

/// The code of `▁` (and of the space the normalizer escapes to it).
pub(super) const SPACE_CODE: u32 = 0x20;
const SPACE_SYMBOL: char = '\u{2581}';

/// `CharInfo` bits: the character is followed by another in some piece.
pub(super) const JOINS_RIGHT: u32 = 1 << 31;
/// The character follows another in some piece.
pub(super) const JOINS_LEFT: u32 = 1 << 30;
/// The character is in some piece (so 0 means in none).
const PRESENT: u32 = 1 << 29;
const SYM_MASK: u32 = (1 << 24) - 1;
/// The symbol of a character that is in no piece: it never merges.
pub(super) const INERT: u32 = SYM_MASK;

/// A merge: the rank of the piece's score (0 = highest) and its id.
#[derive(Clone, Copy)]
pub(super) struct Merge {
    pub rank: u32,
    pub id: u32,
}

pub(super) struct Tables {
    /// info (`PRESENT` | `JOINS_*` bits | symbol) of every BMP code; 0 = in no piece
    bmp: Box<[u32]>,
    astral: FxHashMap<u32, u32>,
    /// `ascii_joins[x] >> y & 1`: `x y` are neighbours in some piece
    ascii_joins: [u128; 128],
    /// `ascii_cuts[x << 7 | y]`: 1 if `x y` are neighbours in no piece
    /// (the text can be cut between them), one byte each for a
    /// branch-free scan of ASCII runs
    ascii_cuts: Box<[u8]>,
    /// `x << 32 | y` for the other neighbouring codes
    joins: FxHashSet<u64>,
    /// `left << 32 | right` symbols -> the piece they make
    pairs: FxHashMap<u64, Merge>,
    /// ids below this are pieces; the others stand for a character that
    /// is only part of pieces (`INERT` for one in none)
    pub vocab_len: u32,
}

fn code_of(c: char) -> u32 {
    if c == SPACE_SYMBOL {
        SPACE_CODE
    } else {
        c as u32
    }
}

/// The ranks of the scores, highest first; equal scores share a rank,
/// as `sentencepiece` breaks their ties by position only.
fn score_ranks(scores: &[f32]) -> Vec<u32> {
    let mut distinct: Vec<f32> = scores.to_vec();
    distinct.sort_by(|a, b| b.total_cmp(a));
    distinct.dedup();
    scores
        .iter()
        .map(|s| distinct.partition_point(|d| d.total_cmp(s).is_gt()) as u32)
        .collect()
}

impl Tables {
    /// The tables for `pieces` (normal pieces only: the caller declines
    /// user-defined and unused ones), or None if they do not fit.
    pub fn build(pieces: &[(String, f64)], types: &[PieceType]) -> Option<Tables> {
        let mergeable: Vec<(u32, &str)> = pieces
            .iter()
            .zip(types)
            .enumerate()
            .filter(|(_, ((p, _), t))| **t == PieceType::Normal && !p.contains(' '))
            .map(|(i, ((p, _), _))| (i as u32, p.as_str()))
            .collect();
        let scores: Vec<f32> = mergeable.iter().map(|&(i, _)| pieces[i as usize].1 as f32).collect();
        let ranks = score_ranks(&scores);
        let vocab_len = pieces.len() as u32;
        let mut t = Tables {
            bmp: vec![0u32; 1 << 16].into_boxed_slice(),
            astral: FxHashMap::default(),
            ascii_joins: [0; 128],
            ascii_cuts: Box::default(),
            joins: FxHashSet::default(),
            pairs: FxHashMap::default(),
            vocab_len,
        };
        let ids: FxHashMap<&str, u32> = mergeable.iter().map(|&(i, p)| (p, i)).collect();
        t.assign_symbols(&mergeable, &ids)?;
        for (k, &(id, p)) in mergeable.iter().enumerate() {
            t.add_joins(p);
            t.add_splits(p, &ids, Merge { rank: ranks[k], id });
        }
        t.ascii_cuts = (0..128 * 128)
            .map(|xy| !t.ascii_joined(xy >> 7, xy & 127) as u8)
            .collect();
        Some(t)
    }

    /// Give every character of a piece its symbol: its own piece, or a
    /// fresh one past the vocabulary.
    fn assign_symbols(&mut self, mergeable: &[(u32, &str)], ids: &FxHashMap<&str, u32>) -> Option<()> {
        let mut next = self.vocab_len;
        for &(_, p) in mergeable {
            for c in p.chars() {
                if self.info(code_of(c)) & SYM_MASK != INERT {
                    continue;
                }
                let sym = match ids.get(c.encode_utf8(&mut [0; 4]) as &str) {
                    Some(&id) => id,
                    None => {
                        next += 1;
                        next - 1
                    }
                };
                if sym >= INERT {
                    return None;
                }
                self.set_info(code_of(c), sym | PRESENT);
            }
        }
        Some(())
    }

    fn add_joins(&mut self, p: &str) {
        let codes: Vec<u32> = p.chars().map(code_of).collect();
        for w in codes.windows(2) {
            let (x, y) = (w[0], w[1]);
            // (one at a time: `x` and `y` may be the same character)
            self.set_info(x, self.info(x) | JOINS_RIGHT);
            self.set_info(y, self.info(y) | JOINS_LEFT);
            if x < 128 && y < 128 {
                self.ascii_joins[x as usize] |= 1u128 << y;
            } else {
                self.joins.insert((x as u64) << 32 | y as u64);
            }
        }
    }

    /// Every way `p` is made of two symbols.
    fn add_splits(&mut self, p: &str, ids: &FxHashMap<&str, u32>, merge: Merge) {
        for (cut, _) in p.char_indices().skip(1) {
            let (a, b) = p.split_at(cut);
            if let (Some(x), Some(y)) = (self.symbol(a, ids), self.symbol(b, ids)) {
                self.pairs.insert((x as u64) << 32 | y as u64, merge);
            }
        }
    }

    fn symbol(&self, s: &str, ids: &FxHashMap<&str, u32>) -> Option<u32> {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Some(self.info(code_of(c)) & SYM_MASK),
            _ => ids.get(s).copied(),
        }
    }

    fn set_info(&mut self, code: u32, info: u32) {
        if code < 1 << 16 {
            self.bmp[code as usize] = info;
        } else {
            self.astral.insert(code, info);
        }
    }

    /// `JOINS_*` bits | symbol (`INERT` for a character in no piece).
    #[inline(always)]
    pub fn info(&self, code: u32) -> u32 {
        let raw = match self.bmp.get(code as usize) {
            Some(&i) => i,
            None => self.astral.get(&code).copied().unwrap_or(0),
        };
        if raw & PRESENT == 0 {
            INERT
        } else {
            raw
        }
    }

    /// Is the character `code` beside another in some piece?
    pub fn joins_any(&self, code: u32) -> bool {
        self.info(code) & (JOINS_LEFT | JOINS_RIGHT) != 0
    }

    /// May the characters `x` then `y` end up in one symbol?
    #[inline(always)]
    pub fn joined(&self, x: u32, ix: u32, y: u32, iy: u32) -> bool {
        if ix & JOINS_RIGHT == 0 || iy & JOINS_LEFT == 0 {
            return false;
        }
        if x < 128 && y < 128 {
            return self.ascii_joins[x as usize] >> y & 1 != 0;
        }
        self.joins.contains(&((x as u64) << 32 | y as u64))
    }

    /// `joined` for two ASCII characters.
    #[inline(always)]
    pub fn ascii_joined(&self, x: u32, y: u32) -> bool {
        self.ascii_joins[x as usize & 127] >> (y & 127) & 1 != 0
    }

    /// Where `run` (ASCII bytes, after the character `prev` < 128) may be
    /// cut: bit `i` set if no symbol can span `run[i - 1]` (`prev` for
    /// `i == 0`) and `run[i]`.
    #[inline(always)]
    pub fn ascii_cut_mask(&self, prev: u32, run: &[u8]) -> u64 {
        debug_assert!(run.len() <= 64 && prev < 128);
        let mut mask = 0u64;
        let mut x = prev as usize;
        for (i, &y) in run.iter().enumerate() {
            let y = y as usize & 127;
            mask |= (self.ascii_cuts[x << 7 | y] as u64) << i;
            x = y;
        }
        mask
    }

    /// The piece `left` and `right` make, if any.
    #[inline]
    pub fn merge(&self, left: u32, right: u32) -> Option<Merge> {
        self.pairs.get(&((left as u64) << 32 | right as u64)).copied()
    }
}

/// The symbol part of an info word.
#[inline(always)]
pub(super) fn symbol_of(info: u32) -> u32 {
    info & SYM_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_scores_share_a_rank() {
        assert_eq!(score_ranks(&[-1.0, -3.0, -1.0, 0.5]), [1, 2, 1, 0]);
    }
}
